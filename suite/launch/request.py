"""The launch request and the one dispatch of ``suite run`` and ``suite run --study``.

A :class:`LaunchRequest` holds how and where planned runs are launched — here or as SLURM job arrays, the
cluster profile, the resources given on the command line, the runs trained at once on one device, whether
only to print the plan, the results folder — built once from the flags (``suite.commands.run``) and read by
the preflight (``suite.launch.preflight``) and the SLURM submission (``suite.launch.slurm``). :func:`launch`
then checks what the runs need and prints the plan (``--dry-run``), submits the arrays (``--launcher slurm``)
or trains the runs here, one at a time or ``runs_per_gpu`` at once (``suite.launch.runner``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from suite.exits import EXIT_USAGE

if TYPE_CHECKING:
    from suite.launch.runner import PlannedRun


@dataclass(frozen=True)
class LaunchRequest:
    """How and where to launch planned runs (``suite run``'s launch flags)."""

    results: str
    launcher: str = "local"  # "local" or "slurm"
    profile: str | None = None  # a cluster profile in slurm/profiles/ (None: the default one)
    partition: str | None = None
    gpus_per_run: int | None = None
    time_min: int | None = None
    array_parallelism: int | None = None
    runs_per_gpu: int = 1
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.launcher not in ("local", "slurm"):
            raise ValueError(f"unknown launcher {self.launcher!r}; valid launchers: local, slurm")

    @property
    def resources(self) -> dict[str, Any]:
        """The SLURM resources given on the command line (those left unset are absent)."""
        given = {
            "partition": self.partition,
            "gpus_per_run": self.gpus_per_run,
            "time_min": self.time_min,
            "array_parallelism": self.array_parallelism,
        }
        return {key: value for key, value in given.items() if value is not None}


def launch(runs: Sequence[PlannedRun], request: LaunchRequest, plan: Callable[[], str]) -> int:
    """Launch the checked ``runs`` as ``request`` says. With ``dry_run``: print ``plan()`` (the plan and its
    cost), the job arrays on SLURM, then one ``error:`` line per preflight problem (status 2) or nothing
    (status 0). Otherwise: the preflight (raising one error naming each cause), then the submission or the
    local training, whose exit status is returned."""
    from suite.launch.preflight import PreflightError, preflight, provisional_guidance
    from suite.launch.runner import check_pack_size, run_local, run_packed

    check_pack_size(request.runs_per_gpu)
    for line in provisional_guidance(runs):
        print(line, file=sys.stderr, flush=True)
    if request.dry_run:  # the plan and its cost first, whatever this machine lacks; then what it lacks
        print(plan(), flush=True)
        if request.launcher == "slurm":
            from suite.launch.slurm import describe_arrays

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
        from suite.launch.slurm import submit

        return submit(runs, request)
    todo = [run for run in runs if run.status != "done"]
    if todo:  # before the first progress line, which may be hours away
        from suite.launch.cost import describe_here, measured_here

        print("\n".join(describe_here(measured_here(todo[0].spec), len(todo))), flush=True)
    runs = list(runs)
    return run_local(runs) if request.runs_per_gpu == 1 else run_packed(runs, request.runs_per_gpu)
