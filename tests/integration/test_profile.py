"""``suite profile`` reads ``task=``, ``results=`` like their flags (in-process; the profile of ring2d takes
tens of seconds on 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from suite.cli import main
from suite.measure.profile import write_profile


def test_task_and_results_overrides_choose_the_task_and_the_folder_of_the_profile(tmp_path, capsys):
    assert main(["profile", "task=ring2d", f"results={tmp_path / 'r'}"]) == 0
    assert "ring2d" in capsys.readouterr().out
    assert (tmp_path / "r" / "profiles" / "ring2d-smoke_profile.csv").is_file()


def test_profile_command_on_bfashion(tmp_path: Path, capsys):
    """The real binarized Fashion-MNIST training set (skipped when the files are not on this machine)."""
    try:
        code = write_profile("bfashion", "smoke", out=str(tmp_path))
    except FileNotFoundError as err:
        pytest.skip(f"Fashion-MNIST not available: {err}")
    out = capsys.readouterr().out
    assert code == 0
    assert "peak σ = " in out and "10–90% band per unit ln σ: σ ∈ [" in out
    assert "coordinate-wise bound (2 levels per coordinate)" in out and "memorisation scale" in out
    for suffix in (".csv", ".png", ".pdf"):
        assert (tmp_path / f"bfashion-smoke_profile{suffix}").is_file()
