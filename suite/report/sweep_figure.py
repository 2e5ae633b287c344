"""The EDM P_mean sweep figure: where each swept run's effective allocation φ = π·w sits (its median in ln σ)
against its time to target."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from suite.report.allocations import learned_profile, mean_allocations
from suite.report.figures import (
    new_figure,
    save_figure,
    style_map,
)
from suite.report.quality_figure import figure_target, quality_label
from suite.report.results import RunRecord
from suite.report.rows import (
    final_rows,
)


def allocation_median(u: np.ndarray, phi: np.ndarray) -> float:
    """σ at the median of φ (the allocation's position on the σ axis)."""
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (phi[1:] + phi[:-1]) * np.diff(u))])
    return float(np.exp(np.interp(0.5 * cdf[-1], cdf, u)))


@dataclass(frozen=True)
class SweepPoint:
    """One sampler label of a P_mean sweep figure."""

    label: str
    name: str
    text: str
    position: float
    final: float
    final_std: float
    kimg: float


def _sweep_points(runs: list[RunRecord], rows: pd.DataFrame, target: pd.DataFrame) -> list[SweepPoint]:
    """EDM labels and InfoNoise labels with their allocation position, final quality and kimg to target."""
    allocations = mean_allocations(runs)
    kimg_of = dict(zip(target["sampler"], target["kimg_to_target"], strict=True))
    finals = final_rows(rows).groupby("sampler")["value"].agg(["mean", "std"])
    points = []
    for label in allocations:
        run = next(r for r in runs if r.label == label)
        if run.sampler_name not in ("edm", "infonoise") or label not in kimg_of or label not in finals.index:
            continue
        p_mean = run.info.get("sampler_hyperparameters", {}).get("p_mean")
        text = f"P_mean={p_mean:g}" if run.sampler_name == "edm" and p_mean is not None else label
        points.append(
            SweepPoint(
                label,
                run.sampler_name,
                text,
                allocation_median(*allocations[label]),
                float(finals.loc[label, "mean"]),
                float(finals.loc[label, "std"]),
                float(kimg_of[label]),
            )
        )
    return sorted(points, key=lambda p: p.position)


def plot_pmean_sweep(runs: list[RunRecord], rows: pd.DataFrame, title: str, base: Path) -> list[Path] | None:
    """EDM runs of several P_mean, placed by where their allocation φ sits (its median σ).

    Left: final quality (mean ± std over seeds, or the one seed's value); right: processed examples to
    reach the time-to-target target (▲ at the top: not reached within the budget). InfoNoise is the star;
    the vertical line is the median σ of InfoNoise's learned profile ρ̂, the position the information
    profile asks for. EDM and InfoNoise keep their colours of every other figure (``style_map``).
    """
    if len({r.label for r in runs if r.sampler_name == "edm"}) < 2 or rows.empty:
        return None
    target, which = figure_target(rows)
    if target.empty:
        return None
    points = _sweep_points(runs, rows, target)
    if sum(p.name == "edm" for p in points) < 2:
        return None
    first = rows.iloc[0]
    ceiling = float(rows["kimg"].max()) * 1.08
    fig, (ax_q, ax_t) = new_figure(1, 2, figsize=(14, 5.6))
    colour = {name: style.color for name, style in style_map(["edm", "infonoise"]).items()}
    edm = [p for p in points if p.name == "edm"]
    ax_q.errorbar(
        [p.position for p in edm],
        [p.final for p in edm],
        yerr=[p.final_std for p in edm],
        color=colour["edm"],
        marker="o",
        capsize=3,
        label="EDM, one point per P_mean",
    )
    ax_t.plot(
        [p.position for p in edm],
        [p.kimg if math.isfinite(p.kimg) else ceiling for p in edm],
        color="0.6",
        lw=1,
        zorder=1,
    )
    for p in points:
        star = p.name == "infonoise"
        style = {"color": colour["infonoise" if star else "edm"], "s": 160 if star else 60, "zorder": 3}
        if star:
            ax_q.errorbar(p.position, p.final, yerr=p.final_std, color=colour["infonoise"], capsize=3)
            ax_q.scatter(p.position, p.final, marker="*", label=p.label, **style)
        ax_q.annotate(p.text, (p.position, p.final), textcoords="offset points", xytext=(6, 6), fontsize=8)
        reached = math.isfinite(p.kimg)
        marker = "*" if star else ("o" if reached else "^")
        ax_t.scatter(p.position, p.kimg if reached else ceiling, marker=marker, **style)
        ax_t.annotate(
            p.text,
            (p.position, p.kimg if reached else ceiling),
            textcoords="offset points",
            xytext=(0, 8 if reached else -14),
            ha="center",
            fontsize=8,
        )
    ax_t.axhline(ceiling, color="0.7", lw=0.8, linestyle=":")
    ax_t.set_ylim(top=ceiling * 1.04)
    learned = learned_profile(runs)
    for ax in (ax_q, ax_t):
        if learned is not None:
            ax.axvline(
                allocation_median(learned[0], learned[1]),
                color="black",
                lw=1,
                linestyle=(0, (4, 2)),
                label="median σ of InfoNoise's learned profile ρ̂",
            )
        ax.set_xscale("log")
        ax.set_xlabel("allocation position: median σ of φ = π·w at the end of training (log scale)")
        ax.grid(True, which="both", alpha=0.3)
    ax_q.set_ylabel(f"final {quality_label(first)}")
    seeds = int(rows.groupby("sampler")["seed"].nunique().max()) if "seed" in rows else 1
    ax_q.set_title(
        f"final quality (mean ± std over {seeds} seeds)" if seeds > 1 else "final quality (one seed)"
    )
    ax_q.legend(fontsize=8)
    ax_t.set_ylabel("processed examples to reach the target (kimg)")
    ax_t.set_title(
        f"time to target ({which}): final {target['target_sampler'].iloc[0]} quality "
        f"{target['target'].iloc[0]:.3g} (● reached, ▲ not reached, ★ InfoNoise)"
    )
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, base)
