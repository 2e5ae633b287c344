"""The information profile as the figures use it: its curves (``ProfileCurve``: peak σ and 10–90% band
of MMSE(σ)/σ² per unit ln σ), the saved empirical-prior profile that ``suite plot`` reads without touching
a data set, and the figure of ``suite profile``. ``suite.measure.profile`` computes them."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from suite.cache import make_proof, proof_problem
from suite.config import stable_hash
from suite.noise.information import PosteriorDiagnostics
from suite.outputs import claim
from suite.records import read_json, write_json
from suite.report.figures import (
    effective_allocation,
    normalise,
    registered_densities,
    save_figure,
    sigma_axis,
    style_map,
)
from suite.run.assembly import build_loss_weight
from suite.run.spec import RunSpec

BAND = (0.1, 0.9)


def cumulative(u: np.ndarray, density: np.ndarray) -> np.ndarray:
    """∫_{u_0}^{u} density du' at every node (trapezoid rule), normalised to end at 1."""
    steps = 0.5 * (density[1:] + density[:-1]) * np.diff(u)
    out = np.concatenate([[0.0], np.cumsum(steps)])
    return out / out[-1] if out[-1] > 0 else out


@dataclass(frozen=True)
class ProfileCurve:
    """One MMSE curve on the σ grid and the entropy-rate profile it induces."""

    key: str
    label: str
    sigma: np.ndarray
    mmse: np.ndarray

    @property
    def u(self) -> np.ndarray:
        return np.log(self.sigma)

    def density(self) -> np.ndarray:
        """MMSE(σ)/σ² per unit ln σ, normalised over the grid."""
        return normalise(self.u, self.mmse / self.sigma**2)

    def peak(self) -> float:
        """σ of the grid's largest profile density."""
        return float(self.sigma[int(np.argmax(self.density()))])

    def band(self, lo: float = BAND[0], hi: float = BAND[1]) -> tuple[float, float]:
        """σ where the cumulative profile reaches ``lo`` and ``hi`` (linear in u between grid values)."""
        c = cumulative(self.u, self.density())
        keep = np.concatenate([[True], np.diff(c) > 0])  # np.interp needs increasing abscissae
        return float(np.exp(np.interp(lo, c[keep], self.u[keep]))), float(
            np.exp(np.interp(hi, c[keep], self.u[keep]))
        )

    def summary(self) -> str:
        """``label: peak σ = …, 10–90% band σ ∈ [a, b] (width w in ln σ)``."""
        a, b = self.band()
        return (
            f"{self.label}: peak σ = {self.peak():.4g}, {round(100 * BAND[0])}–{round(100 * BAND[1])}% "
            f"band σ ∈ [{a:.4g}, {b:.4g}] (width {math.log(b / a):.2f} in ln σ)"
        )


@dataclass(frozen=True)
class PosthocProfile:
    """The empirical-prior MMSE of a data subset on a σ grid, with the subset's nearest-neighbour scale and
    (when computed) the posterior-weight diagnostics per σ."""

    sigma: np.ndarray
    mmse: np.ndarray
    nn_distance: float
    n_points: int
    dim: int
    diagnostics: PosteriorDiagnostics | None = None

    def density(self) -> np.ndarray:
        """Entropy-rate profile MMSE(σ)/σ² per unit ln σ, normalised."""
        return normalise(np.log(self.sigma), self.mmse / self.sigma**2)

    @property
    def memorisation_sigma(self) -> float:
        """σ_mem = d_NN/√(2 ln N): below it the empirical posterior sits on the query's own point.

        A query x_j + σε scores the other points at least d_NN²/(2σ²) lower (in expectation) than x_j, so
        the posterior mass off x_j is at most about (N − 1)·exp(−d_NN²/(2σ²)), small once σ < σ_mem.
        """
        return self.nn_distance / math.sqrt(2 * math.log(max(self.n_points, 2)))

    def curve(self) -> ProfileCurve:
        return ProfileCurve(
            "empirical", f"empirical prior (N={self.n_points} examples)", self.sigma, self.mmse
        )


ProfileFn = Callable[[dict[str, Any], np.ndarray], PosthocProfile]


@dataclass
class ProfileReport:
    """Every curve of one data set, the empirical prior's diagnostics, and notes on what was skipped."""

    sigma: np.ndarray
    empirical: PosthocProfile
    curves: list[ProfileCurve]
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> ProfileCurve:
        """The exact profile when there is one, else the empirical prior's."""
        return next((c for c in self.curves if c.key == "exact"), self.empirical.curve())

    def lines(self) -> list[str]:
        """The printed summary: headline first, then every curve, memorisation diagnostics and notes."""
        e = self.empirical
        out = [
            f"profile ({self.headline.label}): peak σ = {self.headline.peak():.4g}",
            f"10–90% band per unit ln σ: σ ∈ [{self.headline.band()[0]:.4g}, {self.headline.band()[1]:.4g}]",
        ]
        out += [f"  {c.summary()}" for c in self.curves]
        out.append(
            f"memorisation scale d_NN/√(2 ln N) = {e.memorisation_sigma:.4g} (d_NN = {e.nn_distance:.4g},"
            f" N = {e.n_points}, D = {e.dim})"
        )
        if e.diagnostics is not None and e.memorisation_sigma > 0:
            at = int(np.argmin(np.abs(np.log(e.sigma / e.memorisation_sigma))))
            weight, count = float(e.diagnostics.max_weight[at]), float(e.diagnostics.effective_count[at])
            out.append(
                f"  at σ = {e.sigma[at]:.4g}: max posterior weight {weight:.3f}, "
                f"effective count {count:.1f} of {e.n_points}"
            )
        if self.headline.key == "empirical" and 0 < self.headline.band()[0] < 2 * e.memorisation_sigma:
            out.append(
                "note: the empirical profile's band starts within 2× of the memorisation scale, so it shows "
                f"the {e.n_points} examples more than the data distribution; budgets short and paper use more"
            )
        out += [f"note: {n}" for n in self.notes]
        return out

    def frame(self) -> pd.DataFrame:
        """One row per σ: u, every curve's MMSE and density, and the empirical prior's diagnostics."""
        table = pd.DataFrame({"sigma": self.sigma, "u": np.log(self.sigma)})
        for c in self.curves:
            table[f"mmse_{c.key}"] = c.mmse
            table[f"density_{c.key}"] = c.density()
        d = self.empirical.diagnostics
        if d is not None:
            table["mmse_empirical_stderr"] = d.mmse_stderr.numpy()
            table["max_posterior_weight"] = d.max_weight.numpy()
            table["effective_count"] = d.effective_count.numpy()
            table["posterior_entropy_nats"] = d.entropy.numpy()
        return table


def profile_key(task_cfg: Mapping[str, Any]) -> str:
    """Which saved profile belongs to a task config: the hash of the config without where its data sit
    (``root``, ``download``), so the profile written by ``suite profile`` is found by ``suite plot``."""

    return stable_hash({k: v for k, v in dict(task_cfg).items() if k not in ("root", "download")})


def posthoc_path(folder: Path, task_cfg: Mapping[str, Any]) -> Path:
    """``<folder>/<task>-<profile key>_posthoc.json``: the empirical-prior profile ``suite plot`` draws."""
    return folder / f"{task_cfg['name']}-{profile_key(task_cfg)}_posthoc.json"


def write_posthoc(folder: Path, task_cfg: Mapping[str, Any], profile: PosthocProfile, variant: str) -> Path:
    """Save the empirical-prior profile of a task config's data for the figures (JSON), with its proof
    (``suite.cache.make_proof``: the task config's profile key, the σ grid and MMSE and their checksum)."""

    path = posthoc_path(folder, task_cfg)
    claim(path)
    arrays = {
        "sigma": np.asarray(profile.sigma, dtype=np.float64),
        "mmse": np.asarray(profile.mmse, dtype=np.float64),
    }
    write_json(
        path,
        {
            "task": task_cfg["name"],
            "data": variant,
            "sigma": arrays["sigma"].tolist(),
            "mmse": arrays["mmse"].tolist(),
            "nn_distance": profile.nn_distance,
            "n_points": profile.n_points,
            "dim": profile.dim,
            "proof": make_proof(profile_key(task_cfg), arrays),
        },
    )
    return path


def saved_profile(folder: Path) -> ProfileFn:
    """The ``ProfileFn`` that reads what ``suite profile`` wrote to ``folder`` (the grid saved there, not the
    one asked for): figures never read a data set. A saved profile that fails its proof (``suite.cache``:
    another task config's, altered, or written before profiles carried one) raises ValueError naming the file
    and the command that writes it again."""

    def read(task_cfg: dict[str, Any], _sigma: np.ndarray) -> PosthocProfile:
        path = posthoc_path(folder, task_cfg)
        if not path.is_file():
            raise FileNotFoundError(
                f"no post hoc profile of these data in {folder}; `suite profile --task {task_cfg['name']} "
                f"--results {folder.parent}` (with the comparison's overrides) computes it"
            )
        saved = read_json(path)
        arrays = {name: np.asarray(saved[name], dtype=np.float64) for name in ("sigma", "mmse")}
        problem = proof_problem(saved.get("proof"), profile_key(task_cfg), arrays)
        if problem:
            raise ValueError(
                f"the saved post hoc profile {path} is not used: {problem}. To fix: `suite profile --task "
                f"{task_cfg['name']} --results {folder.parent}` (with the comparison's overrides) computes "
                "it again"
            )
        return PosthocProfile(
            arrays["sigma"],
            arrays["mmse"],
            float(saved["nn_distance"]),
            int(saved["n_points"]),
            int(saved["dim"]),
        )

    return read


def plot_profile(report: ProfileReport, spec: RunSpec, title: str, path: Path) -> list[Path]:
    """Profiles against every registered sampler's φ = π·w (left), MMSE curves (middle), posterior-weight
    diagnostics of the empirical prior (right); PNG and PDF."""
    from matplotlib.figure import Figure

    lo, hi = spec.diffusion.sigma_min, spec.diffusion.sigma_max
    weight = build_loss_weight(spec)
    u = np.linspace(math.log(lo), math.log(hi), 600)
    densities = registered_densities(u, weight, lo, hi)
    styles = style_map([label for label, _ in densities])
    fig = Figure(figsize=(19, 6.4), layout="constrained")
    ax, ax_m, ax_d = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.6, 1, 1]})
    shades = {"exact": "black", "empirical": "0.45", "linear": "tab:olive", "coordinate": "tab:brown"}
    for curve in report.curves:
        ax.plot(
            curve.sigma,
            curve.density(),
            color=shades[curve.key],
            lw=4 if curve.key == "exact" else 2.5,
            alpha=0.6,
            label=f"profile MMSE/σ²: {curve.label}",
        )
        positive = curve.mmse > 0
        ax_m.plot(
            curve.sigma[positive], curve.mmse[positive], color=shades[curve.key], lw=2, label=curve.label
        )
    head = report.headline
    ax.axvspan(*head.band(), color="0.85", zorder=0, label=f"10–90% band of the {head.key} profile")
    for label, pi in densities:
        ax.plot(
            np.exp(u),
            effective_allocation(u, pi, weight),
            lw=1.2,
            label=f"φ {label}",
            **styles[label].kwargs(len(u)),
        )
    e = report.empirical
    for a in (ax, ax_m, ax_d):
        if e.memorisation_sigma > 0:
            a.axvline(
                e.memorisation_sigma,
                color="0.3",
                lw=1,
                linestyle=(0, (4, 2)),
                label="memorisation scale d_NN/√(2 ln N)",
            )
        sigma_axis(a, (lo, hi))
    ax.set_ylabel("density per unit ln σ")
    ax.set_ylim(bottom=0)
    ax.set_title("information profiles and every sampler's effective allocation φ = π·w")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax_m.set_yscale("log")
    top = max(float(c.mmse.max()) for c in report.curves)
    if top > 0:
        ax_m.set_ylim(top * 1e-8, top * 10)
    ax_m.set_ylabel("MMSE(σ): squared error summed over dimensions")
    ax_m.set_title("MMSE curves")
    ax_m.legend(fontsize=7)
    if e.diagnostics is not None:
        ax_d.plot(e.sigma, e.diagnostics.max_weight.numpy(), color="tab:red", label="E[max posterior weight]")
        ax_d.plot(
            e.sigma,
            e.diagnostics.effective_count.numpy() / e.n_points,
            color="tab:blue",
            label="effective count / N",
        )
    ax_d.set_ylim(0, 1.05)
    ax_d.set_title(f"empirical prior of N={e.n_points} examples: memorisation")
    ax_d.legend(fontsize=7)
    fig.suptitle(title)
    return save_figure(fig, path)
