"""FM: the rectified-flow / flow-matching path x_t = (1−t)·x₀ + t·ε (t = 0 clean).

Its noise-to-signal ratio is σ = t/(1−t), so u = ln σ = logit t.
- ``t_distribution: uniform`` (Lipman et al. 2023; Liu et al. 2023): t ~ U(0, 1) ⇒ u ~ Logistic(0, 1),
  density σ/(1+σ)² per unit ln σ.
- ``t_distribution: logit_normal`` (Esser et al. 2024, SD3): logit t ~ N(m, s²) ⇒ u ~ N(m, s²).
Truncated to the support.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.noise.sampler import SAMPLERS, TruncatedSampler
from suite.noise.weighting import LossWeight

T_DISTRIBUTIONS = ("uniform", "logit_normal")


@SAMPLERS.register("fm")
class FlowMatching(TruncatedSampler):
    """Flow-matching time t drawn uniformly (default) or logit-normally, mapped to σ = t/(1−t)."""

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        t_distribution: str = "uniform",
        m: float = 0.0,
        s: float = 1.0,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if t_distribution not in T_DISTRIBUTIONS:
            raise ValueError(
                f"unknown t_distribution {t_distribution!r}; valid: {', '.join(T_DISTRIBUTIONS)}"
            )
        if not s > 0:
            raise ValueError(f"logit-normal scale s must be positive, got {s}")
        self.t_distribution = t_distribution
        self.m = float(m)
        self.s = float(s)

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        if self.t_distribution == "uniform":
            return -u - 2 * torch.nn.functional.softplus(-u)  # ln(eᵘ/(1+eᵘ)²) written stably
        z = (u - self.m) / self.s
        return -0.5 * z**2 - math.log(self.s * math.sqrt(2 * math.pi))

    def _base_cdf(self, u: Tensor) -> Tensor:
        if self.t_distribution == "uniform":
            return torch.sigmoid(u)
        return torch.special.ndtr((u - self.m) / self.s)

    def _base_icdf(self, p: Tensor) -> Tensor:
        if self.t_distribution == "uniform":
            return torch.logit(p)
        return self.m + self.s * torch.special.ndtri(p)

    def hyperparameters(self) -> dict:
        params = super().hyperparameters() | {"t_distribution": self.t_distribution}
        if self.t_distribution == "logit_normal":
            params |= {"m": self.m, "s": self.s}
        return params
