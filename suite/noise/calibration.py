"""Analytic test beds for adaptive samplers: data with exact MMSE, and the target they should reach.

For each case the target is InfoNoise's own formula applied to the *exact* MMSE on a fine grid,
π*(u) ∝ MMSE(σ)/σ² · g_c(σ) / w(σ), with the pivot c found by the same rule on the sampler's bin centres.
``total_variation`` measures how far a learned density is from it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from suite.noise import information
from suite.noise.analytic import AnalyticData, GaussianData, GaussianMixtureData, PointSetData
from suite.noise.infonoise import InfoNoise
from suite.noise.tabulated import TabulatedDensity
from suite.noise.weighting import EDMWeight

SIGMA_MIN, SIGMA_MAX = 0.002, 80.0


@dataclass(frozen=True)
class AnalyticCase:
    """A data set with its exact MMSE curve and the σ_data used for the EDM loss weight."""

    data: AnalyticData
    mmse: Callable[[Tensor], Tensor]
    sigma_data: float

    def make_sampler(self, **params: object) -> tuple[InfoNoise, float]:
        """An InfoNoise sampler on the default support with this case's EDM weight."""
        sampler = InfoNoise(SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(self.sigma_data), **params)  # type: ignore[arg-type]
        return sampler, self.sigma_data


def _mixture() -> GaussianMixtureData:
    means = torch.tensor([[-1.0, -0.5], [1.0, -0.5], [0.0, 1.0]])
    return GaussianMixtureData(means, torch.tensor([0.1, 0.2, 0.05]), torch.tensor([0.3, 0.3, 0.4]))


def _mixture_mmse(sigma: Tensor) -> Tensor:
    data = _mixture()
    return information.isotropic_mixture_mmse_2d(sigma, data.means, data.stds, data.weights)


_TWO_POINTS = torch.tensor([[-1.0], [1.0]])

ANALYTIC_CASES: dict[str, AnalyticCase] = {
    "gaussian": AnalyticCase(
        GaussianData(variance=0.25, dim=16), lambda s: information.gaussian_mmse(s, 0.25, dim=16), 0.5
    ),
    "two_point": AnalyticCase(
        PointSetData(_TWO_POINTS), lambda s: information.point_set_mmse(s, _TWO_POINTS), 1.0
    ),
    "mixture_2d": AnalyticCase(_mixture(), _mixture_mmse, 0.8),
}


@functools.cache
def _exact_mmse_on_grid(case: str, u_min: float, u_max: float, nodes: int) -> tuple[Tensor, Tensor]:
    u = torch.linspace(u_min, u_max, nodes, dtype=torch.float64)
    return u, ANALYTIC_CASES[case].mmse(u.exp()).to(torch.float64)


def analytic_target(case: str, sampler: InfoNoise, nodes: int = 321) -> TabulatedDensity:
    """The density ``sampler`` should converge to on ``case`` (exact MMSE, fine piecewise-linear grid)."""
    spec = ANALYTIC_CASES[case]
    centers = sampler.centers
    pivot = sampler.gate_pivot(centers.exp(), spec.mmse(centers.exp()).to(torch.float64))
    u, mmse = _exact_mmse_on_grid(case, math.log(sampler.sigma_min), math.log(sampler.sigma_max), nodes)
    return sampler.target_density(mmse, u, pivot)


def total_variation(p: TabulatedDensity | None, q: TabulatedDensity, points: int = 20001) -> float:
    """½∫|p − q| du on q's node range (trapezoid on a fine grid)."""
    if p is None:
        return 1.0
    u = torch.linspace(q.nodes[0].item(), q.nodes[-1].item(), points, dtype=torch.float64)
    return 0.5 * torch.trapezoid((p.prob(u) - q.prob(u)).abs(), u).item()
