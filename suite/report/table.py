"""The comparison table and the time-to-quality table, compiled from run records.

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
  comparison table and in time to target; it never enters the own-protocol row's mean, std or crossings.
  Its final value is the one at the run's final evaluation point.
* A published value stands beside a measured one only when that was measured with the published protocol
  (``published_gap``): Karras's grid at the published NFE and, for FID, 50k generated samples against the
  whole reference split (EDM's protocol, Karras et al. 2022, which ``budget=paper`` follows); otherwise the
  cell says what differs, "(published 0.94 (50k samples, whole reference split); ours 128 samples, 1024
  references)". The published sample counts of Sei-FID and MAUVE are not stated, so those cells always
  say so.

Comparison table: each cell is mean ± sample standard deviation (ddof = 1) over seeds of the final
evaluation (the row at the run's largest kimg); the best mean of the row by the metric's direction is
marked ``**…**``; the published value (``results/paper/infonoise_table.csv``: InfoNoise, Raya et al.,
arXiv 2602.18647) stands beside each measured value of the same task, sampler and metric, as above.

Time to target. Two targets per comparison, each the best final seed-mean quality q* among a set of
*fixed* (non-adaptive) samplers:

* the paper's fixed baselines (``TARGET_BASELINES``: LogU, Cos, FM, EDM at their configured defaults, i.e.
  exactly those labels; configurable), the reference of the paper's claim that InfoNoise "reaches the
  final quality of the strongest fixed schedule" with up to 3× less training compute;
* every fixed sampler that ran (Laplace, Cauchy, swept labels such as ``edm[p_mean=0.0]`` included).

For every sampler, with seed-mean curve (k_i, v_i) over the evaluation points, the processed examples to
target are the first crossing of q*, interpolated between evaluation points in log kimg × g(value), with g
the metric's scale (``MetricSpec.scale``: ln for FID-type values, logit for MAUVE, identity otherwise),

    ln k* = ln k_{i−1} + (g(q*) − g(v_{i−1}))·(ln k_i − ln k_{i−1})/(g(v_i) − g(v_{i−1})),

with i the first point whose v_i is finite and at least as good as q* (k* = k_0 when the first evaluation
already reaches q*, k* = k_i when v_{i−1} is NaN or ±inf, linear in kimg when k_{i−1} = 0), and "not
reached" when no point does. The curves are read on one protocol: a final point that the budget scores another
way (``final_protocol``, ``suite.report.results``: under ``budget=paper`` the minimum over three 50k-sample
FIDs after 10k-sample FIDs) is left out of them, so the target and every crossing come from the curves'
protocol while the comparison table's final values keep the final protocol. A power law v = a·k^(−b) is a
straight line there, so its crossing is exact; on the suite's curve model 2 + 8·(K/k)^0.7 the ratio's bias
without noise is at most 0.3% on the paper budget's log-spaced grid and up to 2.2% on 3 evenly spaced points
(docs/statistics.md, ``suite bench statistics``). NaN and
±inf values are shown as such and never ranked: they are never best, never a target, never a crossing, and
a seed mean with one of them is one too. A sampler with runs whose records are incomplete
(``suite.report.results``) has its cells marked "records incomplete", and ``suite table`` lists each such run
and why below the tables. The speed-up of a sampler is k*(T)/k*(sampler), whose
numerator is the target sampler T's first crossing of its own final value (its last evaluation, or earlier
when its curve reached that value before). With several seeds the spread comes from seed pairs: seed k of T
and seed k of the sampler (the same data order and initialisation), each pair's ratio taken against T's
seed-k final quality; the table gives the seed-mean speed-up with mean ± std over the pairs that reached
(the interval over every pair, censored ones included, is ``suite.report.statistics``'s).
The paper reports about 1.4× for InfoNoise on CIFAR-10 and up to 3× under modality shift.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from suite.names import unknown_name
from suite.registry import UnknownNameError
from suite.report.results import GRID_LABELS, base_name, records_frame

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


# -- loading -----------------------------------------------------------------------------------------
def load_records(results: str | Path) -> pd.DataFrame:
    """Every evaluation row under ``results`` (``runs/`` and any other folder, e.g. ``gpu/``) as one frame;
    see ``suite.report.results.records_frame``."""
    return records_frame(results)


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


# -- labels ------------------------------------------------------------------------------------------
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
    return base + np.where(keys["protocol"] != "", " (re-scored: " + keys["protocol"].astype(str) + ")", "")


def with_row_labels(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``row`` column naming its comparison row."""
    if df.empty:
        return df.assign(row=pd.Series(dtype=object))
    keys = df[ROW_KEYS].drop_duplicates().reset_index(drop=True)
    keys["row"] = _row_labels(keys)
    return df.merge(keys, on=ROW_KEYS, how="left")


def format_value(x: float, scale: float | None = None) -> str:
    """Two decimals below 100, one above (FIDs of short runs reach the hundreds); ``scale`` (default x)
    picks the precision, so that a std is written to the decimals of its mean."""
    return f"{x:.1f}" if abs(x if scale is None else scale) >= 100 else f"{x:.2f}"


# -- published numbers -------------------------------------------------------------------------------
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


# -- comparison table --------------------------------------------------------------------------------
def comparison_stats(
    df: pd.DataFrame, budget: str | None = None, published: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Long form of the comparison table: one line per row × sampler with mean, std, n, best, paper.

    ``std`` is the sample standard deviation over seeds (NaN for one seed). A NaN or ±inf value makes its
    mean NaN or ±inf (no seed is left out); ``best`` marks the best finite mean of the row by the metric's
    direction (ties all marked), so a non-finite mean is never best. ``incomplete`` counts the runs whose
    records are incomplete (``suite.report.results``). ``paper`` is the published value for real
    data and a real metric of the same task, sampler and metric (NaN otherwise); the paper's KG value
    stands beside both KG readings (``PUBLISHED_AS``: the paper does not say which one it ran).
    ``published_gap`` says how the sampler's rows depart from the published protocol ("" when they
    follow it; ``published_gap``).
    """
    final = with_row_labels(final_rows(finished(df, budget)))
    columns = [
        "row",
        *ROW_KEYS,
        "sampler",
        "mean",
        "std",
        "n",
        "incomplete",
        "nfe",
        "best",
        "paper",
        "paper_nfe",
        "published_gap",
    ]
    if final.empty:
        return pd.DataFrame(columns=columns)
    published = load_published() if published is None else published
    nfe_of = published.groupby(["task", "metric"])["paper_nfe"].first().to_dict()
    final["published_gap"] = [
        published_gap(row, float(nfe_of.get((row["task"], row["metric"]), math.nan)))
        for _, row in final.iterrows()
    ]
    stats = (
        final.groupby(["row", *ROW_KEYS, "sampler"], dropna=False)
        .agg(
            mean=("value", lambda s: s.mean(skipna=False)),
            std=("value", lambda s: s.std(skipna=False)),
            n=("value", "size"),
            incomplete=("records_incomplete", lambda s: int((s.fillna("") != "").sum())),
            nfe=("nfe", lambda s: "/".join(str(v) for v in sorted(s.dropna().unique()))),
            published_gap=("published_gap", lambda s: "; ".join(sorted({g for g in s if g}))),
        )
        .reset_index()
    )
    signed = np.where(stats["higher_is_better"], stats["mean"], -stats["mean"]).astype(float)
    signed[~np.isfinite(signed)] = np.nan
    best = pd.Series(signed, index=stats.index).groupby([stats[k] for k in ROW_KEYS]).transform("max")
    stats["best"] = np.isclose(signed, best, rtol=1e-12, atol=0.0)
    comparable = ~stats["stand_in_data"] & ~stats["substitute_metric"]
    stats["published_as"] = stats["sampler"].map(lambda label: PUBLISHED_AS.get(label, label))
    stats = stats.merge(
        published.rename(columns={"sampler": "published_as"}),
        on=["task", "metric", "published_as"],
        how="left",
    )
    stats.loc[~comparable, ["paper", "paper_nfe"]] = np.nan
    return stats[columns]


def _cell(
    mean: float | None, std: float, best: bool, paper: float, gap: str = "", incomplete: str = ""
) -> str:
    """ "mean ± std", "–" for a sampler not run (``mean`` None), "nan"/"inf"/"-inf" as such; bold when
    best, then ``incomplete`` in brackets and the published value, with ``gap`` when our protocol is not the
    published one."""
    if mean is None:
        text = "–"
    else:
        text = format_value(mean) + (
            "" if math.isnan(std) or not math.isfinite(mean) else f" ± {format_value(std, mean)}"
        )
    if best:
        text = f"**{text}**"
    if incomplete:
        text = f"{text} [{incomplete}]"
    if math.isnan(paper):
        return text
    return (
        f"{text} (published {format_value(paper)} {gap})" if gap else f"{text} (paper {format_value(paper)})"
    )


def comparison_table(
    df: pd.DataFrame, budget: str | None = None, published: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Rows comparisons, columns samplers: "mean ± std" over seeds of the final metric, best ``**marked**``.

    Columns: ``task`` (row label), ``budget``, ``metric`` (with its direction), ``NFE``, ``seeds``, then one
    column per sampler: LogU, Cos, FM, EDM, KG, KG uncorrected, InfoNoise, Laplace, Cauchy always, and any
    other sampler label present (e.g. ``edm[p_mean=0.0]``). A published value stands beside the measured
    one as "(paper x)", also where the sampler was not run ("– (paper x)"), when the row follows the
    published protocol; otherwise the cell names the difference, "(published x (50k samples); ours 128
    samples)", by the sampler's rows, or by the row's where the sampler was not run. A row re-scored on
    another grid or step count is a row of its own, "task (re-scored: InfoGrid, 18 steps)".
    """
    published = load_published() if published is None else published
    stats = comparison_stats(df, budget, published)
    samplers = sampler_order(list(PAPER_SAMPLERS + EXTRA_SAMPLERS) + stats["sampler"].tolist())
    lines = []
    for _, part in stats.groupby(ROW_KEYS, sort=False, dropna=False):
        first = part.iloc[0]
        line = {"task": first["row"], "budget": budget_cell(first, published), "metric": metric_of(first)}
        nfe = "/".join(sorted(set(part["nfe"])))
        paper_nfe = part["paper_nfe"].dropna()
        if not paper_nfe.empty and str(int(paper_nfe.iloc[0])) != nfe:
            nfe += f" (paper {int(paper_nfe.iloc[0])})"
        line["NFE"] = nfe
        counts = sorted(set(part["n"]))
        line["seeds"] = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        by_sampler = part.set_index("sampler")
        row_gap = "; ".join(sorted({g for g in part["published_gap"] if g}))
        paper_here = pd.DataFrame()
        if not (first["stand_in_data"] or first["substitute_metric"]):
            same = (published["task"] == first["task"]) & (published["metric"] == first["metric"])
            paper_here = published[same]
        paper_of = dict(zip(paper_here.get("sampler", []), paper_here.get("paper", []), strict=True))
        for sampler in samplers:
            paper = paper_of.get(PUBLISHED_AS.get(sampler, sampler), math.nan)
            if sampler in by_sampler.index:
                s = by_sampler.loc[sampler]
                flag = f"records incomplete: {s['incomplete']} of {s['n']} runs" if s["incomplete"] else ""
                line[sampler] = _cell(s["mean"], s["std"], bool(s["best"]), paper, s["published_gap"], flag)
            else:
                line[sampler] = _cell(None, math.nan, False, paper, row_gap)
        lines.append(line)
    columns = ["task", "budget", "metric", "NFE", "seeds", *samplers]
    return sort_rows(pd.DataFrame(lines, columns=columns))


SUITE_BUDGET = "budget: suite choice"


def budget_cell(row: pd.Series, published: pd.DataFrame) -> str:
    """The row's budget name, labelled "budget: suite choice" unless it is a budget whose values the paper
    publishes: the ``paper`` budget of a task with a row in the published table (its numbers are the
    paper's full-budget ones). Every other (task, budget) pair is the suite's own choice of length."""
    budget = str(row["budget"])
    if budget == "paper" and row["task"] in set(published["task"]):
        return budget
    return f"{budget} ({SUITE_BUDGET})"


def guidance_note(df: pd.DataFrame, budget: str | None = None) -> str:
    """The classifier-free guidance scale of each task whose finished runs are scored guided (the run's own
    protocol, ``budget.eval.guidance`` of its config), for the comparison caption: "; classifier-free
    guidance scale: owt 2 (provisional: …)"; "" when every row is unguided."""
    final = final_rows(finished(df, budget))
    if final.empty or "guidance" not in final:
        return ""
    own = final[final["protocol"] == ""].assign(scale=lambda f: pd.to_numeric(f["guidance"], errors="coerce"))
    guided = own[own["scale"].notna() & (own["scale"] != 1)]
    if guided.empty:
        return ""
    parts = [
        f"{task} {'/'.join(format(s, 'g') for s in sorted(set(part['scale'])))} ({guidance_source(task)})"
        for task, part in guided.groupby("task", sort=True)
    ]
    return f"; classifier-free guidance scale: {', '.join(parts)}"


def guidance_source(task: str) -> str:
    """Where the task's guidance scale comes from (``Task.guidance_source``: frozen in its config, or a
    provisional value until ``suite guidance`` chose it); a task not installed here reads as frozen."""
    from suite.task import TASKS, Task

    try:
        return TASKS.get(task).guidance_source
    except UnknownNameError:
        return Task.guidance_source


def comparison_caption(df: pd.DataFrame, budget: str | None = None) -> str:
    """``COMPARISON_CAPTION`` with the guidance scales of the guided rows (``guidance_note``)."""
    return COMPARISON_CAPTION + guidance_note(df, budget)


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


# -- time to target ----------------------------------------------------------------------------------
SCALES = ("log", "logit", "linear")
LOGIT_CLIP = 1e-6  # a bounded metric at 0 or 1 is read as 1e-6 or 1 − 1e-6 on the logit scale
_LOG_SCALE = ("fid", "sei-fid", "sp-mse", "random-feature-fd")


def scale_of(metric: str, recorded: object = None) -> str:
    """The scale a metric is compared on: the ``scale`` its record carries (``MetricSpec.scale``), else, for
    records written before they carried it, the scale its metric declares today (log for FID, Sei-FID, SP-MSE
    and Fréchet distances, logit for MAUVE, linear otherwise)."""
    if isinstance(recorded, str) and recorded in SCALES:
        return recorded
    name = str(metric)
    if name in _LOG_SCALE or name.startswith("fd-"):
        return "log"
    return "logit" if name.startswith("mauve") else "linear"


def to_scale(values: np.ndarray | float, scale: str) -> np.ndarray:
    """g(x) of the metric's scale: ln x (log; NaN at x ≤ 0), logit x clipped to [1e-6, 1 − 1e-6], or x."""
    x = np.asarray(values, dtype=float)
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.nan)
    if scale == "logit":
        c = np.clip(x, LOGIT_CLIP, 1 - LOGIT_CLIP)
        return np.log(c) - np.log1p(-c)
    if scale == "linear":
        return x
    raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")


def from_scale(values: np.ndarray | float, scale: str) -> np.ndarray:
    """g⁻¹: back from the scale to the metric's units."""
    u = np.asarray(values, dtype=float)
    if scale == "log":
        return np.exp(u)
    if scale == "logit":
        return 1.0 / (1.0 + np.exp(-u))
    if scale == "linear":
        return u
    raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")


def crossings(
    kimg: np.ndarray, values: np.ndarray, target: np.ndarray | float, higher_is_better: bool, scale: str
) -> np.ndarray:
    """Vectorised ``first_crossing`` over leading axes: curves ``kimg``, ``values`` of shape (…, P), targets
    of shape (…); NaN where a curve never reaches its target."""
    v = np.asarray(values, dtype=float)
    k = np.broadcast_to(np.asarray(kimg, dtype=float), v.shape)
    q = np.asarray(target, dtype=float)[..., None]
    sign = 1.0 if higher_is_better else -1.0
    tolerance = 1e-12 * np.maximum(1.0, np.abs(q))
    with np.errstate(invalid="ignore"):
        reached = np.isfinite(v) & (sign * (v - q) >= -tolerance)
    i = np.argmax(reached, axis=-1)[..., None]
    prev = np.maximum(i - 1, 0)
    k1, k0 = np.take_along_axis(k, i, -1)[..., 0], np.take_along_axis(k, prev, -1)[..., 0]
    v1, v0 = np.take_along_axis(v, i, -1)[..., 0], np.take_along_axis(v, prev, -1)[..., 0]
    u0, u1, uq = to_scale(v0, scale), to_scale(v1, scale), to_scale(q[..., 0], scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip((uq - u0) / (u1 - u0), 0.0, 1.0)
        in_log = np.exp(np.log(k0) + frac * (np.log(k1) - np.log(k0)))
    between = np.where(k0 > 0, in_log, k0 + frac * (k1 - k0))
    plain = (i[..., 0] == 0) | ~np.isfinite(u0) | ~np.isfinite(u1) | ~np.isfinite(frac)
    out = np.where(plain, k1, between)
    return np.where(reached.any(axis=-1), out, np.nan)


def first_crossing(
    kimg: np.ndarray, values: np.ndarray, target: float, higher_is_better: bool, scale: str = "linear"
) -> float:
    """kimg where a curve (increasing kimg) first reaches ``target``, interpolated in log kimg × the metric's
    ``scale`` (see the module docstring); NaN if never. Non-finite values never reach; after one, the
    crossing is the next point that does."""
    return float(crossings(kimg, values, target, higher_is_better, scale))


def seed_mean_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of each sampler's quality at each evaluation point, per comparison row."""
    rows = df if "row" in df else with_row_labels(df)
    return (
        rows.groupby(["row", *ROW_KEYS, "sampler", "sampler_name", "kimg"], dropna=False)["value"]
        .mean(skipna=False)
        .reset_index()
        .sort_values(["row", "sampler", "kimg"])
        .reset_index(drop=True)
    )


def _seed_curves(part: pd.DataFrame, sampler: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per seed, the (kimg, value) curve of ``sampler`` in one comparison row's rows."""
    mine = part[part["sampler"] == sampler]
    curves = {}
    for seed, rows in mine.groupby("seed"):
        curve = rows.groupby("kimg")["value"].mean().sort_index()
        curves[int(seed)] = (curve.index.to_numpy(dtype=float), curve.to_numpy(dtype=float))
    return curves


def same_row(frame: pd.DataFrame, line: pd.Series) -> pd.Series:
    """Rows of ``frame`` in the comparison row of ``line``: same row label, budget and metric (unique per
    comparison, and free of the missing values that make key-by-key equality fail)."""
    keys = ["row", "budget", "metric"]
    return (frame[keys] == line[keys]).all(axis=1)


def pair_log_ratios(
    target: tuple[np.ndarray, np.ndarray],
    sampler: tuple[np.ndarray, np.ndarray],
    higher_is_better: bool,
    scale: str,
) -> tuple[np.ndarray, np.ndarray]:
    """ln r and its censoring for seed pairs (vectorised over leading axes): ``target`` and ``sampler`` are
    (kimg, values) curves of shape (…, P). The target's final value q = T[…, −1]; r = k*(T, q)/k*(S, q).
    ``censored`` is −1 where the sampler never reaches q within its run: it is right-censored at its last
    evaluation L, so ln r ≤ ln k*(T, q) − ln L (the bound is returned); +1 where it already reaches q at
    its first evaluation k_0, whose crossing lies somewhere before: ln r ≥ ln k*(T, q) − ln k_0; 0 where
    the crossing is interpolated between two evaluations."""
    (tk, tv), (sk, sv) = target, sampler
    sv = np.asarray(sv, dtype=float)
    sk = np.broadcast_to(np.asarray(sk, dtype=float), sv.shape)
    q = np.asarray(tv, dtype=float)[..., -1]
    numerator = crossings(tk, tv, q, higher_is_better, scale)
    denominator = crossings(sk, sv, q, higher_is_better, scale)
    never = np.isnan(denominator)
    sign = 1.0 if higher_is_better else -1.0
    with np.errstate(invalid="ignore"):
        at_first = np.isfinite(sv[..., 0]) & (sign * (sv[..., 0] - q) >= -1e-12 * np.maximum(1.0, np.abs(q)))
    at_first &= (sk[..., 0] > 0) & (sk.shape[-1] > 1)
    censored = np.where(never, -1, np.where(at_first, 1, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(numerator) - np.log(np.where(never, sk[..., -1], denominator))
    return log_ratio, censored


def paired_speedups(
    part: pd.DataFrame, target_sampler: str, sampler: str, higher_is_better: bool, scale: str = "linear"
) -> tuple[np.ndarray, np.ndarray]:
    """ln speed-up of ``sampler`` over ``target_sampler`` per seed pair with its censoring (−1, 0, +1;
    ``pair_log_ratios``), over the seeds both ran (seed order); pairs whose ratio is undefined (a
    non-finite target final, a crossing at kimg 0) are left out."""
    target_curves, curves = _seed_curves(part, target_sampler), _seed_curves(part, sampler)
    logs, censored = [], []
    for seed in sorted(set(target_curves) & set(curves)):
        log_ratio, cut = pair_log_ratios(target_curves[seed], curves[seed], higher_is_better, scale)
        if np.isfinite(log_ratio):
            logs.append(float(log_ratio))
            censored.append(int(cut))
    return np.asarray(logs, dtype=float), np.asarray(censored, dtype=int)


def _incomplete(rows: pd.DataFrame, sampler: str) -> bool:
    """Whether a run of ``sampler`` among ``rows`` has incomplete records."""
    return bool((rows.loc[rows["sampler"] == sampler, "records_incomplete"].fillna("") != "").any())


def row_scale(part: pd.DataFrame) -> str:
    """The scale of a comparison row's metric (``scale_of`` of its first record)."""
    first = part.iloc[0]
    return scale_of(first["metric"], first["scale"] if "scale" in part else None)


def time_to_target(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] | None = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """Processed examples (kimg) each sampler needs to reach the best final quality of ``targets``.

    ``targets``: sampler labels whose best final seed-mean quality is the target (default the paper's
    fixed baselines LogU, Cos, FM, EDM); ``None`` takes every fixed sampler that ran. Adaptive samplers never
    set the target. ``declared``: a sampler label fixed in advance (a study's ``target:``), which is then the
    target wherever it finished, whatever its final quality. One line per comparison row × sampler:
    ``target_sampler`` and ``target`` (its final seed-mean quality), ``target_kimg`` (the speed-up's
    numerator: the target sampler's first crossing of that value), ``kimg_to_target`` (NaN when never
    reached), ``reached``, ``result`` ("12.3" or "not reached"), ``speedup`` = target_kimg/kimg_to_target on
    seed-mean curves, and over seed pairs (``paired_speedups``) ``pair_mean``, ``pair_std`` (ddof = 1) of
    the pairs that reached, ``pair_reached`` and ``pairs``. Rows with
    no finished sampler of the target set are left out.
    """
    columns = [
        "row",
        *ROW_KEYS,
        "target_sampler",
        "target",
        "target_kimg",
        "sampler",
        "sampler_name",
        "kimg_to_target",
        "reached",
        "result",
        "speedup",
        "pair_mean",
        "pair_std",
        "pair_reached",
        "pairs",
    ]
    rows = curve_rows(with_row_labels(finished(df, budget)))
    curves = seed_mean_curves(rows)
    recorded = recorded_adaptive(rows)
    lines = []
    for _, part in curves.groupby(ROW_KEYS, sort=False, dropna=False):
        higher = bool(part["higher_is_better"].iloc[0])
        finals = part.groupby(["sampler", "sampler_name"])["value"].last(skipna=False).reset_index()
        adaptive = [
            is_adaptive(name, recorded.get(label))
            for label, name in zip(finals["sampler"], finals["sampler_name"], strict=True)
        ]
        fixed = finals[~np.asarray(adaptive, dtype=bool) & np.isfinite(finals["value"])]
        if declared is not None:
            fixed = fixed[fixed["sampler"] == declared]
        elif targets is not None:
            fixed = fixed[fixed["sampler"].isin(list(targets))]
        if fixed.empty:
            continue
        best = fixed.loc[fixed["value"].idxmax() if higher else fixed["value"].idxmin()]
        seeds = rows[same_row(rows, part.iloc[0])]
        scale = row_scale(seeds)
        crossing = {}
        for (sampler, name), curve in part.groupby(["sampler", "sampler_name"]):
            crossing[sampler] = (
                name,
                first_crossing(
                    curve["kimg"].to_numpy(), curve["value"].to_numpy(), float(best["value"]), higher, scale
                ),
            )
        reference = crossing[best["sampler"]][1]
        keys = part.iloc[0][ROW_KEYS].to_dict()
        for sampler in sampler_order(list(crossing)):
            name, k = crossing[sampler]
            logs, censored = paired_speedups(seeds, best["sampler"], sampler, higher, scale)
            ratios = np.exp(logs[censored >= 0])
            lines.append(
                {
                    "row": part["row"].iloc[0],
                    **keys,
                    "target_sampler": best["sampler"],
                    "target": float(best["value"]),
                    "target_kimg": reference,
                    "sampler": sampler,
                    "sampler_name": name,
                    "kimg_to_target": k,
                    "reached": not math.isnan(k),
                    "result": (NOT_REACHED if math.isnan(k) else format_value(k))
                    + (" [records incomplete]" if _incomplete(seeds, sampler) else ""),
                    "speedup": reference / k if k > 0 else math.nan,
                    "pair_mean": float(np.mean(ratios)) if len(ratios) else math.nan,
                    "pair_std": float(np.std(ratios, ddof=1)) if len(ratios) > 1 else math.nan,
                    "pair_reached": len(ratios),
                    "pairs": len(logs),
                }
            )
    return pd.DataFrame(lines, columns=columns)


def speedup_text(line: pd.Series | dict) -> str:
    """ "1.33×", with the seed-pair spread when there are several pairs: "1.33× (pairs 1.30 ± 0.05, n=2)",
    "; 1 of 3 not reached" when some pairs never reach, and "not reached" without a seed-mean crossing."""
    if not line["reached"]:
        text = NOT_REACHED
    else:
        text = f"{line['speedup']:.2f}×"
    pairs, reached = int(line["pairs"]), int(line["pair_reached"])
    if pairs < 2:
        return text
    spread = f"{line['pair_mean']:.2f}" if reached else "–"
    if reached > 1:
        spread += f" ± {line['pair_std']:.2f}"
    missing = f"; {pairs - reached} of {pairs} not reached" if reached < pairs else ""
    return f"{text} (pairs {spread}, n={reached}{missing})"


def _infonoise_speedups(part: pd.DataFrame) -> str:
    """InfoNoise's speed-up cell of one comparison row (each InfoNoise label when there are several)."""
    info = part[part["sampler_name"] == "infonoise"]
    texts = [
        (label, speedup_text(line)) for label, (_, line) in zip(info["sampler"], info.iterrows(), strict=True)
    ]
    if not texts:
        return "–"
    if len(texts) == 1:
        return texts[0][1]
    return "; ".join(f"{label}: {text}" for label, text in texts)


def time_to_target_table(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """Wide view of ``time_to_target``: rows comparisons, columns the kimg each sampler needs.

    ``target (<targets>)`` is the target sampler and its final quality, the sampler columns the kimg to it,
    ``InfoNoise speed-up`` the speed-up over it ("1.40×", "not reached", or "–" without an InfoNoise run,
    with the seed-pair spread when there are several seeds); ``target (all fixed)`` and ``InfoNoise
    speed-up (all fixed)`` do the same against the best of every fixed sampler. A comparison without a
    sampler of ``targets`` shows "–" in those columns. With ``declared`` (a study's ``target:``) the first
    target is that sampler, named ``target (declared)``.
    """
    against = time_to_target(df, budget, targets, declared)
    against_all = time_to_target(df, budget, None)
    samplers = sampler_order(against_all["sampler"].tolist())
    name = "target (declared)" if declared is not None else f"target ({', '.join(targets)})"
    lines = []
    for _, part_all in against_all.groupby(ROW_KEYS, sort=False, dropna=False):
        first = part_all.iloc[0]
        part = against[same_row(against, first)] if not against.empty else against
        line = {"task": first["row"], "budget": first["budget"], "metric": metric_of(first)}
        if part.empty:
            line[name] = "–"
            line |= dict.fromkeys(samplers, "–")
            line["InfoNoise speed-up"] = "–"
        else:
            line[name] = f"{part.iloc[0]['target_sampler']}: {format_value(part.iloc[0]['target'])}"
            by_sampler = part.set_index("sampler")
            for sampler in samplers:
                line[sampler] = by_sampler.loc[sampler, "result"] if sampler in by_sampler.index else "–"
            line["InfoNoise speed-up"] = _infonoise_speedups(part)
        line["target (all fixed)"] = f"{first['target_sampler']}: {format_value(first['target'])}"
        line["InfoNoise speed-up (all fixed)"] = _infonoise_speedups(part_all)
        lines.append(line)
    columns = [
        "task",
        "budget",
        "metric",
        name,
        *samplers,
        "InfoNoise speed-up",
        "target (all fixed)",
        "InfoNoise speed-up (all fixed)",
    ]
    return sort_rows(pd.DataFrame(lines, columns=columns))


# -- rendering ---------------------------------------------------------------------------------------
def to_markdown(table: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown table of string cells (``|`` escaped)."""

    def clean(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = [clean(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for values in table.itertuples(index=False):
        lines.append("| " + " | ".join(clean(v) for v in values) + " |")
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_SYMBOLS = {"±": r"$\pm$", "×": r"$\times$", "↓": r"$\downarrow$", "↑": r"$\uparrow$", "–": "--"}


def latex_cell(text: object) -> str:
    """LaTeX-escaped cell text; ``**x**`` becomes ``\\textbf{x}``."""
    out = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))
    for symbol, command in _LATEX_SYMBOLS.items():
        out = out.replace(symbol, command)
    return re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", out)


def to_latex(table: pd.DataFrame, caption: str) -> str:
    """A booktabs LaTeX table (pandas Styler) of escaped string cells."""
    cells = table.map(latex_cell).rename(columns=latex_cell)
    return cells.style.hide(axis="index").to_latex(
        hrules=True, caption=latex_cell(caption), column_format="l" * len(cells.columns)
    )


NO_ROWS = "no rows (no finished runs)"
NO_TARGET = "no rows (no comparison has a finished fixed sampler to set the target)"
COMPARISON_CAPTION = (
    "Final quality, mean ± std over seeds (best per row in bold); published values (InfoNoise, "
    "arXiv 2602.18647, as transcribed in results/paper/, whose README states their provenance) in "
    "parentheses. kg: Kingma & Gao's adaptive schedule with its 1/p importance correction (in "
    "expectation the objective of its EDM base prior, with lower variance); kg-uncorrected: the same "
    "histogram without the correction (the allocation moves to p·w). The paper does not say which KG "
    'it ran, so its KG value stands beside both (docs/kg.md). A budget marked "budget: suite choice" is '
    "not one the paper publishes numbers for (the paper's numbers are at its full budget, `paper`)"
)


def target_caption(targets: Sequence[str] = TARGET_BASELINES, declared: str | None = None) -> str:
    """The time-to-target caption, stating both targets and the speed-up's numerator and spread."""
    first = (
        f"Target (declared): {declared}'s final seed-mean quality, fixed in the study file before the runs"
        if declared is not None
        else f"Target ({', '.join(targets)}): the best final seed-mean quality among the paper's fixed "
        "baselines at their default settings"
    )
    return (
        f"Processed examples (kimg) until each sampler's seed-mean curve first reaches the target "
        f"(interpolated in log kimg × the metric's scale between evaluations). {first}; target (all fixed): "
        "the best among every fixed sampler that ran, including Laplace, Cauchy and swept labels such as "
        "edm[p_mean=…]; adaptive samplers (KG, InfoNoise) never set a target. InfoNoise speed-up = k_T / "
        "k_InfoNoise, where k_T is the target sampler's first crossing of its own final seed-mean value (at "
        "most its last evaluation) and k_InfoNoise InfoNoise's first crossing of the same value; in "
        "parentheses, mean ± std of that ratio over seed pairs (seed k of both samplers, against the target "
        "sampler's seed-k final value) with the number of pairs that reached it. All of it is read on the "
        "curves' protocol: a final point the budget scores another way (budget=paper: the best of three "
        "50k-sample FIDs after 10k-sample ones) is left out, so there the target is the last value on the "
        "curve, not the final value of the comparison table"
    )


def render(table: pd.DataFrame, fmt: str, caption: str, empty: str = NO_ROWS) -> str:
    """``table`` as Markdown (with a heading), LaTeX or CSV; ``empty`` says why a table has no rows."""
    if table.empty:
        return f"{'# ' if fmt == 'csv' else ''}{caption}: {empty}\n"
    if fmt == "md":
        return f"### {caption}\n\n{to_markdown(table)}\n"
    if fmt == "latex":
        return to_latex(table, caption)
    if fmt == "csv":
        return f"# {caption}\n{table.to_csv(index=False)}"
    raise ValueError(f"unknown format {fmt!r}; valid: md, latex, csv")


def incomplete_note(df: pd.DataFrame, fmt: str = "md") -> str:
    """The finished runs whose records are incomplete and why (``load_records``'s
    ``attrs["records_incomplete"]``, runs without a row included), one line each; '' when there are none.
    Lines are commented (``#``, ``%``) in CSV and LaTeX."""
    runs = df.attrs.get("records_incomplete", {})
    if not runs:
        return ""
    lines = [
        f"Records incomplete: {len(runs)} done run(s) whose records stop short; their cells are marked "
        "[records incomplete]:",
        *(f"- {run}: {why}" for run, why in sorted(runs.items())),
    ]
    prefix = {"csv": "# ", "latex": "% "}.get(fmt, "")
    return "".join(f"{prefix}{line}\n" for line in lines)


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


def floor_caption(df: pd.DataFrame, budget: str | None = None) -> str:
    """A sentence per (task, metric) whose final rows record a real-vs-real floor (Sei-FID): the metric's
    label, which names the layer the table shows, and the floor at that layer and at the other layer
    recorded beside it (the distance between two disjoint halves of the reference); "" when none does."""
    if df.empty or "extra" not in df:
        return ""
    final = final_rows(finished(df, budget))
    notes = []
    for (task, metric), part in final.groupby(["task", "metric"], sort=True):
        extras = [e for e in part["extra"] if isinstance(e, dict) and any(k.startswith("floor_") for k in e)]
        if not extras:
            continue
        layers = sorted({k.removeprefix("floor_") for e in extras for k in e if k.startswith("floor_")})
        floors = "; ".join(
            f"{layer} "
            + "/".join(sorted({format_value(e[f"floor_{layer}"]) for e in extras if f"floor_{layer}" in e}))
            for layer in layers
        )
        halves = "/".join(sorted({str(int(e["n_floor"])) for e in extras if "n_floor" in e}))
        label = part["metric_label"].iloc[-1]
        pair = f"{halves} vs {halves} reference examples"
        notes.append(f" {metric} ({task}): {label}; real-vs-real floor ({pair}) {floors}.")
    return "".join(notes)
