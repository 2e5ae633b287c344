"""Cos: the continuous cosine schedule (Nichol & Dhariwal 2021, offset s → 0).

t ~ U(0, 1) with ᾱ(t) = cos²(πt/2), so σ = √(1−ᾱ)/√ᾱ = tan(πt/2): σ is half-Cauchy(0, 1).
In u = ln σ: F(u) = (2/π)·arctan(eᵘ), density π(u) = 2σ/(π(1+σ²)), F⁻¹(p) = ln tan(πp/2);
equivalently p(λ) = sech(λ/2)/(2π) in log-SNR (Kingma & Gao 2023, Table 1). Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.noise.sampler import SAMPLERS, TruncatedSampler


@SAMPLERS.register("cos")
class Cosine(TruncatedSampler):
    """σ = tan(πt/2), t ~ U(0, 1), truncated to [σ_min, σ_max]."""

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        # 2σ/(π(1+σ²)) = 1/(π·cosh u)
        return -math.log(math.pi) - torch.log(torch.cosh(u))

    def _base_cdf(self, u: Tensor) -> Tensor:
        return (2 / math.pi) * torch.atan(torch.exp(u))

    def _base_icdf(self, p: Tensor) -> Tensor:
        return torch.log(torch.tan(0.5 * math.pi * p))
