"""Local execution of planned runs, one after another.

A local launch ends with a closing summary: the count of each outcome, one line per run (its outcome:
done, done already, failed, busy, lease lost, interrupted, not started; with a done run's final values on
its own grid, or why), and the command to run next; it exits with ``EXIT_DONE`` (0) when every run is
done, ``EXIT_FAILED`` (1) when a run failed, ``EXIT_BUSY`` (3) when none failed but a run was left to
another process (skipped as busy, or its lease lost), and ``EXIT_INTERRUPTED`` (130) when SIGTERM/SIGUSR2
stopped it (the runs after it are not started)."""

from __future__ import annotations

import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from suite.config import (
    comparison_config,
    from_resolved,
)
from suite.exits import EXIT_BUSY, EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED
from suite.launch.plan import PlannedRun
from suite.lease import LeaseLost, RunBusy
from suite.records import RunDirectory, write_json
from suite.run.training import repair_done_run, train
from suite.stopping import Interrupted, check


def launch_run(cfg_dict: dict[str, Any], run_dir: str) -> tuple[str, str]:
    """Execute one run from a plain config dict; returns its outcome (``done``, ``done already``, ``busy``
    or ``lease lost``) and, for the last two, the line that says why. Failures raise."""
    cfg = from_resolved(cfg_dict)
    folder = Path(run_dir)
    marker = folder.parent.parent / "comparison.json"
    if not marker.is_file():
        write_json(marker, comparison_config(cfg))
    if RunDirectory(folder).status() == "done":
        for line in repair_done_run(folder):
            print(line, flush=True)
        return "done already", ""
    try:
        train(cfg, folder)
    except RunBusy as busy:
        print(f"skipping: {busy}", flush=True)
        return "busy", f"trained by {busy.who}"
    except LeaseLost as lost:
        print(f"stopping: {lost}", flush=True)
        return "lease lost", lost.now
    return "done", ""


def done_already(run: PlannedRun) -> None:
    """Say that a planned run is done already, after dropping evaluation rows its records repeat
    (``suite.run.training.repair_done_run``: a woken stale holder's write, say), each repair in a line."""
    for line in repair_done_run(run.run_dir):
        print(line, flush=True)
    print(f"done already: {run.label}")


def run_one(cfg_dict: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """Execute one run from a plain config dict (the entry point of SLURM execution); returns its
    run.json."""
    launch_run(cfg_dict, run_dir)
    return RunDirectory(run_dir).info()


def attempt(cfg_dict: dict[str, Any], run_dir: str) -> tuple[str, str]:
    """Launch one run in this process: its outcome and why (``interrupted`` when SIGTERM/SIGUSR2 stopped
    it, ``failed`` with the error's first line, printed as one line; train() records it in run.json, and
    the traceback of an error in training in the run's log.txt; ``--debug`` (``SUITE_DEBUG=1``) prints the
    traceback)."""
    try:
        return launch_run(cfg_dict, run_dir)
    except Interrupted as stop:
        print(stop, flush=True)
        return "interrupted", str(stop)
    except Exception as err:  # the launch goes on with the other runs
        why = f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
        if os.environ.get("SUITE_DEBUG") == "1":
            traceback.print_exc()
        else:
            print(f"error: {run_dir}: {why} (--debug prints the traceback)", file=sys.stderr, flush=True)
        return "failed", why


def final_values(run_dir: Path) -> str:
    """A run's values at its last evaluation point on its own grid (``metric value`` each), '' for none."""
    rows = [row for row in RunDirectory(run_dir).rows() if row.get("grid", "karras") == "karras"]
    points = [row["nimg"] for row in rows if isinstance(row.get("nimg"), int)]
    if not points:
        return ""
    last = max(points)
    values = {row["metric"]: row["value"] for row in rows if row.get("nimg") == last}
    return ", ".join(f"{metric} {value:.6g}" for metric, value in values.items()) + f" @ kimg {last / 1000:g}"


def next_step(code: int, results: str) -> str:
    """What to run after a launch that ended with ``code`` (the results folder quoted for the shell)."""
    results = shlex.quote(results)
    return {
        EXIT_DONE: f"next: suite table --results {results}  (figures: suite plot, report: suite report)",
        EXIT_FAILED: "next: fix the error printed above, then re-run the same command: done runs are skipped",
        EXIT_BUSY: f"next: suite status --results {results} names who trains the skipped runs; re-run later",
        EXIT_INTERRUPTED: "next: re-run the same command to resume from the last checkpoints",
    }[code]


def summarize(outcomes: list[tuple[str, PlannedRun, str]]) -> int:
    """Print one line per run (outcome, label, final values or why), the count of each outcome and the next
    command, and return the launch's exit code (module docstring)."""
    counts: dict[str, int] = {}
    for outcome, _, _ in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    print(f"{len(outcomes)} run(s): " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items()))
    for outcome, run, why in outcomes:
        note = why or (final_values(run.run_dir) if outcome in ("done", "done already") else "")
        print(f"  {outcome:<12} {run.label}" + (f"  {note}" if note else ""))
    found = set(counts)
    if found & {"interrupted", "not started"}:  # runs are left unstarted only after a stop request
        code = EXIT_INTERRUPTED
    elif "failed" in found:
        code = EXIT_FAILED
    else:
        code = EXIT_BUSY if found & {"busy", "lease lost"} else EXIT_DONE
    if outcomes:
        print(next_step(code, str(outcomes[0][1].cfg.results)))
    return code


def run_local(runs: list[PlannedRun]) -> int:
    """Run the planned runs one after the other (failures are recorded and the rest still run; an
    interruption stops the launch), print one line per run, and return the exit code (module docstring)."""
    outcomes: list[tuple[str, PlannedRun, str]] = []
    interrupted = False
    for run in runs:
        if interrupted:
            outcomes.append(("not started", run, ""))
            continue
        if run.status == "done":
            done_already(run)
            outcomes.append(("done already", run, ""))
            continue
        try:
            check(f"before {run.label}")
        except Interrupted as stop:
            print(stop, flush=True)
            interrupted = True
            outcomes.append(("interrupted", run, str(stop)))
            continue
        print(f"== {run.label} -> {run.run_dir}", flush=True)
        cfg_dict = OmegaConf.to_container(run.cfg, resolve=True)
        outcome, why = attempt(cfg_dict, str(run.run_dir))  # type: ignore[arg-type]
        interrupted = outcome == "interrupted"
        outcomes.append((outcome, run, why))
    return summarize(outcomes)
