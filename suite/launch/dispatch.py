"""The one dispatch of ``suite run`` and ``suite run --study``: :func:`launch` says what the budget's numbers
cannot show (its ``note``), checks what the planned runs need and prints the plan (``--dry-run``), submits
the arrays (``--launcher slurm``, ``suite.launch.slurm``) or trains the runs here, one at a time
(``suite.launch.local``) or ``runs_per_gpu`` at once (``suite.launch.packed``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from suite.exits import EXIT_USAGE
from suite.launch.cost import describe_here, measured_here
from suite.launch.local import run_local
from suite.launch.packed import check_pack_size, run_packed
from suite.launch.plan import PlannedRun
from suite.launch.preflight import PreflightError, preflight, provisional_guidance
from suite.launch.request import LaunchRequest
from suite.launch.slurm import describe_arrays, submit
from suite.lease import Holder, judge, read_lease, stale_limit


def budget_notes(runs: Sequence[PlannedRun]) -> list[str]:
    """What the numbers of the runs' budgets cannot show, one line per budget with a ``note`` (demo, smoke:
    that they cannot rank samplers), as ``suite table`` says it first under its blocks."""
    notes = {str(run.cfg.budget.name): run.cfg.budget.get("note") for run in runs}
    return [f"note: budget {name} {' '.join(str(n).split())}" for name, n in sorted(notes.items()) if n]


def launch(runs: Sequence[PlannedRun], request: LaunchRequest, plan: Callable[[], str]) -> int:
    """Launch the checked ``runs`` as ``request`` says. With ``dry_run``: print ``plan()`` (the plan and its
    cost), the job arrays on SLURM, then one ``error:`` line per preflight problem (status 2) or nothing
    (status 0). Otherwise: the preflight (raising one error naming each cause), then the submission or the
    local training, whose exit status is returned."""
    check_pack_size(request.runs_per_gpu)
    for line in provisional_guidance(runs):
        print(line, file=sys.stderr, flush=True)
    for line in budget_notes(runs):
        print(line, flush=True)
    if request.dry_run:  # the plan and its cost first, whatever this machine lacks; then what it lacks
        print(plan(), flush=True)
        if request.launcher == "slurm":
            print(describe_arrays(runs, request))
        try:
            preflight(runs, request)
        except PreflightError as err:
            for line in err.problems:
                print(f"error: {line}", file=sys.stderr)
            return EXIT_USAGE
        return 0
    preflight(runs, request)  # data, results folder, weights, warm-up, SLURM hours: one line per cause
    if request.launcher == "slurm":
        return submit(runs, request)
    todo = [run for run in runs if run.status != "done" and not held_elsewhere(run.run_dir)]
    if todo:  # before the first progress line, which may be hours away
        at_once = min(request.runs_per_gpu, len(todo))
        here = measured_here(todo[0].spec, at_once)
        print("\n".join(describe_here(here, len(todo), at_once, todo[0].spec.budget.name)), flush=True)
    runs = list(runs)
    return run_local(runs) if request.runs_per_gpu == 1 else run_packed(runs, request.runs_per_gpu)


def held_elsewhere(run_dir: Path) -> bool:
    """Whether another live process holds the run's lease (``suite.lease.judge``), so this launch will skip
    it as busy: no wall time is planned, and no trainer built, for a run this launch does not train."""
    seen = read_lease(run_dir)
    if seen is None:
        return False
    me = Holder.of_this_process()
    return seen.holder != me and judge(seen, me, stale_limit(), time.time()) is True
