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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from suite.config import to_dict
from suite.noise.weighting import build_weight
from suite.outputs import guarded_output
from suite.report.allocations import final_allocation, learned_profile, mean_allocations
from suite.report.figures import (
    DENSITY_LABEL,
    SIGMA_LABEL,
    SIGMA_MAX,
    SIGMA_MIN,
    effective_allocation,
    new_figure,
    png_dpi,
    registered_densities,
    save_figure,
    seaborn_styles,
    sigma_axis,
    style_map,
)
from suite.report.profile import PosthocProfile, ProfileFn, saved_profile
from suite.report.quality_figure import plot_quality
from suite.report.results import RunRecord, by_comparison, find_runs, own_runs
from suite.report.rows import (
    finished,
    is_adaptive,
    load_records,
)
from suite.report.sweep_figure import plot_pmean_sweep

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
    fig.savefig(path, dpi=png_dpi(fig), bbox_inches="tight")


def discover_runs(results: str | Path) -> dict[Path, list[RunRecord]]:
    """Run directories with a run.json under ``results`` grouped by comparison folder
    (``suite.report.results``)."""
    return {folder: [r for r in runs if r.info] for folder, runs in by_comparison(find_runs(results)).items()}


def figure_stem(results: Path, folder: Path) -> str:
    """``<task>-<budget>-<hash>``, prefixed with the origin folders (``gpu_…``) of GPU evidence."""
    parts = [p for p in folder.relative_to(results).parts if p != "runs"]
    return "_".join(parts)


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


def plot_alignment(
    runs: list[RunRecord], profile: PosthocProfile | None, title: str, base: Path
) -> list[Path]:
    """Each sampler's final φ against the post hoc profile and InfoNoise's ρ̂; MMSE estimates beside."""
    allocations = mean_allocations(runs)
    learned = learned_profile(runs)
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
        seeds = int(changes.groupby("sampler")["seed"].nunique().max())
        spread = f"mean ± std over {seeds} seeds" if seeds > 1 else "one seed"
        ax_c.legend(title=f"sampler ({spread})", fontsize=8)
    ax_c.set_yscale("log")
    ax_c.set_xlabel("processed examples at rebuild (kimg)")
    ax_c.set_ylabel("CDF change  sup_u |F_new(u) − F_old(u)|")
    ax_c.set_title("stability: CDF change per density rebuild")
    ax_c.grid(True, which="both", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, base)


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
    (``suite.report.results.own_runs``; ``results`` itself never counts, so a set named as the results
    folder is read as it is)."""
    mine = {run.comparison for run in own_runs(results)[0]}
    return {
        folder: runs[0].origin
        for folder, runs in by_comparison(find_runs(results)).items()
        if folder not in mine
    }


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
