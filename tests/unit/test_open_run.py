"""``suite.run.evaluation.open_run``, the one opening of a run folder for ``suite eval``, ``suite samples``
and
``suite guidance``: its spec on the asked device, its snapshots (all, or the one at ``kimg``), and one
refusal line naming the valid choices for a folder that is no run, a run without that snapshot, an
unfinished run where a finished one is needed, and a snapshot of another config."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from suite.config import compose_run, config_hash
from suite.records import RunDirectory
from suite.run.evaluation import open_run, snapshot_path


def run_folder(root: Path, snapshots: dict[int, str | None], status: str = "done") -> Path:
    """A bfashion smoke run folder with its config, a ``status`` record and a snapshot per nimg holding
    that config hash (None: the run's own)."""
    cfg = compose_run("bfashion", "edm", "smoke", ["seed=3"])
    folder = root / "run"
    (folder / "snapshots").mkdir(parents=True)
    OmegaConf.save(cfg, folder / "config.yaml")
    RunDirectory(folder).update(status=status)
    for nimg, written_by in snapshots.items():
        torch.save({"config_hash": written_by or config_hash(cfg)}, snapshot_path(folder / "snapshots", nimg))
    return folder


def test_open_run_reads_the_spec_on_the_asked_device_and_every_snapshot_or_the_one_at_kimg(tmp_path):
    folder = run_folder(tmp_path, {800: None, 1600: None})
    opened = open_run(folder, device="cpu")
    assert (opened.spec.task, opened.spec.seed, opened.spec.device) == ("bfashion", 3, "cpu")
    assert sorted(opened.snapshots) == [800, 1600]
    assert list(open_run(folder, kimg=1.6).snapshots) == [1600]


def test_open_run_refuses_a_folder_without_config_a_missing_kimg_and_an_unfinished_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a run directory \\(no config.yaml\\)"):
        open_run(tmp_path)
    folder = run_folder(tmp_path, {800: None, 1600: None}, status="running")
    with pytest.raises(ValueError, match="has no snapshot at kimg 2.4; valid kimg: 0.8, 1.6"):
        open_run(folder, kimg=2.4)
    with pytest.raises(ValueError, match="is 'running'; `suite eval` re-scores finished runs"):
        open_run(folder, finished="`suite eval` re-scores finished runs")
    assert sorted(open_run(folder).snapshots) == [800, 1600]  # suite samples reads a run still training


def test_open_run_refuses_a_run_without_snapshots_and_a_snapshot_of_another_config(tmp_path):
    empty = run_folder(tmp_path / "a", {})
    with pytest.raises(FileNotFoundError, match="holds no network snapshots yet"):
        open_run(empty)
    opened = open_run(run_folder(tmp_path / "b", {800: "another-hash"}))
    with pytest.raises(ValueError, match="snapshot-000000000800.pt belongs to another config than"):
        opened.snapshot(800)
