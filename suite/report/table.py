"""The comparison table of ``suite table``, compiled from the rows of ``suite.report.rows``.

Comparison table: each cell is mean ± sample standard deviation (ddof = 1) over seeds of the final
evaluation (the row at the run's largest kimg); the best mean of the row by the metric's direction is
marked ``**…**``; the published value (``results/paper/infonoise_table.csv``: InfoNoise, Raya et al.,
arXiv 2602.18647) stands beside each measured value of the same task, sampler and metric, as above."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from suite.records import NULL_SAMPLER
from suite.registry import UnknownNameError
from suite.report.rendering import COMPARISON_CAPTION
from suite.report.rows import (
    EXTRA_SAMPLERS,
    PAPER_SAMPLERS,
    PUBLISHED_AS,
    ROW_KEYS,
    final_rows,
    finished,
    format_value,
    load_published,
    metric_of,
    null_values,
    published_gap,
    sampler_order,
    sort_rows,
    with_row_labels,
)


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
    other sampler label present (e.g. ``edm[p_mean=0.0]``), and last, where a comparison folder holds one,
    the null network's value (``NULL_SAMPLER``: raw output F ≡ 0, one evaluation, so no ± and never best;
    "–" in rows without one). A published value stands beside the measured
    one as "(paper x)", also where the sampler was not run ("– (paper x)"), when the row follows the
    published protocol; otherwise the cell names the difference, "(published x (50k samples); ours 128
    samples)", by the sampler's rows, or by the row's where the sampler was not run. A row re-scored on
    another grid or step count is a row of its own, "task (re-scored: InfoGrid, 18 steps)".
    """
    published = load_published() if published is None else published
    stats = comparison_stats(df, budget, published)
    samplers = sampler_order(list(PAPER_SAMPLERS + EXTRA_SAMPLERS) + stats["sampler"].tolist())
    nulls = null_values(finished(df, budget))
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
        if nulls:
            key = (first["task"], first["budget"], first["comparison_hash"], first["metric"])
            null = nulls.get(key) if first["protocol"] == "" else None
            line[NULL_SAMPLER] = "–" if null is None else format_value(null)
        lines.append(line)
    columns = ["task", "budget", "metric", "NFE", "seeds", *samplers, *([NULL_SAMPLER] if nulls else [])]
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
