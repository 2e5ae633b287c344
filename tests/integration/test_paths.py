"""A results folder is a plain path end to end: one tiny training run in-process under a name with spaces,
accents and Hydra's special characters."""

from __future__ import annotations

import os

import pytest

from suite.cli import main
from suite.records import read_json
from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test", which TINY names)
from tests.helpers.datagen import write_mnist_format
from tests.helpers.tiny import TINY


@pytest.mark.slow
def test_a_results_folder_with_spaces_accents_and_hydra_characters_is_a_plain_path_end_to_end(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    data = write_mnist_format(tmp_path / "idx")
    results = "résultats [1], a=b {c} 'd'"
    tiny = [*TINY, "budget.kimg=0.032", "budget.eval_points=1", "budget.checkpoint_kimg=0.032"]
    argv = ["run", "--task", "bfashion", "--sampler", "edm", "--results", results, f"task.root={data}", *tiny]
    assert main(argv) == 0, capsys.readouterr()
    (folder,) = (tmp_path / results).glob("runs/*/edm/seed0")
    assert read_json(folder / "run.json")["status"] == "done"
    assert set(os.listdir(tmp_path)) == {
        "idx",
        results,
    }  # nothing beside it, nothing cut at a special character
    assert main(["table", "--results", results]) == 0
    assert "bfashion" in capsys.readouterr().out
