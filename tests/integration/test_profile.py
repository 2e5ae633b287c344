"""``suite profile`` reads ``task=``, ``results=`` like their flags (in-process; the profile of ring2d takes
tens of seconds on 2 cores)."""

from __future__ import annotations

from suite.cli import main


def test_task_and_results_overrides_choose_the_task_and_the_folder_of_the_profile(tmp_path, capsys):
    assert main(["profile", "task=ring2d", f"results={tmp_path / 'r'}"]) == 0
    assert "ring2d" in capsys.readouterr().out
    assert (tmp_path / "r" / "profiles" / "ring2d-smoke_profile.csv").is_file()
