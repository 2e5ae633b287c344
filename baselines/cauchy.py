"""Cauchy (Hang et al. 2024, "Improved Noise Schedule for Diffusion Training", arXiv 2407.03297).

Log-SNR λ ~ Cauchy(μ, γ), recommended μ = 0, γ = 1; in u = −λ/2 this is u ~ Cauchy(−μ/2, γ/2)
(``baselines.logsnr``). Standard form: g(z) = 1/(π(1 + z²)), G(z) = ½ + arctan(z)/π,
G⁻¹(p) = tan(π(p − ½)). Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from baselines.logsnr import LogSNRLocationScale
from suite.noise.sampler import SAMPLERS
from suite.noise.weighting import LossWeight


@SAMPLERS.register("cauchy")
class CauchyLogSNR(LogSNRLocationScale):
    """Cauchy density in log-SNR with location ``mu`` and scale ``gamma``."""

    family = "Cauchy"
    scale_name = "gamma"

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        mu: float = 0.0,
        gamma: float = 1.0,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight, mu, gamma)

    @staticmethod
    def _standard_log_pdf(z: Tensor) -> Tensor:
        return -torch.log1p(z**2) - math.log(math.pi)

    @staticmethod
    def _standard_cdf(z: Tensor) -> Tensor:
        return 0.5 + torch.atan(z) / math.pi

    @staticmethod
    def _standard_icdf(p: Tensor) -> Tensor:
        return torch.tan(math.pi * (p - 0.5))
