"""The rows every table is compiled from: run records loaded and labelled, and the published numbers.

Inputs are the tidy evaluation rows (``records.jsonl``, one per run × evaluation point × metric; see
``suite.records``) of every run under a results folder, including GPU evidence copied to
``<results>/gpu/**`` in the same layout, joined with each run's ``run.json`` (status, sampler name).

Rules, so that no number is averaged with one it must not be averaged with:

* A table row is one comparison: task × budget × comparison hash × metric × data kind × origin (the
  folder above ``runs/``, e.g. ``gpu``). Runs of different comparison hashes (any fixed setting other
  than the sampler changed) are different rows, labelled with the hash when a task has several.
* Stand-in data (``stand_in_data``) and substitute metrics (``substitute_metric``: a Fréchet distance in
  another feature space than Inception-v3's) are rows of their own, labelled as such, and never get a
  published value beside them.
* Only runs whose ``run.json`` says ``done`` (or that have no run.json) enter the tables: a run stopped
  early would enter with an earlier, worse evaluation point.
* A row scored with another protocol than the run's own (``suite eval`` on InfoGrid or at another step
  count; ``suite.report.results``) is a row of its own, labelled "(re-scored: InfoGrid, 18 steps)", in the
  comparison table and in time to target; it never enters the own-protocol row's mean, std or crossings. So
  is the final EMA's row of a run that selects a checkpoint, labelled "(Karras, 18 steps, final EMA weights)".
  Its final value is the one at the run's final evaluation point.
* A published value stands beside a measured one only when that was measured with the published protocol
  (``published_gap``): Karras's grid at the published NFE and, for FID, 50k generated samples against the
  whole reference split (EDM's protocol, Karras et al. 2022, which ``budget=paper`` follows); otherwise the
  cell says what differs, "(published 0.94 (50k samples, whole reference split); ours 128 samples, 1024
  references)". The published sample counts of Sei-FID and MAUVE are not stated, so those cells always
  say so."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from suite.names import unknown_name
from suite.paths import results_folder
from suite.records import NULL_FILE, NULL_SAMPLER, read_jsonl
from suite.registry import UnknownNameError
from suite.report.results import GRID_LABELS, base_name, own_runs, protocol_words, records_frame

PUBLISHED_SAMPLERS = ("logu", "cos", "fm", "edm", "kg", "infonoise")


PAPER_SAMPLERS = ("logu", "cos", "fm", "edm", "kg", "kg-uncorrected", "infonoise")


EXTRA_SAMPLERS = ("laplace", "cauchy")


TARGET_BASELINES = ("logu", "cos", "fm", "edm")


PUBLISHED_AS = {"kg-uncorrected": "kg"}


PAPER_FILE = Path("paper") / "infonoise_table.csv"


REPO_PAPER_TABLE = Path(__file__).resolve().parents[2] / "results" / PAPER_FILE


FINISHED = ("done", "unknown")


NOT_REACHED = "not reached"


ROW_KEYS = [
    "task",
    "budget",
    "comparison_hash",
    "metric",
    "higher_is_better",
    "stand_in_data",
    "substitute_metric",
    "data_key",
    "origin",
    "protocol",
]


PUBLISHED_GRID = "karras"


PUBLISHED_SAMPLES = {"fid": 50_000}


def load_records(results: str | Path) -> pd.DataFrame:
    """Every evaluation row under ``results`` (``runs/`` and any other folder, e.g. ``gpu/``) as one frame;
    see ``suite.report.results.records_frame``."""
    return records_frame(results)


def load_own(folders: Sequence[str | Path], everything: bool = False) -> tuple[pd.DataFrame, str]:
    """The records under ``folders`` of the user's runs (``suite.report.results.own_runs``: the runs of
    committed evidence sets below them left out unless ``everything``); and the sets left out, as
    "results/cpu-smoke, results/gpu/…" ("" when none)."""
    frames, incomplete, left, damaged = [], {}, [], []
    for folder in folders:
        results_folder(folder)
        df = load_records(folder)
        runs = df.attrs.get("records_incomplete", {})
        damaged += df.attrs.get("damaged", [])
        if not everything and not df.empty:
            mine, sets = own_runs(folder)
            kept = {str(run.path) for run in mine}
            left += [str(s) for s in sets]
            df = df[df["run_dir"].isin(kept)]
            runs = {run: why for run, why in runs.items() if run in kept}
        frames.append(df)
        incomplete |= runs
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()
    df.attrs["records_incomplete"] = incomplete
    df.attrs["damaged"] = damaged
    return df, ", ".join(left)


def final_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Per run, metric and protocol, the row at the run's final evaluation point: the largest kimg of its
    own-protocol rows (a re-scored protocol has a final row only where it re-scored that point)."""
    if df.empty:
        return df
    own_kimg = df["kimg"].where(df["protocol"] == "")
    last = own_kimg.groupby([df["run_dir"], df["metric"]]).transform("max")
    final = df[df["kimg"] == last]
    return final.drop_duplicates(["run_dir", "metric", "protocol"], keep="last").reset_index(drop=True)


def curve_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` on its curves' protocol: without the final-protocol points (module docstring)."""
    if "final_protocol" not in df:
        return df
    return df[~df["final_protocol"].fillna(False).astype(bool)]


def finished(df: pd.DataFrame, budget: str | None = None) -> pd.DataFrame:
    """Rows of finished runs (status done, or no run.json), of ``budget`` when given."""
    keep = df["status"].isin(FINISHED)
    if budget is not None:
        keep &= df["budget"] == budget
    return df[keep]


def is_adaptive(name: str, recorded: object = None) -> bool:
    """Whether the sampler ``name`` adapts its density during training: as its run recorded it
    (``sampler_adaptive`` in run.json) when given, else as its registered class says (which imports the
    sampler's module; unknown names: no)."""
    if isinstance(recorded, bool | np.bool_):
        return bool(recorded)
    from suite.noise.sampler import SAMPLERS

    try:
        return bool(SAMPLERS.get(name).adaptive)
    except UnknownNameError:
        return False


def recorded_adaptive(df: pd.DataFrame) -> dict[str, object]:
    """Sampler label → whether its runs recorded an adaptive sampler (``sampler_adaptive``), where known."""
    if "sampler_adaptive" not in df:
        return {}
    known = df.dropna(subset=["sampler_adaptive"])
    return dict(zip(known["sampler"].astype(str), known["sampler_adaptive"], strict=True))


def sampler_order(labels: list[str]) -> list[str]:
    """Paper samplers first (LogU, Cos, FM, EDM, KG, KG uncorrected, InfoNoise), then Laplace, Cauchy, then
    other names; a label with parameters (``edm[p_mean=0.0]``) follows its sampler, ordered by the
    parameters' values."""
    known = PAPER_SAMPLERS + EXTRA_SAMPLERS
    rank = {name: i for i, name in enumerate(known)}

    def value(text: str) -> tuple[int, float, str]:
        try:
            return 0, float(text), ""
        except ValueError:
            return 1, 0.0, text

    def key(label: str) -> tuple[int, str, bool, list[tuple[str, tuple[int, float, str]]]]:
        name = base_name(label)
        params = (
            [item.partition("=") for item in label[len(name) + 1 : -1].split(",")] if label != name else []
        )
        return rank.get(name, len(known)), name, label != name, [(k, value(v)) for k, _, v in params]

    return sorted(set(labels), key=key)


def metric_label(metric: str, substitute: bool, higher_is_better: bool) -> str:
    """``fid ↓``, ``fd-rand-test (substitute) ↓``, ``mauve ↑``."""
    return f"{metric}{' (substitute)' if substitute else ''} {'↑' if higher_is_better else '↓'}"


def metric_of(row: pd.Series) -> str:
    return metric_label(row["metric"], bool(row["substitute_metric"]), bool(row["higher_is_better"]))


def _row_labels(keys: pd.DataFrame) -> pd.Series:
    """A readable, unique label per comparison row: task, stand-in data, origin, and the hash if needed."""
    base = keys["task"].astype(str) + np.where(
        keys["stand_in_data"], " (stand-in data: " + keys["data_key"].astype(str) + ")", ""
    )
    base = base + np.where(keys["origin"] != "", " (" + keys["origin"].astype(str) + ")", "")
    several = (
        keys.groupby(["task", "budget", "metric", "stand_in_data", "data_key", "origin"])[
            "comparison_hash"
        ].transform("nunique")
        > 1
    )
    base = base + np.where(several, " [comparison " + keys["comparison_hash"].astype(str) + "]", "")
    return base + keys["protocol"].astype(str).map(lambda p: protocol_words(p) if p else "")


def with_row_labels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``row`` column naming its comparison row."""
    if df.empty:
        return df.assign(row=pd.Series(dtype=object))
    keys = df[ROW_KEYS].drop_duplicates().reset_index(drop=True)
    keys["row"] = _row_labels(keys)
    return df.merge(keys, on=ROW_KEYS, how="left")


def null_values(df: pd.DataFrame) -> dict[tuple[str, str, str, str], float]:
    """(task, budget, comparison hash, metric) → the null network's value (``suite eval --null``), read from
    the ``NULL_FILE`` of each comparison folder that holds runs of ``df``; none where no folder has one. The
    null rows are scored on the runs' own protocol, so they stand beside own-protocol rows only."""
    if df.empty:
        return {}
    found: dict[tuple[str, str, str, str], float] = {}
    for folder in sorted({Path(run).parent.parent for run in df["run_dir"].dropna()}):
        for row in read_jsonl(folder / NULL_FILE):
            if row.get("sampler") == NULL_SAMPLER:
                key = (str(row["task"]), str(row["budget"]), str(row["comparison_hash"]), str(row["metric"]))
                found[key] = float(row["value"])
    return found


def format_value(x: float, scale: float | None = None) -> str:
    """Two decimals below 100, one above (FIDs of short runs reach the hundreds); ``scale`` (default x)
    picks the precision, so that a std is written to the decimals of its mean."""
    return f"{x:.1f}" if abs(x if scale is None else scale) >= 100 else f"{x:.2f}"


def load_published(results: str | Path | None = None) -> pd.DataFrame:
    """The paper's table in long form (task, metric, sampler, paper, paper_nfe); empty if not found.

    Looked for in ``<results>/paper/`` first, then in the repository's ``results/paper/``.
    """
    columns = ["task", "metric", "sampler", "paper", "paper_nfe"]
    candidates = ([Path(results) / PAPER_FILE] if results is not None else []) + [REPO_PAPER_TABLE]
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        return pd.DataFrame(columns=columns)
    wide = pd.read_csv(path)
    long = wide.melt(
        id_vars=["dataset", "task", "metric", "higher_is_better", "nfe"],
        value_vars=list(PUBLISHED_SAMPLERS),
        var_name="sampler",
        value_name="paper",
    )
    long = long.dropna(subset=["paper"]).rename(columns={"nfe": "paper_nfe"})
    long["metric"] = long["metric"].str.lower()
    return long[columns].reset_index(drop=True)


def _number(value: object) -> float:
    """A record's count as a float (NaN when the row does not record it)."""
    number = pd.to_numeric(value, errors="coerce")
    return math.nan if pd.isna(number) else float(number)


def _count(n: float) -> str:
    """50000 → "50k", 1024 → "1024"."""
    return f"{int(n) // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{int(n)}"


def published_gap(row: pd.Series, paper_nfe: float) -> str:
    """What separates a measured row from the published protocol; "" when nothing does.

    The published protocol is Karras's grid (``PUBLISHED_GRID``) at the published NFE (``paper_nfe``) and,
    for a metric of ``PUBLISHED_SAMPLES``, that many generated samples against the whole reference split
    (the row's ``n_reference`` equals its ``reference_split``). For other metrics the published sample
    count is not stated, which is a gap of its own. Returns "(50k samples, whole reference split); ours
    128 samples, 1024 of 60k references", to follow "published <value>".
    """
    theirs, ours = [], []
    if row["grid"] != PUBLISHED_GRID:
        theirs.append(f"{GRID_LABELS[PUBLISHED_GRID]} grid")
        ours.append(f"{GRID_LABELS.get(row['grid'], row['grid'])} grid")
    nfe = _number(row["nfe"])
    if not math.isnan(paper_nfe) and nfe != paper_nfe:
        theirs.append(f"NFE {int(paper_nfe)}")
        ours.append("NFE not recorded" if math.isnan(nfe) else f"NFE {int(nfe)}")
    samples = PUBLISHED_SAMPLES.get(row["metric"])
    n, reference, split = (_number(row[k]) for k in ("n_samples", "n_reference", "reference_split"))
    if samples is None or n != samples:
        theirs.append("sample count not stated" if samples is None else f"{_count(samples)} samples")
        ours.append("sample count not recorded" if math.isnan(n) else f"{_count(n)} samples")
    if samples is not None and (math.isnan(split) or reference != split):
        theirs.append("whole reference split")
        if math.isnan(reference):
            ours.append("reference count not recorded")
        else:
            of_split = "" if math.isnan(split) else f" of {_count(split)}"
            ours.append(f"{_count(reference)}{of_split} references")
    return f"({', '.join(theirs)}); ours {', '.join(ours)}" if theirs else ""


def sort_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Tasks in the paper's row order, then the others alphabetically."""
    if table.empty:
        return table
    published = load_published()
    order = {task: i for i, task in enumerate(dict.fromkeys(published["task"]))}
    task = table["task"].str.split(" ", n=1).str[0]
    key = task.map(lambda t: (order.get(t, len(order)), t))
    ordered = table.assign(_key=key).sort_values(["_key", "budget", "task"])
    return ordered.drop(columns="_key").reset_index(drop=True)


def parse_targets(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Target sampler labels from a comma list (``None``: the paper's fixed baselines); a label of no
    registered sampler is refused, naming the valid ones."""
    if spec is None:
        return TARGET_BASELINES
    from suite.noise.sampler import SAMPLERS

    labels = tuple(s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip())
    for label in labels:  # a swept label (edm[p_mean=0.0]) is its sampler's
        if base_name(label) not in SAMPLERS.names():
            raise ValueError(unknown_name("target sampler", base_name(label), sorted(SAMPLERS.names())))
    if not labels:
        raise ValueError(
            f"no target samplers in {spec!r}; give sampler labels such as {','.join(TARGET_BASELINES)}"
        )
    return labels
