"""Laplace (Hang et al. 2024, "Improved Noise Schedule for Diffusion Training", arXiv 2407.03297).

Log-SNR λ ~ Laplace(μ, b), recommended μ = 0, b = 0.5. With λ = −2u this is u ~ Laplace(−μ/2, b/2):
density exp(−|u − m|/β)/(2β) with m = −μ/2, β = b/2; F(u) = ½·exp((u−m)/β) below m and
1 − ½·exp(−(u−m)/β) above. Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.sampler import SAMPLERS, TruncatedSampler
from suite.weighting import LossWeight


@SAMPLERS.register("laplace")
class LaplaceLogSNR(TruncatedSampler):
    """Laplace density in log-SNR with location ``mu`` and scale ``b``."""

    def __init__(
        self,
        sigma_min: float = 0.002,
        sigma_max: float = 80.0,
        weight: LossWeight | None = None,
        mu: float = 0.0,
        b: float = 0.5,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if not b > 0:
            raise ValueError(f"Laplace scale b must be positive, got {b}")
        self.mu = float(mu)
        self.b = float(b)
        self._loc = -self.mu / 2
        self._scale = self.b / 2

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        return -(u - self._loc).abs() / self._scale - math.log(2 * self._scale)

    def _base_cdf(self, u: Tensor) -> Tensor:
        z = (u - self._loc) / self._scale
        return torch.where(z < 0, 0.5 * torch.exp(z.clamp(max=0)), 1 - 0.5 * torch.exp(-z.clamp(min=0)))

    def _base_icdf(self, p: Tensor) -> Tensor:
        below = self._loc + self._scale * torch.log(2 * p)
        above = self._loc - self._scale * torch.log(2 * (1 - p))
        return torch.where(p < 0.5, below, above)

    def hyperparameters(self) -> dict:
        return super().hyperparameters() | {"mu": self.mu, "b": self.b}
