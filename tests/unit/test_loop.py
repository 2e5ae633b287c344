"""The loop's schedule and stop protocol, read from the events it emits (in-process, ring2d on the CPU).

Four steps of 16 with ticks every 32 examples and evaluation points at 32 and 64: each point is
checkpointed before it is evaluated, and the stats.jsonl rows are the ticks' rows. A stop requested
(SIGUSR2 to this process) after the first step checkpoints there and stops; the re-run resumes from that
checkpoint and ticks, evaluates and records exactly what the uninterrupted run did (timings aside).
"""

import os
import signal
from pathlib import Path

import pytest

from suite.cli import main
from suite.config import compose_run
from suite.records import read_json, read_jsonl
from suite.run.events import Checkpointed, Compiled, Evaluated, Evaluating, Stepped, Ticked
from suite.run.spec import run_spec
from suite.run.training import Trainer
from suite.run.writers import stats_row
from suite.stopping import Interrupted
from tests.helpers.tiny import TINY_RING2D, untimed

OVERRIDES = [
    *(o for o in TINY_RING2D if not o.startswith("budget.checkpoint_kimg")),
    "budget.checkpoint_kimg=0.064",
]


def trainer(run_dir: Path) -> Trainer:
    return Trainer(run_spec(compose_run("ring2d", "edm", "smoke", OVERRIDES)), run_dir)


def record_events(trained: Trainer) -> list[object]:
    seen: list[object] = []
    for kind in (Stepped, Compiled, Ticked, Evaluating, Evaluated, Checkpointed):
        trained.events.subscribe(kind, seen.append)
    return seen


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Trainer, list[object]]:
    whole = trainer(tmp_path_factory.mktemp("whole") / "run")
    seen = record_events(whole)
    whole.run()
    return whole, seen


def test_each_evaluation_point_is_checkpointed_before_it_is_evaluated_and_ticks_are_the_stats_rows(
    uninterrupted,
):
    whole, seen = uninterrupted
    schedule = [(type(e).__name__, getattr(e, "nimg", None)) for e in seen if not isinstance(e, Compiled)]
    after = [("Ticked", 32), ("Checkpointed", 32), ("Evaluating", 32), ("Evaluated", 32)]
    assert schedule == [
        ("Stepped", 16),
        ("Stepped", 32),
        *after,
        ("Stepped", 48),
        ("Stepped", 64),
        *[(kind, 64) for kind, _ in after],
    ]
    ticks = [e for e in seen if isinstance(e, Ticked)]
    assert read_jsonl(whole.dir.stats) == [stats_row(tick) for tick in ticks]
    assert [tick.evaluations_left for tick in ticks] == [1, 0]
    assert whole.dir.info()["status"] == "done" and whole.dir.info()["trust_pickle"] is False


def test_a_stop_after_a_step_checkpoints_there_and_the_rerun_records_what_an_uninterrupted_run_does(
    uninterrupted, tmp_path
):
    whole, _ = uninterrupted
    cut = trainer(tmp_path / "run")
    seen = record_events(cut)
    cut.events.subscribe(Stepped, lambda e: os.kill(os.getpid(), signal.SIGUSR2) if e.nimg == 16 else None)
    with pytest.raises(Interrupted, match="SIGUSR2 at kimg 0.016"):
        cut.run()
    assert [(type(e).__name__, e.nimg) for e in seen if isinstance(e, Stepped | Checkpointed)] == [
        ("Stepped", 16),
        ("Checkpointed", 16),
    ]
    assert cut.dir.info()["status"] == "interrupted"
    resumed = trainer(tmp_path / "run")
    resumed.run()
    assert resumed.dir.info()["status"] == "done"
    assert untimed(read_jsonl(resumed.dir.stats)) == untimed(read_jsonl(whole.dir.stats))
    assert untimed(resumed.dir.rows()) == untimed(whole.dir.rows())


def test_a_typo_learning_rate_fails_the_run_as_diverged_naming_the_tick_and_the_rate_and_is_no_result(
    tmp_path, capsys, monkeypatch
):
    """budget.lr=2e3 (for 2e-3): the loss passes the divergence bound within four steps; the run fails at
    its tick, nothing after it is recorded, and suite table shows no result of it."""
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "results"
    argv = ["run", "--task", "ring2d", "--sampler", "edm", "--budget", "smoke", "--results", str(results)]
    assert main([*argv, "device=cpu", "budget.lr=2e3", "budget.kimg=0.512", "budget.eval_points=1"]) == 1
    out = capsys.readouterr().out
    (run_json,) = results.glob("runs/*/edm/seed0/run.json")
    error = read_json(run_json)["error"]
    assert read_json(run_json)["status"] == "failed" and error in out
    assert (
        error.startswith("Diverged: loss is ")
        and " at tick 1 (kimg 0.512; above 1e+12 is divergence)" in error
    )
    assert error.endswith(
        "the run diverged; budget.lr=2000 is large (the suite's budgets train at 1e-4 to 1e-2)"
    )
    assert not (run_json.parent / "records.jsonl").exists() and not (run_json.parent / "stats.jsonl").exists()
    assert main(["table", "--results", str(results)]) == 1
    assert "error: no records under" in capsys.readouterr().err


def test_a_network_broken_by_the_last_step_before_an_evaluation_fails_as_diverged(
    tmp_path, capsys, monkeypatch
):
    """The update after the last loss read breaks the network: its metric is NaN at the evaluation point,
    and the loss probed there names the divergence (a NaN metric of a sound network keeps its own error)."""
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "results"
    argv = ["run", "--task", "ring2d", "--sampler", "edm", "--budget", "smoke", "--results", str(results)]
    assert main([*argv, "device=cpu", "budget.lr=2e3", "budget.kimg=0.256", "budget.eval_points=2"]) == 1
    (run_json,) = results.glob("runs/*/edm/seed0/run.json")
    error = read_json(run_json)["error"]
    assert (
        error.startswith("Diverged: ")
        and " is nan, not a finite number; the evaluation wrote no row; " in error
    )
    assert "; the network's loss is " in error and " per example at kimg 0.256: the run diverged; " in error
    assert [row["kimg"] for row in read_jsonl(run_json.parent / "records.jsonl")] == [0.128] * 4
