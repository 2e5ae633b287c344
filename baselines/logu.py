"""LogU: ln σ ~ U[ln σ_min, ln σ_max].

The log-uniform prior of VE diffusion (Song et al. 2021; EDM's ``VELoss`` draws σ = σ_min·(σ_max/σ_min)^U).
Density per unit ln σ: π(u) = 1/(ln σ_max − ln σ_min) on the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.noise.sampler import SAMPLERS, NoiseSampler


@SAMPLERS.register("logu")
class LogUniform(NoiseSampler):
    """Uniform in u = ln σ over the whole support."""

    def log_prob(self, u: Tensor) -> Tensor:
        u = u.to(torch.float64)
        inside = (u >= self.u_min) & (u <= self.u_max)
        value = torch.full_like(u, -math.log(self.u_max - self.u_min))
        return torch.where(inside, value, torch.full_like(u, -math.inf))

    def cdf(self, u: Tensor) -> Tensor:
        u = u.to(torch.float64).clamp(self.u_min, self.u_max)
        return (u - self.u_min) / (self.u_max - self.u_min)

    def _icdf(self, p: Tensor) -> Tensor:
        return self.u_min + p * (self.u_max - self.u_min)
