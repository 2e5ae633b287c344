"""Laplace (Hang et al. 2024, "Improved Noise Schedule for Diffusion Training", arXiv 2407.03297).

Log-SNR λ ~ Laplace(μ, b), recommended μ = 0, b = 0.5; in u = −λ/2 this is u ~ Laplace(−μ/2, b/2)
(``baselines.logsnr``). Standard form: g(z) = exp(−|z|)/2, G(z) = ½·exp(z) below 0 and 1 − ½·exp(−z)
above, G⁻¹(p) = ln 2p below ½ and −ln 2(1 − p) above. Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from baselines.logsnr import LogSNRLocationScale
from suite.noise.sampler import SAMPLERS
from suite.noise.weighting import LossWeight


@SAMPLERS.register("laplace")
class LaplaceLogSNR(LogSNRLocationScale):
    """Laplace density in log-SNR with location ``mu`` and scale ``b``."""

    family = "Laplace"
    scale_name = "b"

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        mu: float = 0.0,
        b: float = 0.5,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight, mu, b)

    @staticmethod
    def _standard_log_pdf(z: Tensor) -> Tensor:
        return -z.abs() - math.log(2)

    @staticmethod
    def _standard_cdf(z: Tensor) -> Tensor:
        return torch.where(z < 0, 0.5 * torch.exp(z.clamp(max=0)), 1 - 0.5 * torch.exp(-z.clamp(min=0)))

    @staticmethod
    def _standard_icdf(p: Tensor) -> Tensor:
        return torch.where(p < 0.5, torch.log(2 * p), -torch.log(2 * (1 - p)))
