"""Planning runs.

``plan_runs`` expands a command line (task, samplers, budget, seeds, sweeps) into run configs and their
directories, ``results/runs/<task>-<budget>-<comparison hash>/<sampler label>/seed<k>/``: every run of
one comparison shares the directory of its comparison hash, and the comparison's config is written
once to ``comparison.json`` there. A run whose record says done is skipped, so re-running a command
resumes what is unfinished and does nothing more; a run that another live process trains (it holds the
run's lease, ``suite.lease``) is skipped with a line naming that process, and the next run starts. A run
whose lease was taken over while it trained stops at its next write, and the next run starts. A stop
request (``suite.stopping``) ends the launch with status 130: a run that trains checkpoints and stops, and
a request that arrives between runs starts no further run."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from suite.config import (
    comparison_config,
    compose_seeds,
    config_hash,
    expand_sweeps,
    group_options,
    literal,
    to_dict,
)
from suite.metrics import switch_problems
from suite.names import path_name, unknown_name
from suite.noise.sampler import SAMPLERS
from suite.records import RunDirectory, read_json
from suite.run.assembly import build_loss_weight, build_model, build_noise_sampler, build_task
from suite.run.seeds import parse_seeds
from suite.run.spec import RunSpec, SpecError, guidance_problem, read_spec
from suite.stopping import check
from suite.task import TASKS
from suite.watch import check_watchers


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
    given = [s.strip() for s in spec.split(",") if s.strip()]
    names = list(dict.fromkeys(given))
    for name in names:
        if given.count(name) > 1:
            raise ValueError(
                f"sampler {name} is named {given.count(name)} times in --sampler {spec}; "
                "name each sampler once"
            )
    registered = set(SAMPLERS.names())
    for name in names:
        if name not in configured or name not in registered:
            raise ValueError(unknown_name("sampler", name, configured, ", or all"))
    return names


def resolve_task(name: str) -> str:
    """Check that a task has both a plugin and a config."""
    if name not in TASKS.names() or name not in group_options("task"):
        raise ValueError(unknown_name("task", name, group_options("task")))
    return name


def comparison_dir(results: str | Path, spec: RunSpec) -> Path:
    """Folder shared by every run of the comparison ``spec`` belongs to."""
    return Path(results) / "runs" / f"{spec.task}-{spec.budget.name}-{spec.comparison_hash}"


def run_folder(results: str | Path, spec: RunSpec) -> Path:
    """The run folder of ``spec`` under ``results``; ValueError naming the value when a name that enters it
    (task, budget, sampler label: ``suite.names.path_name``) could lead elsewhere, or it resolves (links
    followed) outside ``results/runs``, itself resolved.

    Links. ``results`` and ``results/runs`` may be symbolic links (a cluster's runs on another disk): the
    run folder must lie in the folder ``runs`` resolves to. A link below ``runs`` (a comparison, sampler or
    seed folder) that leads elsewhere is refused, since the run's writes and clean-ups would land there."""
    path_name("task.name", spec.task)
    path_name("budget.name", spec.budget.name)
    path_name("sampler label", spec.sampler.label)
    folder = comparison_dir(results, spec) / spec.sampler.label / f"seed{spec.seed}"
    top = (Path(results) / "runs").resolve()
    if not folder.resolve().is_relative_to(top):
        raise ValueError(
            f"the run folder {folder} resolves to {folder.resolve()}, outside {top} (where "
            f"{Path(results) / 'runs'} leads); a link below runs/ may not lead a run elsewhere; refusing"
        )
    return folder


def plan_runs(
    task: str,
    samplers: str,
    budget: str = "smoke",
    seeds: int | Sequence[int] = 1,
    results: str | Path = "results",
    overrides: list[str] | None = None,
    first_seed: int = 0,
) -> list[PlannedRun]:
    """Every run of a command line; refuses runs that would break their comparison. ``seeds`` is a count
    (seeds ``first_seed`` … ``first_seed + seeds − 1``) or the seeds themselves (``suite.run.seeds``)."""
    resolve_task(task)
    if isinstance(seeds, int):
        parse_seeds(seeds, "--seeds")  # at least 1, at most MAX_SEEDS
    seed_list = range(first_seed, first_seed + seeds) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ValueError("--seeds names no seed; give a count N, a range A-B or a comma list")
    runs = []
    for sweep in expand_sweeps(list(overrides or [])):
        for sampler in resolve_samplers(samplers):
            for cfg in compose_seeds(task, sampler, budget, sweep, list(seed_list)):
                check(f"while planning {task}")  # a stop request ends a long planning too
                cfg.results = literal(str(results))  # a path, not an override: any character may be in it
                spec = read_spec(cfg)[0]
                runs.append(PlannedRun(cfg, run_folder(results, spec)))
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
    them (``suite.run.assembly``), the network on the meta device and once per task config and preset in
    ``networks``; no data are read."""
    spec, problems = read_spec(cfg)
    try:
        check_watchers(spec.watch)
    except ValueError as err:
        problems.append(str(err))
    try:
        build_noise_sampler(spec, build_loss_weight(spec))
    except (ValueError, TypeError, KeyError) as err:
        problems.append(f"sampler {spec.sampler.name}: {err}")
    for group in ("metrics", "fallback_metrics"):
        for name, options in (spec.task_cfg.get(group) or {}).items():
            problems.extend(switch_problems(f"task.{group}.{name}", options))
    key = json.dumps([to_dict(spec.task_cfg), spec.budget.size], sort_keys=True, default=str)
    if networks is None or key not in networks:
        try:
            task = build_task(spec)
            unguided = guidance_problem(spec.budget.eval.guidance, 1.0, bool(task.conditional))
            if unguided and unguided not in problems:  # a range problem read_spec found already
                problems.append(f"budget.eval.{unguided}")
            build_model(spec, task, "meta")
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
        check(f"while checking {run.label}")
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


def _flat(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` as dotted keys → values (lists kept whole)."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = node

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return flat


def describe_configs(runs: list[PlannedRun]) -> str:
    """The first run's resolved config in full, then per other run only the keys whose values differ from
    it (``sampler.p_mean=0.0``; a group whose config is another one by its name, ``sampler=edm (its
    config)``), so that a sweep of nine samplers prints one config, not nine."""
    first = _flat(runs[0].cfg)
    lines = [f"# config of {runs[0].label}  ->  {runs[0].run_dir}", OmegaConf.to_yaml(runs[0].cfg).rstrip()]
    if len(runs) > 1:
        lines.append("# the other runs differ from it in:")
    for run in runs[1:]:
        mine = _flat(run.cfg)
        changed = [k for k in sorted(first.keys() | mine.keys()) if first.get(k) != mine.get(k)]
        renamed = {k.rsplit(".", 1)[0] for k in changed if k.endswith(".name")}  # another config of a group
        shown = [f"{g}={mine[g + '.name']} (its config)" for g in sorted(renamed)] + [
            f"{k}={mine.get(k, '(absent)')}"
            for k in changed
            if not any(k.startswith(f"{g}.") for g in renamed)
        ]
        lines.append(f"#   {run.label}: {' '.join(shown) or 'nothing'}")
    return "\n".join(lines)
