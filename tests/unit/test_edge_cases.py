"""Edges of the commands around a launch: ``suite table --study`` on a results folder with no records lists
the grid as missing, and a stop request that arrives while a long command line is planned ends the launch
there (exit 130) instead of after planning."""

from __future__ import annotations

import json
import os
import signal

import pytest

from suite.cli import main
from suite.launch.plan import check_runs, plan_runs
from suite.stopping import Interrupted, stop_requests


def test_table_of_a_study_on_an_empty_results_folder_lists_every_run_missing(tmp_path, capsys):
    study = tmp_path / "s.yaml"
    fields = {"name": "s", "budget": "smoke", "seeds": 2, "tasks": ["bfashion"], "samplers": ["edm"]}
    study.write_text(json.dumps(fields))
    (tmp_path / "results").mkdir()
    assert main(["table", "--results", str(tmp_path / "results"), "--study", str(study)]) == 1
    captured = capsys.readouterr()
    assert "0 of 2 run(s) in the tables; 2 missing:" in captured.out
    assert "  missing bfashion/smoke/edm/seed1" in captured.out
    assert captured.err == f"error: no records under {tmp_path / 'results'}\n"


def test_a_stop_request_during_planning_ends_it_before_the_next_run_is_planned(tmp_path):
    with stop_requests():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(Interrupted, match="^stopped by SIGTERM while planning bfashion; re-run"):
            plan_runs("bfashion", "edm,logu", "smoke", 3, tmp_path)
    runs = plan_runs("bfashion", "edm", "smoke", 1, tmp_path)
    with stop_requests():
        os.kill(os.getpid(), signal.SIGUSR2)
        with pytest.raises(Interrupted, match="^stopped by SIGUSR2 while checking bfashion/smoke/edm/seed0"):
            check_runs(runs)
    assert not (tmp_path / "runs").exists()


def test_suite_run_stopped_while_planning_exits_130(tmp_path, capsys, monkeypatch):
    import suite.launch.plan

    planned = suite.launch.plan.compose_seeds

    def compose_then_stop(*args, **kwargs):  # the real composition, then the user's Ctrl-C
        configs = planned(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return configs

    monkeypatch.setattr(suite.launch.plan, "compose_seeds", compose_then_stop)
    assert (
        main(["run", "--task", "bfashion", "--sampler", "edm", "--seeds", "5", "--results", str(tmp_path)])
        == 130
    )
    err = capsys.readouterr().err
    assert "stopped by SIGINT while planning bfashion; re-run the command to resume" in err
    assert not (tmp_path / "runs").exists()
