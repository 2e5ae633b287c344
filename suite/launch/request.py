"""The launch request of ``suite run`` and ``suite run --study``.

A :class:`LaunchRequest` holds how and where planned runs are launched — here or as SLURM job arrays, the
cluster profile, the resources given on the command line, the runs trained at once on one device, whether
only to print the plan, the results folder — built once from the flags (``suite.commands.run``) and read by
the preflight (``suite.launch.preflight``) and the SLURM submission (``suite.launch.slurm``), and
dispatched by ``suite.launch.dispatch``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suite.launch.cluster import slurm_name_problem


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
        if problem := slurm_name_problem("--partition", self.partition):
            raise ValueError(problem)

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
