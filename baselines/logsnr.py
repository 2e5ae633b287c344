"""Symmetric location-scale densities in log-SNR, the family of Laplace and Cauchy (Hang et al. 2024,
"Improved Noise Schedule for Diffusion Training", arXiv 2407.03297).

Log-SNR λ = −2u (u = ln σ). For λ = μ + s·z with z drawn from a density g symmetric about 0, u = −λ/2 is
m + β·z with m = −μ/2 and β = s/2 (the sign of z flips, and g does not see it): π(u) = g((u − m)/β)/β,
F(u) = G((u − m)/β) and F⁻¹(p) = m + β·G⁻¹(p), with G the CDF of g. Truncated to the support
(``TruncatedSampler``). A family gives g, G and G⁻¹ of its standard form and the name of its scale.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

from torch import Tensor

from suite.noise.sampler import TruncatedSampler
from suite.noise.weighting import LossWeight


class LogSNRLocationScale(TruncatedSampler):
    """λ = μ + s·z in log-SNR with a symmetric standard density of z, truncated to the support."""

    family: ClassVar[str]  # the density's name in messages: "Laplace"
    scale_name: ClassVar[str]  # the scale's parameter in the config: "b"

    def __init__(
        self, sigma_min: float, sigma_max: float, weight: LossWeight | None, mu: float, scale: float
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if not scale > 0:
            raise ValueError(f"{self.family} scale {self.scale_name} must be positive, got {scale}")
        self.mu = float(mu)
        self.scale = float(scale)
        self._loc = -self.mu / 2
        self._half_scale = self.scale / 2

    @staticmethod
    @abstractmethod
    def _standard_log_pdf(z: Tensor) -> Tensor:
        """ln g(z) of the standard form."""

    @staticmethod
    @abstractmethod
    def _standard_cdf(z: Tensor) -> Tensor:
        """G(z) of the standard form."""

    @staticmethod
    @abstractmethod
    def _standard_icdf(p: Tensor) -> Tensor:
        """G⁻¹(p) of the standard form."""

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        return self._standard_log_pdf((u - self._loc) / self._half_scale) - math.log(self._half_scale)

    def _base_cdf(self, u: Tensor) -> Tensor:
        return self._standard_cdf((u - self._loc) / self._half_scale)

    def _base_icdf(self, p: Tensor) -> Tensor:
        return self._loc + self._half_scale * self._standard_icdf(p)

    def hyperparameters(self) -> dict:
        return super().hyperparameters() | {"mu": self.mu, self.scale_name: self.scale}
