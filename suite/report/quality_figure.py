"""The quality figure: each sampler's metric against processed examples (seed mean with the 95% t interval of
the mean as its band), the time-to-target crossings, and a final point scored another way as a marker of
its own (``suite.report.plots`` says which runs each figure draws); a single evaluation point is drawn as the
samplers side by side, a dot per seed, not as a curve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from suite.report.figures import (
    new_figure,
    save_figure,
    seaborn_styles,
    style_map,
)
from suite.report.rows import (
    curve_rows,
    metric_label,
)
from suite.report.statistics import t_band
from suite.report.time_to_target import time_to_target


def quality_label(row: pd.Series) -> str:
    """Axis label of a metric: name, substitute flag, direction."""
    better = "higher" if row["higher_is_better"] else "lower"
    return (
        f"{metric_label(row['metric'], bool(row['substitute_metric']), bool(row['higher_is_better']))} "
        f"({better} is better)"
    )


def final_protocol_text(final: pd.DataFrame) -> str:
    """The protocol of final-protocol rows in words: "50000 samples, best of 3 seed ranges"; "…, 5 sets,
    best-validation raw weights" for the selected weights of a run that selects a checkpoint."""
    samples = sorted({int(n) for n in pd.to_numeric(final["n_samples"], errors="coerce").dropna()})
    extras = [e for e in final["extra"] if isinstance(e, dict)]
    ranges = sorted({int(e.get("n_ranges", 1)) for e in extras})
    sets = sorted({int(e.get("n_sets", 1)) for e in extras})
    weights = sorted({str(e["weights"]) for e in extras if e.get("weights")})
    text = f"{'/'.join(map(str, samples))} samples" if samples else "another protocol"
    text += f", best of {'/'.join(map(str, ranges))} seed ranges" if ranges and ranges != [1] else ""
    text += f", {'/'.join(map(str, sets))} sets" if sets and sets != [1] else ""
    return text + "".join(f", {w} weights" for w in weights)


def figure_target(rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``time_to_target`` against the paper's fixed baselines, or against every fixed sampler when none of
    them ran; with the words naming which."""
    target = time_to_target(rows)
    if not target.empty:
        return target, "best of the paper's fixed baselines"
    return time_to_target(rows, targets=None), "best fixed sampler"


def _target_words(lines: pd.DataFrame, one_protocol: bool) -> str:
    """ "final edm", or "edm's last curve" when the final point has a protocol of its own."""
    name = lines["target_sampler"].iloc[0]
    return f"final {name}" if one_protocol else f"{name}'s last curve"


def plot_quality(rows: pd.DataFrame, title: str, base: Path) -> list[Path]:
    """Write ``quality_figure`` of ``rows`` to ``base``.png and .pdf."""
    return save_figure(quality_figure(rows, title), base)


def one_evaluation_figure(rows: pd.DataFrame, title: str) -> Figure:
    """The quality of one evaluation point (one kimg): the samplers side by side, each seed a dot in the
    sampler's colour and marker, its seed mean a bar across them; no curve and no time to target, which
    need two points."""
    styles = style_map(rows["sampler"].unique().tolist())
    fig, ax = new_figure(figsize=(9, 5.6))
    for i, (sampler, style) in enumerate(styles.items()):
        values = rows.loc[rows["sampler"] == sampler, "value"].to_numpy()
        offsets = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(i + offsets, values, color=style.color, marker=style.marker, s=30, zorder=3)
        ax.hlines(values.mean(), i - 0.3, i + 0.3, color=style.color, lw=2)
    ax.set_xticks(range(len(styles)), list(styles), rotation=30, ha="right")
    ax.set_xlabel("sampler")
    ax.set_ylabel(quality_label(rows.iloc[0]))
    seeds = int(rows.groupby("sampler")["seed"].nunique().max()) if "seed" in rows else 1
    what = f"dots: {seeds} seeds, bar: their mean" if seeds > 1 else "one seed each"
    ax.set_title(f"{title}\none evaluation, at {rows['kimg'].iloc[0]:g} kimg ({what})")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def quality_figure(rows: pd.DataFrame, title: str) -> Figure:
    """Quality versus processed examples: mean over seeds with the 95% confidence interval of that mean as
    its band (``suite.report.statistics.t_interval``; no band with one seed), per sampler.

    The horizontal line is the time-to-target target (the best final quality of the paper's fixed baselines,
    else of every fixed sampler; ``figure_target``) and the markers on it are where each seed-mean curve
    first reaches it; a dotted line marks the best final quality of every fixed sampler when it differs.
    A final point scored with another protocol than the curve (``final_protocol``, ``suite.report.results``)
    is not joined to it: it is drawn as a black-edged diamond in the sampler's colour (seed mean), named in
    the legend by its protocol, and the target and crossings come from the curves alone.
    """
    first = rows.iloc[0]
    styles = style_map(rows["sampler"].unique().tolist())
    final = rows[rows["final_protocol"].astype(bool)] if "final_protocol" in rows else rows.iloc[:0]
    curve = curve_rows(rows)
    if curve["kimg"].nunique() == 1:
        return one_evaluation_figure(curve, title)
    fig, ax = new_figure(figsize=(9, 5.6))
    sns.lineplot(data=curve, x="kimg", y="value", errorbar=t_band, ax=ax, **seaborn_styles(styles))
    for number, (sampler, part) in enumerate(final.groupby("sampler", sort=False)):
        ax.scatter(
            part["kimg"].mean(),
            part["value"].mean(),
            marker="D",
            s=45,
            color=styles[sampler].color,
            edgecolors="black",
            zorder=6,
            label=f"final protocol: {final_protocol_text(final)}" if number == 0 else None,
        )
    target, which = figure_target(rows)
    if not target.empty:
        ax.axhline(
            target["target"].iloc[0],
            color="0.2",
            lw=1,
            linestyle=(0, (4, 2)),
            label=f"target: {_target_words(target, final.empty)} quality ({which})",
        )
        hits = target[target["reached"]]
        ax.scatter(
            hits["kimg_to_target"],
            hits["target"],
            s=70,
            facecolors="none",
            edgecolors="black",
            zorder=5,
            label="first reaches target",
        )
    every = time_to_target(rows, targets=None)
    if not every.empty and not target.empty and every["target"].iloc[0] != target["target"].iloc[0]:
        ax.axhline(
            every["target"].iloc[0],
            color="0.5",
            lw=1,
            linestyle=":",
            label=f"target (all fixed): {_target_words(every, final.empty)} quality",
        )
    values = rows["value"]
    if (values > 0).all() and values.max() / values.min() > 10:
        ax.set_yscale("log")
    ax.set_xlabel("processed examples (kimg)")
    ax.set_ylabel(quality_label(first))
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    several = bool((curve.groupby("sampler")["seed"].nunique() > 1).any()) if "seed" in curve else True
    legend = "sampler (seed mean, band: its 95% CI)" if several else "sampler (1 seed)"
    ax.legend(title=legend, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig
