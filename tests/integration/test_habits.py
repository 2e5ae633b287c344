"""Habits on real launches of the CLI: a run's files are made with the user's umask, and ``suite fid ref``
of a task equals the reference statistics its evaluation cached."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env
from tests.helpers.tiny import TINY

TINY_RUN = [
    *TINY,
    "budget.kimg=0.064",
    "budget.eval_points=1",
]  # one evaluation (rand-test FD, 32 references)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory) -> dict[int, Path]:
    """umask → results folder of one tiny EDM launch on generated IDX data under that umask (022 and 077);
    ``data`` and ``cache`` (its $SUITE_CACHE, where the evaluation cached its reference statistics) too."""
    root = tmp_path_factory.mktemp("tiny-runs")
    data = write_mnist_format(root / "idx")
    found: dict = {"data": data, "cache": root / "cache"}
    for umask in (0o022, 0o077):
        results = root / f"umask{umask:03o}"
        done = subprocess.run(
            cli_command("run", "--task=bfashion", "--sampler=edm", f"--results={results}")
            + [f"task.root={data}", *TINY_RUN],
            env=cli_env(SUITE_CACHE=str(found["cache"])),
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=lambda mask=umask: os.umask(mask),
        )
        assert done.returncode == 0, done.stderr
        found[umask] = results
    return found


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o077, 0o600)])
def test_a_runs_files_are_created_with_the_users_umask(tiny_runs, umask: int, expected: int):
    """A launch under umask 022 leaves every file of the results folder readable by group and others
    (run.json, config.yaml, checkpoints and snapshots are written through a temporary file that ``mkstemp``
    makes 0600), and under umask 077 readable by the owner only."""
    results = tiny_runs[umask]
    files = [p for p in results.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"run.json", "config.yaml", "records.jsonl", "comparison.json"} <= names, names
    assert any(p.parent.name == "checkpoints" for p in files)
    modes = {str(p.relative_to(results)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {oct(expected)}, modes


def test_fid_ref_of_a_task_equals_the_statistics_its_evaluation_cached(tiny_runs, tmp_path, capsys):
    from suite.cli import main
    from tests.helpers import fid_extractor  # noqa: F401  (registers the test extractor "rand-test" with torch-fidelity)

    dest = tmp_path / "bfashion-ref.npz"
    argv = ["fid", "ref", "--data", "bfashion", "--dest", str(dest), "--budget", "smoke"]
    argv += [
        "--feature-extractor",
        "rand-test",
        "--device",
        "cpu",
        f"task.root={tiny_runs['data']}",
        *TINY_RUN,
    ]
    assert main(argv) == 0
    assert "of 32 images of bfashion" in capsys.readouterr().out
    (cached,) = (tiny_runs["cache"] / "fid-stats").glob("*rand-test*.npz")
    with np.load(cached, allow_pickle=False) as theirs, np.load(dest, allow_pickle=False) as ours:
        assert np.array_equal(theirs["mu"], ours["mu"]) and np.array_equal(theirs["sigma"], ours["sigma"])
