"""Planning and local execution of runs.

``plan_runs`` expands a command line (task, samplers, budget, seeds, sweeps) into run configs and their
directories, ``results/runs/<task>-<budget>-<comparison hash>/<sampler label>/seed<k>/``: every run of
one comparison shares the directory of its comparison hash, and the comparison's config is written
once to ``comparison.json`` there. A run whose record says done is skipped, so re-running a command
resumes what is unfinished and does nothing more; a run that another live process trains (it holds the
run's lease, ``suite.lease``) is skipped with a line naming that process, and the next run starts. A run
whose lease was taken over while it trained stops at its next write, and the next run starts. A stop
request (``suite.stopping``) ends the launch with status 130: a run that trains checkpoints and stops, and
a request that arrives between runs starts no further run.

A local launch ends with one line per run (its outcome: done, done already, failed, busy, lease lost,
interrupted, not started) and exits with ``EXIT_DONE`` (0) when every run is done, ``EXIT_FAILED`` (1)
when a run failed, ``EXIT_BUSY`` (3) when none failed but a run was left to another process (skipped as
busy, or its lease lost), and ``EXIT_INTERRUPTED`` (130) when SIGTERM/SIGUSR2 stopped it (the runs after
it are not started).

Before anything runs (and for ``--dry-run``), :func:`check_runs` reads every planned run's spec
(``suite.spec``) and builds its loss weight, noise sampler, task and network with the functions training
uses (``suite.assembly``), without loading data, and reports every invalid value at once.
"""

from __future__ import annotations

import functools
import json
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from suite.assembly import build_loss_weight, build_model, build_noise_sampler, build_task
from suite.config import (
    comparison_config,
    compose_run,
    config_hash,
    expand_sweeps,
    group_options,
    to_dict,
)
from suite.lease import LeaseLost, RunBusy
from suite.records import RunDirectory, read_json, write_json
from suite.sampler import SAMPLERS
from suite.spec import RunSpec, SpecError, read_spec
from suite.stopping import EXIT_INTERRUPTED, Interrupted, check
from suite.task import TASKS
from suite.training import train

EXIT_DONE, EXIT_FAILED, EXIT_BUSY = 0, 1, 3


@dataclass
class PlannedRun:
    """One run: its resolved config and directory."""

    cfg: DictConfig
    run_dir: Path

    @functools.cached_property
    def _read(self) -> tuple[RunSpec, list[str]]:
        return read_spec(self.cfg)

    @property
    def label(self) -> str:
        return self._read[0].label

    @property
    def status(self) -> str:
        return RunDirectory(self.run_dir).status()

    @property
    def spec(self) -> RunSpec:
        """The run's spec; raises SpecError naming its invalid values."""
        spec, problems = self._read
        if problems:
            raise SpecError(problems)
        return spec


def resolve_samplers(spec: str) -> list[str]:
    """``all`` → every sampler with a config; else a comma list of names, each checked."""
    configured = group_options("sampler")
    if spec == "all":
        return configured
    names = [s.strip() for s in spec.split(",") if s.strip()]
    registered = set(SAMPLERS.names())
    for name in names:
        if name not in configured or name not in registered:
            raise ValueError(f"unknown sampler {name!r}; valid samplers: {', '.join(configured)}, or all")
    return names


def resolve_task(name: str) -> str:
    """Check that a task has both a plugin and a config."""
    if name not in TASKS.names() or name not in group_options("task"):
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(group_options('task'))}")
    return name


def comparison_dir(results: str | Path, spec: RunSpec) -> Path:
    """Folder shared by every run of the comparison ``spec`` belongs to."""
    return Path(results) / "runs" / f"{spec.task}-{spec.budget.name}-{spec.comparison_hash}"


def plan_runs(
    task: str,
    samplers: str,
    budget: str = "smoke",
    seeds: int = 1,
    results: str | Path = "results",
    overrides: list[str] | None = None,
    first_seed: int = 0,
) -> list[PlannedRun]:
    """Every run of a command line; refuses runs that would break their comparison."""
    resolve_task(task)
    if seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {seeds}")
    runs = []
    for sweep in expand_sweeps(list(overrides or [])):
        for sampler in resolve_samplers(samplers):
            for seed in range(first_seed, first_seed + seeds):
                cfg = compose_run(task, sampler, budget, [*sweep, f"seed={seed}", f"results={results}"])
                spec = read_spec(cfg)[0]
                run_dir = comparison_dir(results, spec) / spec.sampler.label / f"seed{seed}"
                runs.append(PlannedRun(cfg, run_dir))
    check_comparisons(runs)
    return runs


def check_comparisons(runs: list[PlannedRun]) -> None:
    """Every run in a comparison folder must share its comparison config, and no two runs one folder."""
    seen: dict[Path, str] = {}
    for run in runs:
        digest = config_hash(run.cfg)
        if seen.setdefault(run.run_dir, digest) != digest:
            raise ValueError(f"two planned runs with different configs map to {run.run_dir}")
        folder = run.run_dir.parent.parent
        marker = folder / "comparison.json"
        expected = comparison_config(run.cfg)
        if marker.is_file() and read_json(marker) != expected:
            raise ValueError(
                f"{folder} holds a comparison whose fixed settings differ from this run's; refusing to mix "
                "them (only the sampler may differ). Use another --results folder."
            )
        existing = RunDirectory(run.run_dir).info()
        if existing.get("config_hash") not in (None, digest):
            raise ValueError(
                f"{run.run_dir} holds a run of another config ({existing['config_hash']}); refusing"
            )


def run_problems(cfg: DictConfig, networks: set[str] | None = None) -> list[str]:
    """Every invalid value of one run's config: the spec's checks, then the parts built as training builds
    them (``suite.assembly``), the network on the meta device and once per task config and preset in
    ``networks``; no data are read."""
    spec, problems = read_spec(cfg)
    try:
        build_noise_sampler(spec, build_loss_weight(spec))
    except (ValueError, TypeError, KeyError) as err:
        problems.append(f"sampler {spec.sampler.name}: {err}")
    key = json.dumps([to_dict(spec.task_cfg), spec.budget.size], sort_keys=True, default=str)
    if networks is None or key not in networks:
        try:
            build_model(spec, build_task(spec), "meta")
        except Exception as err:  # a task or network constructor's own check, whatever it raises
            problems.append(
                f"task {spec.task} (network preset {spec.budget.size!r}): {type(err).__name__}: {err}"
            )
        if networks is not None:
            networks.add(key)
    return problems


def check_runs(runs: list[PlannedRun]) -> None:
    """Raise one ValueError naming every invalid value of the planned runs (and which runs have it)."""
    found: dict[str, list[str]] = {}
    networks: set[str] = set()
    for run in runs:
        for problem in run_problems(run.cfg, networks):
            found.setdefault(problem, []).append(run.label)
    if found:
        lines = [
            f"  {problem}  [{', '.join(labels) if len(labels) <= 3 else f'{len(labels)} runs'}]"
            for problem, labels in found.items()
        ]
        raise ValueError(
            f"{len(found)} invalid value(s) in the planned runs; nothing was run:\n" + "\n".join(lines)
        )


def describe(runs: list[PlannedRun]) -> str:
    """Human-readable plan: one line per run with its status and directory."""
    lines = [f"{len(runs)} run(s):"]
    for run in runs:
        lines.append(f"  [{run.status:>11}] {run.label:<40} {run.run_dir}")
    return "\n".join(lines)


def launch_run(cfg_dict: dict[str, Any], run_dir: str) -> tuple[str, str]:
    """Execute one run from a plain config dict; returns its outcome (``done``, ``done already``, ``busy``
    or ``lease lost``) and, for the last two, the line that says why. Failures raise."""
    cfg = OmegaConf.create(cfg_dict)
    folder = Path(run_dir)
    marker = folder.parent.parent / "comparison.json"
    if not marker.is_file():
        write_json(marker, comparison_config(cfg))
    if RunDirectory(folder).status() == "done":
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


def run_one(cfg_dict: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """Execute one run from a plain config dict (the entry point of SLURM execution); returns its
    run.json."""
    launch_run(cfg_dict, run_dir)
    return RunDirectory(run_dir).info()


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
            print(f"done already: {run.label}")
            outcomes.append(("done already", run, ""))
            continue
        try:
            check(f"before {run.label}")
            print(f"== {run.label} -> {run.run_dir}", flush=True)
            cfg_dict = OmegaConf.to_container(run.cfg, resolve=True)
            outcome, why = launch_run(cfg_dict, str(run.run_dir))  # type: ignore[arg-type]
        except Interrupted as stop:
            print(stop, flush=True)
            outcome, why, interrupted = "interrupted", str(stop), True
        except Exception as err:  # recorded in run.json by train(); keep going with the other runs
            traceback.print_exc()
            outcome, why = "failed", f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
        outcomes.append((outcome, run, why))
    print(f"{len(runs)} run(s):")
    for outcome, run, why in outcomes:
        print(f"  {outcome:<12} {run.label}" + (f"  {why}" if why else ""))
    found = {outcome for outcome, _, _ in outcomes}
    if interrupted:
        return EXIT_INTERRUPTED
    if "failed" in found:
        return EXIT_FAILED
    return EXIT_BUSY if found & {"busy", "lease lost"} else EXIT_DONE
