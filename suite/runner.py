"""Planning and local execution of runs.

``plan_runs`` expands a command line (task, samplers, budget, seeds, sweeps) into run configs and their
directories, ``results/runs/<task>-<budget>-<comparison hash>/<sampler label>/seed<k>/``: every run of
one comparison shares the directory of its comparison hash, and the comparison's config is written
once to ``comparison.json`` there. A run whose record says done is skipped, so re-running a command
resumes what is unfinished and does nothing more; a run that another live process trains (it holds the
run's lease, ``suite.lease``) is skipped with a line naming that process, and the next run starts. A stop
request (``suite.stopping``) ends the launch with status 130: a run that trains checkpoints and stops, and
a request that arrives between runs starts no further run.

Before anything runs (and for ``--dry-run``), :func:`check_runs` builds every planned run's loss weight,
noise sampler, task and network and checks the budget's numbers, without loading data, and reports every
invalid value at once.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from suite.config import (
    comparison_config,
    comparison_hash,
    compose_run,
    config_hash,
    expand_sweeps,
    group_options,
    sampler_label,
    sampler_params,
    to_dict,
)
from suite.lease import RunBusy
from suite.records import RunDirectory, read_json, write_json
from suite.sampler import SAMPLERS, build_sampler
from suite.solvers import SOLVERS
from suite.stopping import EXIT_INTERRUPTED, Interrupted, check
from suite.task import TASKS
from suite.training import train
from suite.weighting import build_weight

# Budget numbers that must be positive (integers where marked), or at least zero.
POSITIVE = ("kimg", "lr", "tick_kimg", "checkpoint_kimg", "ema_halflife_kimg")
POSITIVE_INT = ("batch", "eval_points", "eval.samples", "eval.reference", "eval.batch_size")
OPTIONAL = ("eval.reference", "eval.final_samples", "eval.final_ranges")  # null: all / as eval.samples / 1
NON_NEGATIVE = ("lr_rampup_kimg", "grad_clip")
PRECISIONS = ("fp32", "bf16")


@dataclass
class PlannedRun:
    """One run: its resolved config and directory."""

    cfg: DictConfig
    run_dir: Path

    @property
    def label(self) -> str:
        return f"{self.cfg.task.name}/{self.cfg.budget.name}/{sampler_label(self.cfg)}/seed{self.cfg.seed}"

    @property
    def status(self) -> str:
        return RunDirectory(self.run_dir).status()


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


def comparison_dir(results: str | Path, cfg: DictConfig) -> Path:
    """Folder shared by every run of the comparison ``cfg`` belongs to."""
    return Path(results) / "runs" / f"{cfg.task.name}-{cfg.budget.name}-{comparison_hash(cfg)}"


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
                run_dir = comparison_dir(results, cfg) / sampler_label(cfg) / f"seed{seed}"
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


def _budget_problems(budget: DictConfig) -> Iterator[str]:
    for key in dict.fromkeys((*POSITIVE, *POSITIVE_INT, *NON_NEGATIVE, *OPTIONAL)):
        value = OmegaConf.select(budget, key)
        if key in OPTIONAL and value is None:
            continue
        integer = key in POSITIVE_INT or key in OPTIONAL
        number = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
        if key in NON_NEGATIVE:
            ok, rule = number and value >= 0, "a number >= 0"
        elif integer:
            ok, rule = number and value >= 1, "an integer >= 1"
        else:
            ok, rule = number and value > 0, "a positive number"
        if not ok:
            yield f"budget.{key}={value!r}: must be {rule}"
    for key in ("tick_kimg", "checkpoint_kimg"):
        value = OmegaConf.select(budget, key)
        if isinstance(value, (int, float)) and 0 < value < 0.001:
            yield f"budget.{key}={value!r}: must be at least 0.001 (one example)"
    if budget.get("precision") not in PRECISIONS:
        yield f"budget.precision={budget.get('precision')!r}: valid: {', '.join(PRECISIONS)}"


def run_problems(cfg: DictConfig, networks: set[str] | None = None) -> list[str]:
    """Every invalid value of one run's config, found by building its loss weight, noise sampler, task and
    network (each network preset once per ``networks`` set) and checking the budget; no data are read."""
    problems = list(_budget_problems(cfg.budget))
    weight = None
    try:
        weight = build_weight(cfg.task.loss_weight, float(cfg.task.sigma_data))
    except (ValueError, TypeError, KeyError) as err:
        problems.append(
            f"task.loss_weight={cfg.task.loss_weight!r}, task.sigma_data={cfg.task.sigma_data!r}: {err}"
        )
    try:
        sampler_range = float(cfg.task.sigma_min), float(cfg.task.sigma_max)
        build_sampler(cfg.sampler.name, *sampler_range, weight, **sampler_params(cfg))
    except (ValueError, TypeError, KeyError) as err:
        problems.append(f"sampler {cfg.sampler.name}: {err}")
    if cfg.task.solver not in SOLVERS:
        problems.append(f"task.solver={cfg.task.solver!r}: valid solvers: {', '.join(SOLVERS)}")
    steps = cfg.task.solver_steps
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        problems.append(f"task.solver_steps={steps!r}: must be an integer >= 1")
    try:
        task = TASKS.get(cfg.task.name)(cfg.task)
        preset = task.network_preset(str(cfg.budget.size))
        key = json.dumps([to_dict(cfg)["task"], str(cfg.budget.size)], sort_keys=True, default=str)
        if networks is None or key not in networks:
            task.build_network(preset)
            if networks is not None:
                networks.add(key)
    except Exception as err:  # a task or network constructor's own check, whatever it raises
        problems.append(
            f"task {cfg.task.name} (network preset {cfg.budget.size!r}): {type(err).__name__}: {err}"
        )
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


def run_one(cfg_dict: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """Execute one run from a plain config dict (the entry point of local and SLURM execution)."""
    cfg = OmegaConf.create(cfg_dict)
    folder = Path(run_dir)
    marker = folder.parent.parent / "comparison.json"
    if not marker.is_file():
        write_json(marker, comparison_config(cfg))
    if RunDirectory(folder).status() == "done":
        return RunDirectory(folder).info()
    try:
        return train(cfg, folder)
    except RunBusy as busy:
        print(f"skipping: {busy}", flush=True)
        return RunDirectory(folder).info()


def run_local(runs: list[PlannedRun]) -> int:
    """Run the planned runs one after the other; failures are recorded and the rest still run."""
    failures = 0
    for run in runs:
        if run.status == "done":
            print(f"done already: {run.label}")
            continue
        try:
            check(f"before {run.label}")
            print(f"== {run.label} -> {run.run_dir}", flush=True)
            run_one(OmegaConf.to_container(run.cfg, resolve=True), str(run.run_dir))  # type: ignore[arg-type]
        except Interrupted as stop:
            print(stop, flush=True)
            return EXIT_INTERRUPTED
        except Exception:  # recorded in run.json by train(); keep going with the other runs
            failures += 1
            traceback.print_exc()
    return 1 if failures else 0
