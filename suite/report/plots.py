"""Figures: sampler densities, alignment with the information profile, quality curves, InfoNoise's profile.

All densities are per unit u = ln σ on the σ axis (log scale). The training objective of a run is
E_{σ~π}[w(σ)·‖D(x₀+σε; σ) − x₀‖²], so what a run spends its effort on is the effective allocation

    φ(u) = π(u)·w(σ) / ∫ π(u')·w(σ') du'         (normalised per unit ln σ),

with w the task's loss weight (EDM: w = (σ² + σ_data²)/(σ·σ_data)², Karras et al. 2022). For KG with
its importance correction the loss carries the extra factor π_ref/π, so φ = π_ref·w (the base prior's).

The post hoc information profile of a data set (InfoNoise, Raya et al., arXiv 2602.18647, Sec. 3 and
App. B.4) is the conditional-entropy rate MMSE(σ)/σ² per unit ln σ (I–MMSE, Guo, Shamai & Verdú 2005),
computed here with the optimal denoiser of the empirical distribution of a data subset
(``suite.noise.information.empirical_prior_mmse``). That denoiser memorises: below the nearest-neighbour scale
of the subset the posterior collapses onto one point and MMSE → 0, so on continuous data the profile sits
above (at larger σ than) the informative region of the true distribution, whose MMSE behaves like D·σ²
for small σ. InfoNoise's learned profile ρ̂ (from its online loss estimate m̂) is drawn beside it.

``main`` writes, per comparison folder, PNG and PDF files under ``<results>/figures/``:
``*_alignment`` (φ against the profiles, and the MMSE estimates), ``*_quality-<metric>`` (quality versus
processed examples, seed mean with the 95% t interval of the mean as its band, with the time-to-target
crossings), ``*_infonoise-profile``
(ρ̂ over training as a σ × kimg heat map, beside the CDF-change diagnostic of the adaptive samplers),
and ``*_pmean-sweep`` (EDM P_mean sweeps: allocation position against time to target). ``suite plot``
draws the user's own runs, as ``suite table`` does: the committed evidence sets below the results folder
only with ``--all`` (or named as ``--results``).

The quality and sweep figures draw the runs' own protocol (``suite.report.results``: Karras's grid at the
task's steps), one value per run and evaluation point, so the std band spans seeds and nothing else. Rows that
``suite eval`` re-scored on another grid or step count get their own labelled figure,
``*_quality-<metric>-<grid>-<steps>steps``. A final point that the budget scores another way
(``budget=paper``: the best of three 50k-sample FIDs after 10k-sample ones) is a marker of its own, off the
curve, as time to target leaves it out of the curves.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib.figure import Figure

from suite.config import to_dict
from suite.noise.sampler import build_sampler
from suite.noise.weighting import build_weight
from suite.outputs import guarded_output
from suite.report.figures import (
    DENSITY_LABEL,
    SIGMA_LABEL,
    SIGMA_MAX,
    SIGMA_MIN,
    effective_allocation,
    new_figure,
    registered_densities,
    save_figure,
    seaborn_styles,
    sigma_axis,
    style_map,
)
from suite.report.profile import PosthocProfile, ProfileFn, saved_profile
from suite.report.results import RunRecord, by_comparison, evidence_origins, find_runs
from suite.report.rows import (
    curve_rows,
    final_rows,
    finished,
    is_adaptive,
    load_records,
    metric_label,
    sampler_order,
)
from suite.report.statistics import t_band
from suite.report.time_to_target import time_to_target
from suite.run.assembly import build_loss_weight, build_noise_sampler

MEMORISATION_NOTE = (
    "The empirical-prior profile memorises its N points: MMSE = 0 below their nearest-neighbour scale, so "
    "on continuous data it sits above the informative region of the true distribution (whose MMSE ≈ D·σ² "
    "at small σ)."
)


def plot_sampler_densities(path: str | Path, weight: str = "edm", sigma_data: float = 0.5) -> None:
    """Every registered sampler's π(u) and effective allocation φ = π·w on one two-panel figure.

    ``weight`` is the loss weight (``edm`` or ``uniform``) and ``sigma_data`` its data scale; σ runs from
    0.002 to 80 (EDM's range). The file type follows the suffix of ``path`` (PNG, PDF, SVG).
    """
    u = np.linspace(math.log(SIGMA_MIN), math.log(SIGMA_MAX), 600)
    w = build_weight(weight, sigma_data)
    curves = registered_densities(u, w)
    styles = style_map([label for label, _ in curves])
    fig, axes = new_figure(1, 2, figsize=(14, 5.2), sharex=True)
    for label, pi in curves:
        kw = styles[label].kwargs(len(u))
        axes[0].plot(np.exp(u), pi, label=label, **kw)
        axes[1].plot(np.exp(u), effective_allocation(u, pi, w), label=label, **kw)
    axes[0].set_title("sampling density π(u), u = ln σ")
    axes[1].set_title("effective allocation φ = π·w (normalised)")
    for ax in axes:
        sigma_axis(ax)
        ax.set_ylabel(DENSITY_LABEL)
        ax.set_ylim(bottom=0)
    weight_text = (
        f"EDM weight w(σ) = (σ² + σ_data²)/(σ·σ_data)², σ_data = {sigma_data:g}"
        if weight == "edm"
        else "uniform weight w(σ) = 1 (σ_data does not enter)"
    )
    fig.suptitle(f"Training-noise samplers with the {weight_text}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")


# -- runs --------------------------------------------------------------------------------------------
def _initial_density(run: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """(u, π) of the run's sampler as configured, before any adaptation (None without a config)."""
    if run.spec is None:
        return None
    lo, hi = run.spec.diffusion.sigma_min, run.spec.diffusion.sigma_max
    try:
        sampler = build_noise_sampler(run.spec, build_loss_weight(run.spec))
    except (ValueError, KeyError):  # a sampler renamed or re-parametrised since the run
        return None
    u = np.linspace(math.log(lo), math.log(hi), 129)
    return u, sampler.density_on(torch.as_tensor(u, dtype=torch.float64)).numpy()


def final_allocation(run: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """(u, φ) of ``run`` at the end of training; None when neither its sampler log nor its config says.

    From the last sampler.jsonl row; an adaptive run that never rebuilt (budget shorter than its warm-up)
    logs no row, and its density is the configured one (the warm-up prior). With KG's importance correction
    the loss is reweighted by π_ref/π, so φ = π_ref·w, with w the task's loss weight.
    """
    if run.spec is None:
        return None
    weight = build_loss_weight(run.spec)
    rows = [r for r in run.sampler_log() if "density" in r]
    if rows:
        u = np.asarray(rows[-1]["u"], dtype=float)
        pi = np.asarray(rows[-1]["density"], dtype=float)
    elif (initial := _initial_density(run)) is not None:
        u, pi = initial
    else:
        return None
    hyper = run.info.get("sampler_hyperparameters", {})
    if hyper.get("importance_correction") and isinstance(hyper.get("base"), dict):
        base = dict(hyper["base"])
        lo, hi = base.pop("sigma_min", math.exp(u[0])), base.pop("sigma_max", math.exp(u[-1]))
        reference = build_sampler(base.pop("name"), lo, hi, None, **base)
        pi = reference.density_on(torch.as_tensor(u, dtype=torch.float64)).numpy()
    return u, effective_allocation(u, pi, weight)


def discover_runs(results: str | Path) -> dict[Path, list[RunRecord]]:
    """Run directories with a run.json under ``results`` grouped by comparison folder
    (``suite.report.results``)."""
    return {folder: [r for r in runs if r.info] for folder, runs in by_comparison(find_runs(results)).items()}


def figure_stem(results: Path, folder: Path) -> str:
    """``<task>-<budget>-<hash>``, prefixed with the origin folders (``gpu_…``) of GPU evidence."""
    parts = [p for p in folder.relative_to(results).parts if p != "runs"]
    return "_".join(parts)


# -- figure 1: alignment -----------------------------------------------------------------------------
def _mean_allocations(runs: list[RunRecord]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per sampler label, the seed-mean final φ (u, φ)."""
    out = {}
    for label in sampler_order([r.label for r in runs]):
        curves = [c for r in runs if r.label == label and (c := final_allocation(r)) is not None]
        if curves:
            out[label] = (curves[0][0], np.mean([c[1] for c in curves], axis=0))
    return out


def _legend_label(label: str, runs: list[RunRecord]) -> str:
    """``φ <label>``, saying so when an adaptive sampler never rebuilt or is importance-corrected."""
    mine = [r for r in runs if r.label == label]
    text = f"φ {label}"
    adaptive = is_adaptive(mine[0].sampler_name, mine[0].info.get("sampler_adaptive"))
    if adaptive and not any(r.adapted for r in mine):
        text += " (no rebuild in budget: warm-up prior)"
    if mine[0].info.get("sampler_hyperparameters", {}).get("importance_correction"):
        text += " (importance-corrected: φ = π_ref·w)"
    return text


def _learned_profile(runs: list[RunRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """InfoNoise's final (u, ρ̂, m̂), averaged over seeds (plain ``infonoise`` label preferred)."""
    infonoise = [r for r in runs if r.sampler_name == "infonoise" and r.profiles()]
    plain = [r for r in infonoise if r.label == "infonoise"] or infonoise
    if not plain:
        return None
    last = [r.profiles()[-1] for r in plain if r.label == plain[0].label]
    u = np.asarray(last[0]["u"], dtype=float)
    return (u, np.mean([p["rho"] for p in last], axis=0), np.mean([p["m_hat"] for p in last], axis=0))


def plot_alignment(
    runs: list[RunRecord], profile: PosthocProfile | None, title: str, base: Path
) -> list[Path]:
    """Each sampler's final φ against the post hoc profile and InfoNoise's ρ̂; MMSE estimates beside."""
    allocations = _mean_allocations(runs)
    learned = _learned_profile(runs)
    styles = style_map(list(allocations))
    entries = len(allocations) + (2 if profile is not None else 0) + (learned is not None)
    legend_height = 0.2 * math.ceil(entries / 3) + 0.5  # inches: legend rows and the note below them
    fig = Figure(figsize=(15, 6.2 + legend_height), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[5.6, legend_height], width_ratios=[1.6, 1])
    ax, ax_m = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_legend = fig.add_subplot(grid[1, :])
    if profile is not None:
        s = profile.sigma
        ax.fill_between(
            s,
            profile.density(),
            color="0.6",
            alpha=0.45,
            label=f"post hoc profile MMSE/σ² (empirical prior of N={profile.n_points} examples)",
        )
        positive = profile.mmse > 0
        ax_m.plot(
            s[positive],
            profile.mmse[positive],
            color="0.45",
            lw=2.5,
            label=f"empirical-prior MMSE (N={profile.n_points}, post hoc)",
        )
        ax_m.plot(
            s,
            profile.dim * s**2,
            color="0.3",
            lw=1,
            linestyle=(0, (1, 2)),
            label="D·σ² (small-σ MMSE of a smooth density)",
        )
        for a in (ax, ax_m):
            a.axvline(
                profile.memorisation_sigma,
                color="0.3",
                lw=1,
                linestyle=(0, (4, 2)),
                label="memorisation scale d_NN/√(2 ln N)",
            )
    if learned is not None:
        u, rho, m_hat = learned
        ax.plot(
            np.exp(u),
            rho,
            color="black",
            lw=5,
            alpha=0.35,
            label="InfoNoise learned profile ρ̂ (end of training)",
        )
        ax_m.plot(
            np.exp(u), m_hat, color="black", lw=2.8, label="InfoNoise online estimate m̂ (end of training)"
        )
    for label, (u, phi) in allocations.items():
        ax.plot(np.exp(u), phi, label=_legend_label(label, runs), lw=1.4, **styles[label].kwargs(len(u)))
    spec = runs[0].spec
    limits = (SIGMA_MIN, SIGMA_MAX) if spec is None else (spec.diffusion.sigma_min, spec.diffusion.sigma_max)
    sigma_axis(ax, limits)
    ax.set_ylabel(DENSITY_LABEL)
    ax.set_ylim(bottom=0)
    ax.set_title("effective allocation φ = π·w at the end of training vs information profiles")
    sigma_axis(ax_m, limits)
    ax_m.set_yscale("log")
    peaks = ([float(profile.mmse.max())] if profile is not None else []) + (
        [float(learned[2].max())] if learned is not None else []
    )
    if peaks:
        ax_m.set_ylim(max(peaks) * 1e-7, max(peaks) * 10)
    ax_m.set_ylabel("MMSE(σ): squared error summed over dimensions")
    ax_m.set_title("MMSE estimates behind the profiles")
    if ax_m.get_legend_handles_labels()[0]:
        ax_m.legend(fontsize=8, loc="lower right", framealpha=0.9)
    ax_legend.axis("off")
    ax_legend.legend(*ax.get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=8.5, frameon=False)
    note = (
        MEMORISATION_NOTE if profile is not None else "No post hoc profile saved for this task (caption file)"
    )
    ax_legend.text(
        0.0, 0.0, note, fontsize=9, ha="left", va="bottom", transform=ax_legend.transAxes, wrap=True
    )
    fig.suptitle(title)
    return save_figure(fig, base)


# -- figure 2: quality -------------------------------------------------------------------------------
def _quality_label(row: pd.Series) -> str:
    """Axis label of a metric: name, substitute flag, direction."""
    better = "higher" if row["higher_is_better"] else "lower"
    return (
        f"{metric_label(row['metric'], bool(row['substitute_metric']), bool(row['higher_is_better']))} "
        f"({better} is better)"
    )


def final_protocol_text(final: pd.DataFrame) -> str:
    """The protocol of final-protocol rows in words: "50000 samples, best of 3 seed ranges"."""
    samples = sorted({int(n) for n in pd.to_numeric(final["n_samples"], errors="coerce").dropna()})
    ranges = sorted({int(e.get("n_ranges", 1)) for e in final["extra"] if isinstance(e, dict)})
    text = f"{'/'.join(map(str, samples))} samples" if samples else "another protocol"
    return text + (f", best of {'/'.join(map(str, ranges))} seed ranges" if ranges and ranges != [1] else "")


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
    fig, ax = new_figure(figsize=(9, 5.6))
    final = rows[rows["final_protocol"].astype(bool)] if "final_protocol" in rows else rows.iloc[:0]
    curve = curve_rows(rows)
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
    ax.set_ylabel(_quality_label(first))
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    several = bool((curve.groupby("sampler")["seed"].nunique() > 1).any()) if "seed" in curve else True
    legend = "sampler (seed mean, band: its 95% CI)" if several else "sampler (1 seed)"
    ax.legend(title=legend, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


# -- figure 3: InfoNoise's profile over training -----------------------------------------------------
def _edges(centres: np.ndarray, log: bool = False) -> np.ndarray:
    """Cell edges around increasing centres (midpoints; in log space when ``log``)."""
    c = np.log(centres) if log else np.asarray(centres, dtype=float)
    if len(c) == 1:
        half = 0.5 if not log else 0.1
        edges = np.array([c[0] - half, c[0] + half])
    else:
        mid = 0.5 * (c[1:] + c[:-1])
        edges = np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])
    return np.exp(edges) if log else edges


def plot_infonoise_profile(runs: list[RunRecord], title: str, base: Path) -> list[Path] | None:
    """ρ̂ per rebuild as a σ × kimg heat map (one InfoNoise seed) beside every adaptive run's CDF change."""
    infonoise = sorted(
        (r for r in runs if r.sampler_name == "infonoise" and r.profiles()), key=lambda r: (r.label, r.seed)
    )
    if not infonoise:
        return None
    shown = infonoise[0]
    profiles = shown.profiles()
    kimg = np.array([p["kimg"] for p in profiles], dtype=float)
    sigma = np.exp(np.asarray(profiles[0]["u"], dtype=float))
    rho = np.array([p["rho"] for p in profiles], dtype=float)
    fig, (ax, ax_c) = new_figure(1, 2, figsize=(15, 5.4), gridspec_kw={"width_ratios": [1.3, 1]})
    mesh = ax.pcolormesh(_edges(kimg), _edges(sigma, log=True), rho.T, cmap="viridis", shading="flat")
    fig.colorbar(mesh, ax=ax, label="ρ̂ (density per unit ln σ)")
    gate = np.array([math.nan if p["gate_c"] is None else p["gate_c"] for p in profiles], dtype=float)
    if np.isfinite(gate).any():
        ax.plot(kimg, gate, color="white", lw=1.5, linestyle=(0, (4, 2)), marker=".", label="gate pivot c")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(sigma.min() / 1.2, sigma.max() * 1.2)
    ax.set_xlabel("processed examples at rebuild (kimg)")
    ax.set_ylabel(SIGMA_LABEL)
    ax.set_title(f"InfoNoise learned profile ρ̂ over training ({shown.label}, seed {shown.seed})")
    changes = pd.DataFrame(
        [
            {"sampler": r.label, "seed": r.seed, "kimg": row["kimg"], "cdf_change": row["cdf_change"]}
            for r in runs
            for row in r.sampler_log()
            if row.get("cdf_change", 0) > 0
        ]
    )
    if not changes.empty:
        styles = style_map(changes["sampler"].unique().tolist())
        sns.lineplot(data=changes, x="kimg", y="cdf_change", errorbar="sd", ax=ax_c, **seaborn_styles(styles))
        ax_c.legend(title="sampler (mean ± std over seeds)", fontsize=8)
    ax_c.set_yscale("log")
    ax_c.set_xlabel("processed examples at rebuild (kimg)")
    ax_c.set_ylabel("CDF change  sup_u |F_new(u) − F_old(u)|")
    ax_c.set_title("stability: CDF change per density rebuild")
    ax_c.grid(True, which="both", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, base)


# -- figure 4: EDM P_mean sweep ----------------------------------------------------------------------
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
    allocations = _mean_allocations(runs)
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

    Left: final quality (mean ± std over seeds); right: processed examples to reach the time-to-target
    target (▲ at the top: not reached within the budget). InfoNoise is the star; the vertical line is the
    median σ of InfoNoise's learned profile ρ̂, the position the information profile asks for.
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
    edm = [p for p in points if p.name == "edm"]
    ax_q.errorbar(
        [p.position for p in edm],
        [p.final for p in edm],
        yerr=[p.final_std for p in edm],
        color="tab:blue",
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
        style = {"color": "black" if star else "tab:blue", "s": 160 if star else 60, "zorder": 3}
        if star:
            ax_q.errorbar(p.position, p.final, yerr=p.final_std, color="black", capsize=3)
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
    learned = _learned_profile(runs)
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
    ax_q.set_ylabel(f"final {_quality_label(first)}")
    ax_q.set_title("final quality (mean ± std over seeds)")
    ax_q.legend(fontsize=8)
    ax_t.set_ylabel("processed examples to reach the target (kimg)")
    ax_t.set_title(
        f"time to target ({which}): final {target['target_sampler'].iloc[0]} quality "
        f"{target['target'].iloc[0]:.3g} (● reached, ▲ not reached, ★ InfoNoise)"
    )
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, base)


# -- all figures -------------------------------------------------------------------------------------
def _profile_for(
    task_cfg: dict[str, Any], cache: dict[str, tuple[PosthocProfile | None, str]], profile_fn: ProfileFn
) -> tuple[PosthocProfile | None, str]:
    """The post hoc profile of a task config (cached), or None with the reason it could not be computed."""
    key = json.dumps(task_cfg, sort_keys=True, default=str)
    if key not in cache:
        lo, hi = float(task_cfg.get("sigma_min", SIGMA_MIN)), float(task_cfg.get("sigma_max", SIGMA_MAX))
        sigma = np.geomspace(lo, hi, 40)
        try:
            cache[key] = (profile_fn(task_cfg, sigma), "")
        except (FileNotFoundError, OSError, ValueError, KeyError) as err:
            print(f"warning: no post hoc profile in the alignment figure: {err}", file=sys.stderr)
            cache[key] = (None, f"{type(err).__name__}: {err}")
    return cache[key]


def evidence_comparisons(results: str | Path) -> dict[Path, str]:
    """The comparison folders under ``results`` that lie in a committed evidence set, each with its origin
    (``suite.report.results.evidence_origins``; ``results`` itself never counts, so a set named as the results
    folder is read as it is)."""
    root = Path(results)
    origins = {folder: runs[0].origin for folder, runs in by_comparison(find_runs(root)).items()}
    marked = evidence_origins(root, set(origins.values()))
    return {folder: origin for folder, origin in origins.items() if origin in marked}


def write_figures(
    results: str | Path,
    profile_fn: ProfileFn | None = None,
    out: str | Path | None = None,
    evidence: bool = True,
) -> list[Path]:
    """Write every figure of the runs under ``results`` to ``out`` (default ``<results>/figures/``; another
    folder leaves ``results`` untouched, so it may be read-only); returns the PNG/PDF paths. Without
    ``evidence`` the comparisons of committed evidence sets below ``results`` are left out
    (``evidence_comparisons``), as ``suite table`` leaves them out by default.

    ``profile_fn(task_cfg, sigma)`` gives the post hoc profile; by default the one ``suite profile`` saved in
    ``<results>/profiles`` (``suite.report.profile.saved_profile``), so drawing never reads a data set;
    without one the alignment figure says how to compute it.
    """
    results = Path(results)
    out = Path(out) if out is not None else results / "figures"
    profile_fn = profile_fn or saved_profile(results / "profiles")
    records = load_records(results)
    cache: dict[str, tuple[PosthocProfile | None, str]] = {}
    written: list[Path] = []
    left_out = {} if evidence else evidence_comparisons(results)
    for folder, runs in discover_runs(results).items():
        if folder in left_out:
            continue
        stem = figure_stem(results, folder)
        runs = [r for r in runs if r.info.get("status", "unknown") in ("done", "unknown")] or runs
        first = runs[0]
        head = f"{first.info.get('task', '?')} · {first.info.get('budget', '?')}"
        head += " · stand-in data" if first.info.get("stand_in_data") else ""
        caption = [
            f"task {first.info.get('task', '?')}, budget {first.info.get('budget', '?')}, comparison "
            f"{first.info.get('comparison_hash', '?')}, {len(runs)} run(s) in {folder}"
        ]
        if first.info.get("stand_in_data"):
            caption.append(f"stand-in data: {first.info.get('data', '')}")
        if any(final_allocation(r) is not None for r in runs):
            task_cfg = to_dict(first.spec.task_cfg) if first.spec is not None else {}
            profile, reason = _profile_for(task_cfg, cache, profile_fn)
            if reason:
                caption.append(f"alignment figure: post hoc profile not computed: {reason}")
            written += plot_alignment(runs, profile, head, out / f"{stem}_alignment")
        if (result := plot_infonoise_profile(runs, head, out / f"{stem}_infonoise-profile")) is not None:
            written += result
        rows = finished(records[records["run_dir"].map(Path).map(lambda d: d.parent.parent) == folder])
        for (metric, protocol), part in rows.groupby(["metric", "protocol"]):
            if protocol:
                slug = f"{part['grid'].iloc[0]}-{int(part['steps'].iloc[0])}steps"
                written += plot_quality(
                    part,
                    f"{head}\nquality versus processed examples, re-scored: {protocol}",
                    out / f"{stem}_quality-{metric}-{slug}",
                )
                continue
            written += plot_quality(
                part, f"{head}\nquality versus processed examples", out / f"{stem}_quality-{metric}"
            )
            sweep = plot_pmean_sweep(
                runs, part, f"{head}: EDM P_mean sweep", out / f"{stem}_pmean-sweep-{metric}"
            )
            written += sweep or []
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{stem}_caption.txt").write_text("\n".join(caption) + "\n")  # what the short titles leave out
    return written


def plot_results(results: str, out: str | None = None, force: bool = False, everything: bool = False) -> int:
    """``suite plot``: write the figures of ``results`` (to ``out`` when given; over files suite did not
    write there only with ``force``; committed evidence sets too with ``everything``) and list them."""
    with guarded_output(out, force):
        written = write_figures(results, out=out, evidence=everything)
    left = {} if everything else evidence_comparisons(results)
    sets = ", ".join(sorted({str(Path(results) / origin) for origin in left.values()}))
    left_out = f" (left out: committed evidence {sets}; `suite plot --all` adds it)" if sets else ""
    if not written:
        print(f"error: no runs with records under {results}{left_out}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    if sets:
        print(f"Left out: committed evidence {sets}; `suite plot --all` adds it.")
    return 0
