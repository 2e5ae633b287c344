"""Studies: one YAML file names a grid of runs, which ``suite run --study`` runs and ``suite table --study``
reports.

A study file (``studies/*.yaml``) is a mapping of these keys::

    name: reduced-bfashion         # required: the study's name
    description: ...               # optional: what the grid is for
    budget: short                  # required: a budget config (suite list)
    seeds: 3                       # required: a count N (seeds 0..N-1), a range "A-B" or a list "0,2,5"
    tasks: [bfashion]              # required: a list of tasks, or a mapping task -> list of its own overrides
    samplers: all                  # required: all, or a list of sampler names
    overrides: [budget.kimg=256]   # optional: key=value overrides of every run (a,b,c sweeps a value);
                                   # not task=, sampler=, budget=, seed= (the keys above) nor results=
    target: edm                    # optional: the sampler every other is compared with, fixed in advance

The grid is tasks × samplers × seeds (× sweeps) at the budget. Each task's runs are planned by
``suite.launch.plan.plan_runs`` with the study's overrides followed by the task's own, exactly as the
command line
``suite run --task T --sampler S1,S2 --budget B --seeds N [overrides]`` plans them: a study's runs are the run
folders of those command lines, so a study resumes, skips finished runs and shares comparisons with them.

On the command line a study may only be told where things sit (``STUDY_COMMAND_LINE_KEYS``: the device, the
data root, whether to download); these enter no hash, so ``suite table --study`` finds the same runs without
them. Everything that changes a run's numbers belongs in the study file.

``suite run --study FILE --runs-per-gpu K`` trains the grid K runs at a time on one device, as ``suite run
--task … --runs-per-gpu K`` does (``suite.launch.packed.run_packed``; on SLURM, K runs per array task).
``suite run --study FILE --dry-run`` checks every run (``suite.launch.plan.check_runs``) and what the runs
need (``suite.launch.preflight``), and prints the grid (one line per run and its status), the planned cost per
task row and in total (``suite.launch.cost.planned_cost`` of one run per comparison, times its runs), and with
``--launcher slurm`` the job arrays (``suite.launch.slurm``).
``suite table --study FILE`` keeps only the records of the grid's run folders and lists the grid's runs that
have no finished record as missing. A ``target:`` (one of the study's samplers) is declared before the runs:
the time-to-target table and the statistics compare every sampler with it, whatever its final value; a
study without one has each sampler compared with every baseline, Holm-adjusted (``suite.report.statistics``),
and the caption says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from suite.config import group_options, parse_overrides
from suite.launch.cost import planned_cost
from suite.launch.dispatch import launch
from suite.launch.plan import PlannedRun, check_runs, describe, plan_runs, resolve_samplers, resolve_task
from suite.launch.request import LaunchRequest
from suite.run.seeds import describe_seeds, parse_seeds

STUDY_KEYS = ("name", "description", "budget", "seeds", "tasks", "samplers", "overrides", "target")
REQUIRED_KEYS = ("name", "budget", "seeds", "tasks", "samplers")
STUDY_COMMAND_LINE_KEYS = ("device", "task.root", "task.download")


@dataclass(frozen=True)
class Study:
    """A checked study file."""

    path: Path
    name: str
    description: str
    budget: str
    seeds: tuple[int, ...]
    tasks: dict[str, tuple[str, ...]]
    samplers: tuple[str, ...]
    overrides: tuple[str, ...] = ()
    target: str | None = None

    @property
    def seed_range(self) -> str:
        return describe_seeds(self.seeds)


@dataclass(frozen=True)
class StudyRow:
    """One task of a study and its planned runs."""

    task: str
    runs: list[PlannedRun]


CHOSEN_ELSEWHERE = {  # override keys a study may not give: what chooses each instead
    "task": "the study's tasks: key chooses the tasks",
    "sampler": "the study's samplers: key chooses the samplers",
    "budget": "the study's budget: key chooses the budget",
    "seed": "the study's seeds: key chooses the seeds",
    "results": "suite run --results DIR chooses where runs are written, never a study file",
}


def _overrides(path: Path, key: str, value: Any) -> tuple[str, ...]:
    """A list of ``key=value`` strings (None: none), none of them choosing what the study's own keys or the
    command line choose (``CHOSEN_ELSEWHERE``: it would be ignored, or contradict them)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and "=" in item for item in value):
        raise ValueError(f"{path}: {key} must be a list of key=value strings, got {value!r}")
    for item in value:
        name = item.partition("=")[0].lstrip("+~")
        if name in CHOSEN_ELSEWHERE:
            raise ValueError(
                f"{path}: {key}: {item!r} is not a study override: {CHOSEN_ELSEWHERE[name]}; overrides "
                "set config values (e.g. budget.kimg=256)"
            )
    return tuple(value)


def _seeds(path: Path, value: Any) -> tuple[int, ...]:
    """The seeds of ``seeds`` (``suite.run.seeds.parse_seeds``: a count N, a range "A-B" or a list
    "0,2,5")."""
    try:
        return parse_seeds(value)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _samplers(path: Path, value: Any) -> tuple[str, ...]:
    if value == "all":
        return tuple(resolve_samplers("all"))
    if not isinstance(value, list) or not value or not all(isinstance(name, str) for name in value):
        raise ValueError(f"{path}: samplers must be all or a list of sampler names, got {value!r}")
    if len(set(value)) < len(value):
        raise ValueError(f"{path}: samplers names a sampler twice: {', '.join(value)}")
    try:
        return tuple(resolve_samplers(",".join(value)))
    except ValueError as err:
        raise ValueError(f"{path}: samplers: {err}") from None


def _tasks(path: Path, value: Any) -> dict[str, tuple[str, ...]]:
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        if len(set(value)) < len(value):
            raise ValueError(f"{path}: tasks names a task twice: {', '.join(value)}")
        tasks = dict.fromkeys(value, ())
    elif isinstance(value, dict):
        tasks = {str(name): _overrides(path, f"tasks.{name}", extra) for name, extra in value.items()}
    else:
        raise ValueError(
            f"{path}: tasks must be a list of tasks or a mapping task -> list of key=value overrides, "
            f"got {value!r}"
        )
    if not tasks:
        raise ValueError(f"{path}: tasks is empty; valid tasks: {', '.join(group_options('task'))}")
    for name in tasks:
        try:
            resolve_task(name)
        except ValueError as err:
            raise ValueError(f"{path}: tasks: {err}") from None
    return tasks


def _target(path: Path, value: Any, samplers: tuple[str, ...]) -> str | None:
    """The declared target: one of the study's samplers (None: not declared)."""
    if value is None:
        return None
    if value not in samplers:
        raise ValueError(
            f"{path}: target: {value!r} is not one of the study's samplers: {', '.join(samplers)}"
        )
    return str(value)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives a key twice (the plain loader keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_study(path: str | Path) -> Study:
    """Read and check a study file (format in the module docstring); errors name the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no study file {path}")
    try:
        raw = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # a SafeLoader
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ValueError(f"{path}: not valid YAML{at}: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a study file is a mapping of {', '.join(STUDY_KEYS)}, got {raw!r}")
    unknown = sorted(str(key) for key in set(raw) - set(STUDY_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(STUDY_KEYS)}")
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        raise ValueError(
            f"{path}: missing key(s) {', '.join(missing)}; a study needs {', '.join(REQUIRED_KEYS)}"
        )
    for key in ("name", "description"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise ValueError(f"{path}: {key} must be a non-empty string, got {raw[key]!r}")
    budgets = group_options("budget")
    if raw["budget"] not in budgets:
        raise ValueError(
            f"{path}: budget: unknown budget {raw['budget']!r}; valid budgets: {', '.join(budgets)}"
        )
    samplers = _samplers(path, raw["samplers"])
    return Study(
        path=path,
        name=raw["name"],
        description=" ".join(str(raw.get("description", "")).split()),
        budget=raw["budget"],
        seeds=_seeds(path, raw["seeds"]),
        tasks=_tasks(path, raw["tasks"]),
        samplers=samplers,
        overrides=_overrides(path, "overrides", raw.get("overrides")),
        target=_target(path, raw.get("target"), samplers),
    )


def _sets_a_location(item: str) -> bool:
    """Whether ``item`` is a plain ``key=value`` (no sweep, + or ~) of a ``STUDY_COMMAND_LINE_KEYS`` key."""
    try:
        (parsed,) = parse_overrides([item])
    except ValueError:
        return False
    plain = not (parsed.is_add() or parsed.is_delete() or parsed.is_sweep_override())
    return plain and parsed.key_or_group in STUDY_COMMAND_LINE_KEYS


def check_command_line(study: Study, overrides: list[str]) -> None:
    """Command-line overrides of a study may only say where things sit (``STUDY_COMMAND_LINE_KEYS``), one
    plain ``key=value`` each."""
    for item in overrides:
        if not _sets_a_location(item):
            raise ValueError(
                f"with --study, command-line overrides may only set {', '.join(STUDY_COMMAND_LINE_KEYS)} "
                f"(key=value, one value each), got {item!r}; put other settings in {study.path}'s overrides"
            )


def plan_study(study: Study, results: str | Path, extra: list[str] | None = None) -> list[StudyRow]:
    """The study's runs, task by task, planned by ``suite.launch.plan.plan_runs``; ``extra`` (where things
    sit, see ``check_command_line``) applies to every run."""
    rows = []
    for task, own in study.tasks.items():
        overrides = [*study.overrides, *own, *(extra or [])]
        try:
            runs = plan_runs(
                task,
                ",".join(study.samplers),
                study.budget,
                study.seeds,
                results,
                overrides,
            )
        except ValueError as err:
            raise ValueError(f"{study.path}: task {task}: {err}") from None
        rows.append(StudyRow(task, runs))
    return rows


def grid_runs(rows: list[StudyRow]) -> list[PlannedRun]:
    """Every run of a planned study, in grid order."""
    return [run for row in rows for run in row.runs]


def describe_cost(rows: list[StudyRow]) -> str:
    """Planned training cost per task row and in total: ``planned_cost`` of one run of each comparison,
    times that comparison's runs; each row names its planning rate by a number, the rates listed below
    (``suite.launch.cost.planning_rate``: a bench of the same network, else of its modality, else EDM's)."""
    lines = [
        f"  {'task':<14} {'runs':>5} {'GFLOP/example':>14} {'examples/run':>14} {'device-h/run':>13} "
        f"{'device-hours':>13}  rate"
    ]
    total_hours, total_runs, rates = 0.0, 0, []
    for row in rows:
        comparisons: dict[Path, list[PlannedRun]] = {}
        for run in row.runs:
            comparisons.setdefault(run.run_dir.parent.parent, []).append(run)
        for members in comparisons.values():
            cost = planned_cost(members[0].spec)
            hours = cost["device_hours"] * len(members)
            if cost["rate"] not in rates:
                rates.append(cost["rate"])
            label = (
                row.task if len(comparisons) == 1 else f"{row.task} [{members[0].run_dir.parent.parent.name}]"
            )
            lines.append(
                f"  {label:<14} {len(members):>5} {cost['gflop_per_example']:>14.4g} "
                f"{cost['examples']:>14,.0f} {cost['device_hours']:>13.3g} {hours:>13.3g}  "
                f"[{rates.index(cost['rate']) + 1}]"
            )
            total_hours += hours
            total_runs += len(members)
    lines.append(f"  {'total':<14} {total_runs:>5} {'':>14} {'':>14} {'':>13} {total_hours:>13.3g}")
    notes = [f"  [{number}] {rate}" for number, rate in enumerate(rates, start=1)]
    return "\n".join(
        ["planned cost (training only, evaluation not included) at each row's rate:", *lines, *notes]
    )


def describe_study(study: Study) -> str:
    """The study's header: name, file, description, budget, seeds, samplers, tasks and overrides."""
    lines = [f"study {study.name} ({study.path})"]
    if study.description:
        lines.append(f"  {study.description}")
    lines.append(
        f"  budget {study.budget}; seeds {study.seed_range}; {len(study.samplers)} sampler(s): "
        f"{', '.join(study.samplers)}"
    )
    for task, own in study.tasks.items():
        lines.append(f"  task {task}" + (f": {' '.join(own)}" if own else ""))
    if study.overrides:
        lines.append(f"  overrides: {' '.join(study.overrides)}")
    return "\n".join(lines)


def run_study(path: str | Path, overrides: list[str], request: LaunchRequest) -> int:
    """``suite run --study FILE``: check every run of the grid, then print it (``--dry-run``), submit it
    (``--launcher slurm``) or run it here (``suite.launch.dispatch.launch``)."""
    study = load_study(path)
    check_command_line(study, overrides)
    rows = plan_study(study, request.results, overrides)
    runs = grid_runs(rows)
    check_runs(runs)
    return launch(
        runs, request, lambda: "\n".join([describe_study(study), describe(runs), describe_cost(rows)])
    )
