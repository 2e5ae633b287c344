"""The preflight: what a launch needs, checked before any run starts (``suite run``, ``--dry-run`` included).

After the planned runs' values are checked (``suite.launch.plan.check_runs``), :func:`preflight` looks at
what the runs that are not done will need from this machine and the cluster, and reports each cause once, on
one line, in a :class:`PreflightError`; nothing runs while one is found:

* the results folder is writable: a temporary file is created and removed in it, or in its nearest existing
  parent when it does not exist yet (nothing else is created);
* each task config's data are present and readable, from file names and headers without loading them
  (``Task.data_problems``: IDX magic and dimensions and a gzip stream read to its end, CIFAR-10 batch
  names, the prepared DNA and OpenWebText folders, tokenizers);
* where the data have no problem, the metrics the task will be scored by (``Task.metric_options``: its
  ``metrics`` or its ``fallback_metrics``): their file options (``weights_path``, ``checkpoint``,
  ``target_names``), where set, name files, and each says what else it lacks on this machine
  (``Metric.problems``: weights, a checkpoint, a text model), each line once;
* ``device=cuda`` of a local launch finds a CUDA device, and every evaluation has at least 2 samples and
  2 references;
* an adaptive sampler's warm-up is shorter than the run (``budget.kimg`` / ``budget.batch`` training
  steps): otherwise it never rebuilds its density and trains as its base sampler throughout;
* with ``--launcher slurm``: a job's time limit × (1 + ``max_requeues``) covers the run's planned hours,
  the device-hours of ``suite.launch.cost`` divided by the run's GPUs (at the planning rate of one H200, so a
  slower device needs more).

The contradicting overrides of a command line (``--sampler edm sampler=cos``) are refused before anything
is planned (:func:`group_flags`): Hydra's ``task=``, ``sampler=``, ``budget=`` and ``results=`` choose what
the flags choose, and would otherwise silently replace (or be replaced by) the flag's choice in every
planned run; ``seed=`` is ``suite.run.seeds``'s.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from suite.config import to_dict
from suite.launch.cluster import DEFAULT_PROFILE, load_profile
from suite.launch.cost import planned_cost
from suite.launch.plan import PlannedRun
from suite.launch.request import LaunchRequest
from suite.metrics import metric_problems
from suite.run.assembly import build_loss_weight, build_noise_sampler, build_task
from suite.run.spec import RunSpec
from suite.task import TASKS

FILE_OPTIONS = ("weights_path", "checkpoint", "target_names")


class PreflightError(ValueError):
    """What a launch lacks; ``problems`` holds one line per cause."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def group_flags(
    flags: Mapping[str, str | None], overrides: Iterable[str]
) -> tuple[dict[str, str | None], list[str]]:
    """The values of the flags ``--KEY`` (``flags``: KEY -> the flag's value, None where not given) with
    the overrides ``KEY=value`` of the same keys folded in (``sampler=cos`` alone stands for ``--sampler
    cos``, ``results=DIR`` for ``--results DIR``), and the other overrides; an override that contradicts
    its flag is refused, naming both."""
    values, rest = dict(flags), []
    for item in overrides:
        key, sep, value = item.partition("=")
        group = key.lstrip("+")
        if not sep or group not in flags:
            rest.append(item)
            continue
        given = values.get(group)
        if given is not None and given != value:
            raise ValueError(
                f"the override {item} contradicts --{group} {given}; choose the {group} once "
                f"(--{group} {value} or --{group} {given})"
            )
        values[group] = value
    return values, rest


def results_problem(results: str | Path) -> str | None:
    """Why nothing can be written in the results folder, or None."""
    folder = Path(results).expanduser().absolute()
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"--results {results}: {existing} is a file, not a folder; pass --results a writable folder"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        why = err.strerror or type(err).__name__
        return f"--results {results}: cannot write in {existing} ({why}); pass --results a writable folder"
    return None


def file_option_problems(task: str, configured: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The file options of the configured metrics (name → options) that are set but name no file."""
    problems = []
    for name, options in configured.items():
        for key in FILE_OPTIONS:
            value = options.get(key)
            if value is not None and not Path(str(value)).expanduser().is_file():
                problems.append(
                    f"task {task}: metric {name}: {key}={value} is not a file; point "
                    f"task.metrics.{name}.{key} at it, or set it to null for the default"
                )
    return problems


def task_problems(spec: RunSpec) -> list[str]:
    """The task's data problems (``Task.data_problems``); where there are none, what its chosen metrics
    lack (their file options, then ``Metric.problems``). A task with data problems is not asked about its
    metrics: their files often come with the data (DNA's Sei checkpoint lies in the prepared folder), so
    the one cause is said once."""
    task = build_task(spec)
    problems = [f"task {spec.task}: {problem}" for problem in task.data_problems()]
    if problems:
        return problems
    configured = task.metric_options()
    problems = file_option_problems(spec.task, configured)
    return problems + [f"task {spec.task}: {problem}" for problem in metric_problems(configured)]


def training_steps(spec: RunSpec) -> int:
    """Optimiser steps of a run: ``budget.kimg`` thousand examples in global batches of ``budget.batch``."""
    return math.ceil(spec.budget.total_nimg / spec.budget.batch)


def warmup_problem(spec: RunSpec) -> str | None:
    """An adaptive sampler whose warm-up is not shorter than the run, or None."""
    warmup = getattr(build_noise_sampler(spec, build_loss_weight(spec)), "warmup_steps", None)
    steps = training_steps(spec)
    if warmup is None or warmup < steps:
        return None
    return (
        f"sampler {spec.sampler.label}: its warm-up of {warmup} steps is not shorter than the run's {steps} "
        f"training steps (budget.kimg={spec.budget.kimg:g} at budget.batch={spec.budget.batch}), so it would "
        f"train as its base sampler throughout; set budget.adaptive.warmup_steps below {steps} or raise "
        "budget.kimg"
    )


def device_problem(spec: RunSpec) -> str | None:
    """``device=cuda`` on a machine where torch sees no CUDA device (a local launch would fail only after
    the data are loaded), or None."""
    import torch

    if spec.device != "cuda" or torch.cuda.is_available():
        return None
    return (
        "device=cuda: torch sees no CUDA device on this machine; use device=auto or device=cpu here, or "
        "--launcher slurm for a GPU partition"
    )


def evaluation_size_problem(spec: RunSpec) -> str | None:
    """An evaluation of fewer than 2 generated samples or references: every metric compares two
    distributions by their spread (a Fréchet distance needs a covariance), so it would fail only after
    training; or None."""
    ev = spec.budget.eval
    small = {"samples": ev.samples, "final_samples": ev.final_samples, "reference": ev.reference}
    bad = [f"budget.eval.{key}={value}" for key, value in small.items() if value is not None and value < 2]
    if not bad:
        return None
    return f"{', '.join(bad)}: a metric needs at least 2 samples and 2 references; set them to 2 or more"


def slurm_problems(runs: Sequence[PlannedRun], request: LaunchRequest) -> list[str]:
    """Runs whose planned hours the profile's jobs and requeues do not cover, one line per (task, budget,
    resources)."""
    profile = load_profile(request.profile or DEFAULT_PROFILE)
    overrides = request.resources
    hours: dict[str, float] = {}
    problems: dict[str, None] = {}
    for run in runs:
        spec = run.spec
        resources = profile.resources(spec.task, TASKS.get(spec.task).modality, overrides)
        if spec.comparison_hash not in hours:
            hours[spec.comparison_hash] = planned_cost(spec)["device_hours"]
        planned = hours[spec.comparison_hash] / max(resources.gpus_per_run, 1)
        covered = resources.time_min / 60 * (1 + resources.max_requeues)
        if covered < planned:
            problem = (
                f"profile {profile.name}: jobs of {resources.time_min} min with {resources.max_requeues} "
                f"requeues cover {covered:.3g} h, but a run of {spec.task} at budget {spec.budget.name} is "
                f"planned at {planned:.3g} h ({max(resources.gpus_per_run, 1)} device(s) at "
                f"suite.launch.cost's rate); raise --time or the profile's max_requeues, or pick another "
                "--profile"
            )
            problems[problem] = None
    return list(problems)


def provisional_guidance(runs: Sequence[PlannedRun]) -> list[str]:
    """One ``warning:`` line per task that a ``paper`` or ``short`` run evaluates guided at a scale its task
    calls provisional (``Task.guidance_source``): a scale measured on none of the launch's samplers."""
    lines: dict[str, None] = {}
    for run in runs:
        spec = run.spec
        if spec.budget.name not in ("paper", "short") or spec.budget.eval.guidance == 1:
            continue
        source = TASKS.get(spec.task).guidance_source
        if source.startswith("provisional"):
            lines.setdefault(
                f"warning: {spec.task} at budget {spec.budget.name} is scored at classifier-free guidance "
                f"{spec.budget.eval.guidance:g}, {source}; before comparing, run "
                "`suite guidance RUN --scales ... --rescore` on every run"
            )
    return list(lines)


def preflight(runs: Sequence[PlannedRun], request: LaunchRequest) -> None:
    """Raise one :class:`PreflightError` naming each cause that would stop the runs that are not done
    (module docstring); return when there is none."""
    todo = [run for run in runs if run.status != "done"]
    if not todo:
        return
    problems: dict[str, None] = {}
    if problem := results_problem(request.results):
        problems[problem] = None
    checked: set[str] = set()
    for run in todo:
        spec = run.spec
        key = json.dumps(to_dict(spec.task_cfg), sort_keys=True, default=str)
        if key not in checked:
            checked.add(key)
            for problem in task_problems(spec):
                problems.setdefault(problem)
        if problem := warmup_problem(spec):
            problems.setdefault(problem)
        if problem := evaluation_size_problem(spec):
            problems.setdefault(problem)
        if request.launcher == "local" and (problem := device_problem(spec)):
            problems.setdefault(problem)
    if request.launcher == "slurm":
        for problem in slurm_problems(todo, request):
            problems.setdefault(problem)
    if problems:
        raise PreflightError(list(problems))
