"""Cauchy (Hang et al. 2024, "Improved Noise Schedule for Diffusion Training", arXiv 2407.03297).

Log-SNR λ ~ Cauchy(μ, γ), recommended μ = 0, γ = 1. With λ = −2u this is u ~ Cauchy(−μ/2, γ/2):
density g/(π((u − m)² + g²)) with m = −μ/2, g = γ/2; F(u) = ½ + arctan((u − m)/g)/π. Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.sampler import SAMPLERS, TruncatedSampler
from suite.weighting import LossWeight


@SAMPLERS.register("cauchy")
class CauchyLogSNR(TruncatedSampler):
    """Cauchy density in log-SNR with location ``mu`` and scale ``gamma``."""

    def __init__(
        self,
        sigma_min: float = 0.002,
        sigma_max: float = 80.0,
        weight: LossWeight | None = None,
        mu: float = 0.0,
        gamma: float = 1.0,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if not gamma > 0:
            raise ValueError(f"Cauchy scale gamma must be positive, got {gamma}")
        self.mu = float(mu)
        self.gamma = float(gamma)
        self._loc = -self.mu / 2
        self._scale = self.gamma / 2

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        z = (u - self._loc) / self._scale
        return -torch.log1p(z**2) - math.log(math.pi * self._scale)

    def _base_cdf(self, u: Tensor) -> Tensor:
        return 0.5 + torch.atan((u - self._loc) / self._scale) / math.pi

    def _base_icdf(self, p: Tensor) -> Tensor:
        return self._loc + self._scale * torch.tan(math.pi * (p - 0.5))

    def hyperparameters(self) -> dict:
        return super().hyperparameters() | {"mu": self.mu, "gamma": self.gamma}
