"""What every figure shares: each sampler label's style, σ axes, saving, and the samplers' densities.

Styles give each of the suite's samplers its own colour × dash × marker (by its place in the table's order),
the same in every figure, ``suite samplers``' included, whichever other samplers a figure draws; other labels
(``edm[p_mean=0.0]``) follow in order. The effective allocation of a sampler is φ(u) = π(u)·w(e^u) per
unit u = ln σ, normalised (the density the training objective really spends on each noise level, for the
task's loss weight w).
Figures are drawn on matplotlib ``Figure`` objects without pyplot: no global state and no GUI backend; each is
saved as a PNG one paper column wide (3.5 in at 300 dpi: 1050 px) with a vector PDF beside it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from suite.config import config_file
from suite.noise.sampler import SAMPLERS, build_sampler
from suite.noise.weighting import LossWeight
from suite.outputs import claim
from suite.report.rows import EXTRA_SAMPLERS, PAPER_SAMPLERS, sampler_order

SIGMA_MIN, SIGMA_MAX = 0.002, 80.0
DASHES: list[tuple[float, ...]] = [(), (5, 2), (1.5, 1.5), (6, 2, 1.5, 2), (3, 1), (8, 2, 1.5, 2, 1.5, 2)]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h"]
SIGMA_LABEL = "noise level σ (log scale)"
COLUMN_INCHES, COLUMN_DPI = 3.5, 300  # a PNG is one paper column wide at print resolution: 1050 px
DENSITY_LABEL = "density per unit ln σ"


def normalise(u: np.ndarray, density: np.ndarray) -> np.ndarray:
    """density/∫density du (trapezoid rule): a probability density per unit u."""
    total = np.trapezoid(density, u)
    return density / total if total > 0 else density


# -- styles ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Style:
    """Colour, dash pattern and marker of one curve."""

    color: tuple[float, float, float]
    dashes: tuple[float, ...]
    marker: str
    index: int

    def kwargs(self, n_points: int) -> dict[str, Any]:
        """Matplotlib ``plot`` keywords: markers on about 8 points, staggered per curve so that curves
        lying on top of each other (KG and InfoNoise at their EDM warm-up prior) still show every marker."""
        step = max(1, n_points // 8)
        offset = int(step * ((self.index * 0.37) % 1))
        return {
            "color": self.color,
            "linestyle": (0, self.dashes) if self.dashes else "-",
            "marker": self.marker,
            "markevery": (offset, step),
            "markersize": 5,
        }


def sampler_of(label: str) -> str:
    """The sampler a legend label draws: "kg (warm-up prior: edm)" → "kg", "logu (p=1)" → "logu"; a swept
    label (``edm[p_mean=0.0]``) is a sampler label of its own."""
    return label.split(" (", 1)[0]


def style_map(labels: Sequence[str]) -> dict[str, Style]:
    """Distinct colour × dash × marker per label, in the table's sampler order: each of the suite's samplers
    keeps its own in every figure (``sampler_of`` its label), other labels follow in order. The one palette
    of every figure."""
    ordered = sampler_order(list(labels))
    known = list(PAPER_SAMPLERS + EXTRA_SAMPLERS)  # one fixed style each, whichever others are drawn
    others = [label for label in ordered if sampler_of(label) not in known]
    palette = sns.color_palette("tab10", 10) + sns.color_palette("Dark2", 8)
    index = {
        label: known.index(sampler_of(label))
        if sampler_of(label) in known
        else len(known) + others.index(label)
        for label in ordered
    }
    return {
        label: Style(tuple(palette[i % len(palette)]), DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)], i)
        for label, i in index.items()
    }


def new_figure(
    nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] = (9, 5.6), **kwargs: Any
) -> tuple[Figure, Any]:
    """A figure and its axes without pyplot (no global state, no GUI backend needed)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def seaborn_styles(styles: dict[str, Style]) -> dict[str, Any]:
    """``sns.lineplot`` keywords giving each sampler label its ``Style``."""
    order = list(styles)
    return {
        "hue": "sampler",
        "style": "sampler",
        "hue_order": order,
        "style_order": order,
        "palette": {k: v.color for k, v in styles.items()},
        "dashes": {k: v.dashes for k, v in styles.items()},
        "markers": {k: v.marker for k, v in styles.items()},
    }


def png_dpi(fig: Figure) -> float:
    """The resolution at which ``fig``, cropped to what it draws (``bbox_inches="tight"``), is
    ``COLUMN_INCHES`` × ``COLUMN_DPI`` pixels wide: a paper's column at print resolution. Text does not
    scale exactly with the resolution, so a first rendering's width corrects the estimate once."""
    fig.draw_without_rendering()  # a constrained layout settles only when drawn
    width = fig.get_tightbbox().width + 2 * float(mpl.rcParams["savefig.pad_inches"])  # inches
    dpi = COLUMN_INCHES * COLUMN_DPI / width
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    pixels = int.from_bytes(buffer.getvalue()[16:20], "big")  # the PNG header's width
    return dpi * COLUMN_INCHES * COLUMN_DPI / pixels


def save_figure(fig: Figure, base: Path) -> list[Path]:
    """Write ``base``.png, one column wide (``png_dpi``), and ``base``.pdf beside it (vector); returns both
    paths."""
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = [base.parent / f"{base.name}.png", base.parent / f"{base.name}.pdf"]
    for path in paths:
        claim(path)
    fig.savefig(paths[0], dpi=png_dpi(fig), bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    return paths


def sigma_axis(ax: Axes, limits: tuple[float, float] = (SIGMA_MIN, SIGMA_MAX)) -> None:
    """Log σ axis over the support ``limits`` with its label and a light grid."""
    ax.set_xscale("log")
    ax.set_xlim(*limits)
    ax.set_xlabel(SIGMA_LABEL)
    ax.grid(True, which="major", alpha=0.3)


# -- densities ---------------------------------------------------------------------------------------
def effective_allocation(u: np.ndarray, pi: np.ndarray, weight: LossWeight) -> np.ndarray:
    """φ(u) = π(u)·w(e^u), normalised per unit ln σ."""
    w = weight(torch.as_tensor(np.exp(u), dtype=torch.float64)).numpy()
    return normalise(u, np.asarray(pi) * w)


def _config_params(name: str) -> dict[str, Any]:
    """The sampler's parameters from its config file (``suite/conf/sampler/<name>.yaml``), unresolved."""
    try:
        path = config_file("sampler", name)
    except ValueError:
        return {}
    params = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    params.pop("name", None)  # type: ignore[union-attr]
    return params  # type: ignore[return-value]


def registered_densities(
    u: np.ndarray, weight: LossWeight, sigma_min: float = SIGMA_MIN, sigma_max: float = SIGMA_MAX
) -> list[tuple[str, np.ndarray]]:
    """(legend label, π(u)) of every registered sampler with its config defaults on [σ_min, σ_max].

    Adaptive samplers are shown at their warm-up base prior (their density before the first rebuild).
    """
    grid = torch.as_tensor(u, dtype=torch.float64)
    curves = []
    for name in sampler_order(SAMPLERS.names()):
        params = _config_params(name)
        if SAMPLERS.get(name).adaptive:
            base, base_params = params.get("base", "edm"), dict(params.get("base_params") or {})
            sampler = build_sampler(base, sigma_min, sigma_max, weight, **base_params)
            shown = ", ".join(f"{k}={v}" for k, v in base_params.items())
            label = f"{name} (warm-up prior: {base}{f' {shown}' if shown else ''})"
        else:
            sampler = build_sampler(name, sigma_min, sigma_max, weight, **params)
            shown = ", ".join(f"{k}={v}" for k, v in params.items())
            label = f"{name}{f' ({shown})' if shown else ''}"
        curves.append((label, sampler.density_on(grid).numpy()))
    return curves
