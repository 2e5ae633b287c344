"""The one reader of a results folder: run directories, their records, stats and sampler logs.

A run directory is any folder under the results root that holds ``run.json``, ``records.jsonl`` or a SLURM
submission record ``slurm.json`` (the
layout ``runs/<task>-<budget>-<comparison hash>/<sampler label>/seed<k>/`` of ``suite.launch.plan``, also
when copied under another folder such as ``gpu/``: the folders between the root and ``runs/`` are the run's
*origin*). The table, the figures, the report and ``suite status`` all read through this module; the row
schema is ``suite.records.EVALUATION_COLUMNS``.

Protocol. Every row is scored with a solver grid at a number of steps. A run's own protocol is the one its
training loop evaluates with: Karras's grid at its config's ``task.solver_steps``. Rows that ``suite eval``
adds on another grid or step count carry a ``protocol`` label ("InfoGrid, 18 steps", "Karras, 8 steps");
own-protocol rows carry "". Rows written before rows recorded their steps get them back from their NFE
(Heun: N = (NFE + 1)/2, Euler: N = NFE; ``suite.run.solvers.nfe``), or else are read as the run's own; rows
without a grid were on Karras's grid. A run without ``config.yaml`` takes the steps of its first row as its
own: the training loop writes that row, since ``suite eval`` re-scores only finished runs.
Final protocol. A budget may score the last evaluation point another way than the curve before it
(``budget=paper``: the minimum FID over three ranges of 50k samples, EDM's protocol, after 10k-sample FIDs;
``suite.run.evaluation``). Such a row carries ``final_protocol`` True: an own-protocol row at its run's last
evaluation point of the metric that is the best of several seed ranges (``extra.n_ranges`` > 1) or was
scored on another number of samples than the run's first own-protocol row of the metric, or that a run
with best-validation selection scored with its selected raw weights (``extra.weights`` is
``suite.records.SELECTED_WEIGHTS``; ``suite.run.selection``): these are the run's final values. The final
EMA's rows of such a run (``extra.weights`` ``EMA_WEIGHTS``) are a protocol of their own, labelled
"…, final EMA weights", beside them and never averaged with them. Time to target
reads the curves without these points (``suite.report.table``), the figures mark them apart
(``suite.report.plots``). Records incomplete. A ``done`` run whose records stop short is flagged with the
reason (:attr:`RunRecord.records_incomplete`, the ``records_incomplete`` column), so that every view shows it
instead of averaging it in silently: records.jsonl or stats.jsonl hold lines that are not records (a torn
last line aside, see ``suite.records``) or are links; no evaluation row at all; and, where config.yaml
gives the budget (``budget.kimg``, ``batch``, ``eval_points``), a metric without a row at one of the
budget's evaluation points (``suite.run.schedule.evaluation_points``) or stats that stop before the budget's
last processed example.

Diverged. A ``done`` run whose stats.jsonl holds a loss that is not finite or above
``suite.records.DIVERGED_LOSS`` (recorded before such a run failed) has the status ``diverged``
(:attr:`RunRecord.diverged` says where): ``suite status`` shows it so, and the tables, which keep ``done``
runs only, leave it out.

One view of a run folder, :class:`RunRecord`, serves every reader: its run.json, config.yaml, run spec,
evaluation rows, stats, sampler log and sampler label, each read once and only when asked for.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from suite.records import (
    EMA_WEIGHTS,
    EVALUATION_COLUMNS,
    SELECTED_WEIGHTS,
    JsonlContent,
    LinkedRunFile,
    RunDirectory,
    diverged,
    scan_jsonl,
)
from suite.run.schedule import evaluation_points
from suite.run.spec import run_spec

if TYPE_CHECKING:
    from suite.run.spec import RunSpec

RUN_FILES = ("run.json", "records.jsonl", "slurm.json")
RUN_COLUMNS = (
    "run_dir",
    "origin",
    "status",
    "sampler_name",
    "sampler_adaptive",
    "total_kimg",
    "records_incomplete",
)
FLAG_COLUMNS = ("higher_is_better", "stand_in_data", "substitute_metric", "paper_metric")
EVIDENCE_MARKER = "EVIDENCE"
DAMAGED = "run.json damaged"
DIVERGED = "diverged"
GRID_LABELS = {"karras": "Karras", "infogrid": "InfoGrid", "infogrid-rescaled": "InfoGrid rescaled"}
EMA_BESIDE = f", {EMA_WEIGHTS} weights"  # the end of the final EMA rows' protocol label (selection)


def base_name(label: str) -> str:
    """Registered sampler name of a label: ``edm[p_mean=0.0]`` → ``edm``."""
    return label.split("[", 1)[0]


@dataclass(frozen=True)
class RunRecord:
    """One run directory under a results root, read lazily (each file once)."""

    path: Path
    origin: str

    @functools.cached_property
    def info(self) -> dict[str, Any]:
        """run.json ({} without one)."""
        return RunDirectory(self.path).info()

    @functools.cached_property
    def config(self) -> dict[str, Any]:
        """The resolved config.yaml as a dict ({} without one)."""
        path = self.path / "config.yaml"
        if not path.is_file():
            return {}
        return OmegaConf.to_container(OmegaConf.load(path), resolve=True)  # type: ignore[return-value]

    @functools.cached_property
    def spec(self) -> RunSpec | None:
        """The run's spec, read from its config.yaml (None for a run folder without one)."""

        return run_spec(OmegaConf.create(self.config)) if self.config else None

    @property
    def comparison(self) -> Path:
        """The comparison folder the run belongs to."""
        return self.path.parent.parent

    @property
    def damaged(self) -> bool:
        """Whether run.json is there but holds no record (``RunDirectory.info`` reported it)."""
        return not self.info and (self.path / "run.json").is_file()

    @property
    def status(self) -> str:
        """run.json's status; "unknown" without one; ``DAMAGED`` for a damaged one, which ``suite status``
        shows as such and the tables leave out (never a target); ``DIVERGED`` for a ``done`` run whose
        stats hold a diverged loss (:attr:`diverged`), which the tables leave out too."""
        if self.damaged:
            return DAMAGED
        status = str(self.info.get("status", "unknown"))
        return DIVERGED if status == "done" and self.diverged else status

    @functools.cached_property
    def diverged(self) -> str:
        """Where the training stats hold a loss that is not finite or above ``suite.records.DIVERGED_LOSS``
        (a run recorded ``done`` before divergence failed a run), or ''."""
        for row in self.stats():
            if diverged(row.get("loss")):
                return f"stats.jsonl: loss {row.get('loss')} at kimg {row.get('kimg')}: the run diverged"
        return ""

    @property
    def label(self) -> str:
        """Sampler label (``edm``, ``edm[p_mean=0.0]``)."""
        return str(self.info.get("sampler") or self.path.parent.name)

    @property
    def sampler_name(self) -> str:
        """Registered sampler name."""
        return str(self.info.get("sampler_name") or base_name(self.label))

    @property
    def seed(self) -> int:
        """Training seed (0 when run.json does not say)."""
        return int(self.info.get("seed", 0))

    @functools.cached_property
    def _records(self) -> JsonlContent | LinkedRunFile:
        return _scan(self.path / "records.jsonl")

    @functools.cached_property
    def _stats(self) -> JsonlContent | LinkedRunFile:
        return _scan(self.path / "stats.jsonl")

    def rows(self) -> list[dict[str, Any]]:
        """The evaluation rows (read once; [] for a linked records.jsonl, which is reported)."""
        return [] if isinstance(self._records, LinkedRunFile) else self._records.rows

    def stats(self) -> list[dict[str, Any]]:
        """The stats rows (read once; [] for a linked stats.jsonl, which is reported)."""
        return [] if isinstance(self._stats, LinkedRunFile) else self._stats.rows

    @functools.cached_property
    def records_incomplete(self) -> str:
        """Why a ``done`` run's records stop short ('' when they do not, and for any other status)."""
        if self.status != "done":
            return ""
        reasons = []
        for name, content in (("records.jsonl", self._records), ("stats.jsonl", self._stats)):
            if isinstance(content, LinkedRunFile):
                reasons.append(f"{name} is a link, not read")
            elif content.unreadable:
                reasons.append(f"{name} line(s) {', '.join(map(str, content.unreadable))} unreadable")
        rows, budget = self.rows(), self.config.get("budget") or {}
        if not rows:
            reasons.append("no evaluation rows")
        if all(key in budget for key in ("kimg", "batch", "eval_points")):
            # the run's own length (a budget in epochs derives it from the training examples it loaded)
            total = int(round(float(self.info.get("total_kimg") or budget["kimg"]) * 1000))
            spacing = str(budget.get("eval_spacing", "linear"))
            points = evaluation_points(total, int(budget["batch"]), int(budget["eval_points"]), spacing)
            for metric in sorted({str(row.get("metric")) for row in rows}):
                seen = {row.get("nimg") for row in rows if str(row.get("metric")) == metric}
                missing = [p for p in points if p not in seen]
                if missing:
                    kimg = ", ".join(f"{p / 1000:g}" for p in missing)
                    reasons.append(f"{metric}: no row at kimg {kimg} of {len(points)} evaluation points")
            reached = max((r["nimg"] for r in self.stats() if isinstance(r.get("nimg"), int)), default=0)
            if reached < total:
                reasons.append(f"stats stop at kimg {reached / 1000:g} of {total / 1000:g}")
        return "; ".join(reasons)

    @functools.cached_property
    def _sampler_log(self) -> JsonlContent | LinkedRunFile:
        return _scan(self.path / "sampler.jsonl")

    def sampler_log(self) -> list[dict[str, Any]]:
        """The sampler's density log (read once; [] for a linked sampler.jsonl, which is reported)."""
        return [] if isinstance(self._sampler_log, LinkedRunFile) else self._sampler_log.rows

    @property
    def adapted(self) -> bool:
        """Whether the sampler log holds a density rebuilt from observed losses (adaptive samplers)."""
        return any("cdf_change" in r for r in self.sampler_log())

    def profiles(self) -> list[dict[str, Any]]:
        """InfoNoise's logged profiles {u, m_hat, rho, pi} with the kimg of their rebuild."""
        return [
            r["profile"] | {"kimg": r["kimg"], "gate_c": r.get("gate_c")}
            for r in self.sampler_log()
            if "profile" in r
        ]


def _scan(path: Path) -> JsonlContent | LinkedRunFile:
    """A JSONL file's content, or the refusal of a link (reported on stderr)."""
    try:
        return scan_jsonl(path)
    except LinkedRunFile as err:
        print(f"warning: {err}", file=sys.stderr)
        return err


def origin_of(root: Path, run_dir: Path) -> str:
    """Folders between the results root and ``runs/``: "" for ``<root>/runs``, "gpu" for ``gpu/runs``."""
    parts = run_dir.relative_to(root).parts
    if "runs" in parts:
        return "/".join(parts[: parts.index("runs")])
    return "/".join(parts[:-3])


def evidence_origins(root: str | Path, origins: set[str]) -> set[str]:
    """The ``origins`` that lie in a committed evidence set: a folder below ``root`` (the root itself not
    counted, so naming a set as the results folder reads it as one's own) that holds a file named
    ``EVIDENCE_MARKER``, as each result set committed under ``results/`` does."""
    marked = set()
    for origin in origins:
        parts = Path(origin).parts
        if any(
            (Path(root).joinpath(*parts[:i]) / EVIDENCE_MARKER).is_file() for i in range(1, len(parts) + 1)
        ):
            marked.add(origin)
    return marked


def own_runs(results: str | Path, everything: bool = False) -> tuple[list[RunRecord], list[Path]]:
    """The user's runs under ``results``: those that lie in no committed evidence set
    (``evidence_origins``), every run with ``everything``; and the evidence sets left out, as folders. Every
    view that shows "your runs" by default (``suite table``, ``report``, ``plan-seeds``, ``status``,
    ``plot``) decides with this function."""
    runs = find_runs(results)
    if everything:
        return runs, []
    marked = evidence_origins(results, {run.origin for run in runs})
    return [run for run in runs if run.origin not in marked], [Path(results) / o for o in sorted(marked)]


def find_runs(results: str | Path) -> list[RunRecord]:
    """Every run directory under ``results``, sorted by path. Symbolic links to folders are followed down
    to each ``runs`` folder (``results`` or ``results/runs`` on another disk), each folder once; below a
    ``runs`` folder none is, as ``suite run`` refuses a run folder that a link leads out of its ``runs``
    (``suite.launch.plan.run_folder``)."""
    root = Path(results)
    if not root.is_dir():
        return []
    folders, seen = set(), set()
    for current, subfolders, files in os.walk(root, followlinks=True):
        here = Path(current)
        seen.add(os.path.realpath(here))
        below_runs = "runs" in here.relative_to(root).parts
        subfolders[:] = [
            name
            for name in subfolders
            if not (below_runs and os.path.islink(here / name)) and os.path.realpath(here / name) not in seen
        ]
        if any(name in files for name in RUN_FILES):
            folders.add(here)
    return [RunRecord(folder, origin_of(root, folder)) for folder in sorted(folders)]


def by_comparison(runs: list[RunRecord]) -> dict[Path, list[RunRecord]]:
    """Runs grouped by their comparison folder."""
    groups: dict[Path, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(run.comparison, []).append(run)
    return groups


def records_frame(results: str | Path) -> pd.DataFrame:
    """Every evaluation row under ``results`` as one frame, with per-run columns ``RUN_COLUMNS``, and in
    ``attrs["records_incomplete"]`` the reason of every run flagged (module docstring), rows or none.

    Rows written before the metric spec carried a label (schema 1) get ``paper_metric`` = not substitute
    and the metric name as label; rows without a grid were on Karras's grid.
    """
    rows = []
    runs = find_runs(results)
    incomplete = {}
    for run in runs:
        if run.records_incomplete:
            incomplete[str(run.path)] = run.records_incomplete
        for row in run.rows():
            rows.append(
                row
                | {
                    "run_dir": str(run.path),
                    "origin": run.origin,
                    "status": run.status,
                    "sampler_name": run.info.get("sampler_name") or base_name(str(row.get("sampler", ""))),
                    "sampler_adaptive": run.info.get("sampler_adaptive"),
                    "total_kimg": run.info.get("total_kimg", math.nan),
                    "records_incomplete": run.records_incomplete,
                }
            )
    df = pd.DataFrame(rows)
    for column in (*EVALUATION_COLUMNS, *RUN_COLUMNS):
        if column not in df:
            df[column] = pd.Series(dtype=object)
    if not df.empty:
        df["value"] = df["value"].astype(float)
        df["kimg"] = df["kimg"].astype(float)
        df["substitute_metric"] = df["substitute_metric"].fillna(False).astype(bool)
        df["paper_metric"] = df["paper_metric"].fillna(~df["substitute_metric"])
        df["metric_label"] = df["metric_label"].fillna(df["metric"])
        df["grid"] = df["grid"].fillna("karras")
        df["data_fingerprint"] = df["data_fingerprint"].fillna("")
        for flag in FLAG_COLUMNS:
            df[flag] = df[flag].fillna(False).astype(bool)
    df["data_key"] = np.where(df["stand_in_data"].astype(bool), df["data"].astype(object), "")
    steps_of = {str(run.path): own_steps(run) for run in runs}
    df = with_protocol(df, steps_of, {str(run.path): own_guidance(run) for run in runs})
    df = df.assign(final_protocol=final_protocol(df))
    df.attrs["records_incomplete"] = incomplete
    df.attrs["damaged"] = [str(run.path) for run in runs if run.damaged]
    return df


def final_protocol(df: pd.DataFrame) -> pd.Series:
    """Per row, whether it is a final-protocol point (module docstring)."""
    if df.empty:
        return pd.Series(dtype=bool)
    own = df["protocol"] == ""
    ranges = df["extra"].map(lambda e: e.get("n_ranges", 1) if isinstance(e, dict) else 1).astype(float)
    selected = weights_of(df) == SELECTED_WEIGHTS
    samples = pd.to_numeric(df["n_samples"], errors="coerce")
    group = [df["run_dir"], df["metric"]]
    kimg = df["kimg"].where(own)
    last = kimg == kimg.groupby(group).transform("max")
    first = samples.where(kimg == kimg.groupby(group).transform("min")).groupby(group).transform("first")
    other_samples = samples.notna() & first.notna() & (samples != first)
    return own & last & ((ranges > 1) | other_samples | selected)


def weights_of(df: pd.DataFrame) -> pd.Series:
    """Per row, ``extra.weights`` (the final rows of a run that selects a checkpoint), else None."""
    return df["extra"].map(lambda e: e.get("weights") if isinstance(e, dict) else None)


def own_steps(run: RunRecord) -> float:
    """The solver steps of a run's own evaluations: ``task.solver_steps`` of its config (NaN without one)."""
    steps = run.config.get("task", {}).get("solver_steps")
    return math.nan if steps is None else float(steps)


def own_guidance(run: RunRecord) -> float:
    """The guidance scale of a run's own evaluations: ``budget.eval.guidance`` of its config (NaN without)."""
    value = run.config.get("budget", {}).get("eval", {}).get("guidance")
    return math.nan if value is None else float(value)


def protocol_words(protocol: str) -> str:
    """ "(re-scored: InfoGrid, 18 steps)" for a protocol ``suite eval`` added; "(Karras, 18 steps, final EMA
    weights)" for the final EMA's rows the training loop keeps beside the selected ones."""
    return f" ({protocol})" if protocol.endswith(EMA_BESIDE) else f" (re-scored: {protocol})"


def protocol_label(grid: str, steps: float) -> str:
    """ "InfoGrid, 18 steps": the solver grid and step count a row was scored with."""
    name = GRID_LABELS.get(grid, grid)
    return name if math.isnan(steps) else f"{name}, {int(steps)} steps"


def with_protocol(
    df: pd.DataFrame, own: dict[str, float], own_scale: dict[str, float] | None = None
) -> pd.DataFrame:
    """``df`` with ``steps`` filled in, the run's ``own_steps`` and each row's ``protocol`` label ("" for the
    run's own protocol: Karras's grid at its own steps and its own guidance scale); ``own`` maps run_dir to
    its config's steps (NaN: the steps of the run's first row, in file order), ``own_scale`` to its config's
    guidance scale (a row scored at another, by ``suite eval --guidance``, is labelled with its scale); the
    final EMA's rows of a run that selects a checkpoint are labelled "…, final EMA weights"."""
    if df.empty:
        return df.assign(own_steps=pd.Series(dtype=float), protocol=pd.Series(dtype=object))
    nfe = pd.to_numeric(df["nfe"], errors="coerce")
    from_nfe = np.select([df["solver"] == "heun", df["solver"] == "euler"], [(nfe + 1) / 2, nfe], np.nan)
    steps = pd.to_numeric(df["steps"], errors="coerce").fillna(pd.Series(from_nfe, index=df.index))
    own_of = df["run_dir"].map(own).astype(float).fillna(steps.groupby(df["run_dir"]).transform("first"))
    steps = steps.fillna(own_of)
    scale = pd.to_numeric(df.get("guidance", pd.Series(math.nan, df.index)), errors="coerce")
    own_g = df["run_dir"].map(own_scale or {}).astype(float)
    other_scale = scale.notna() & own_g.notna() & (scale != own_g)
    ema_beside = weights_of(df) == EMA_WEIGHTS
    is_own = (df["grid"] == "karras") & (own_of.isna() | (steps == own_of)) & ~other_scale & ~ema_beside
    labels = [
        protocol_label(g, s) + (f", guidance {c:g}" if other else "") + (EMA_BESIDE if ema else "")
        for g, s, c, other, ema in zip(df["grid"], steps, scale, other_scale, ema_beside, strict=True)
    ]
    return df.assign(steps=steps, own_steps=own_of, protocol=np.where(is_own, "", labels))
