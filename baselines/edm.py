"""EDM: ln σ ~ N(P_mean, P_std²) (Karras et al. 2022, Sec. 5 and Table 1: P_mean = −1.2, P_std = 1.2).

Density per unit ln σ: the normal density, truncated to the support and renormalised.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.noise.sampler import SAMPLERS, TruncatedSampler
from suite.noise.weighting import LossWeight


@SAMPLERS.register("edm")
class EDMLogNormal(TruncatedSampler):
    """Log-normal σ with location ``p_mean`` and scale ``p_std`` in ln σ."""

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        p_mean: float = -1.2,
        p_std: float = 1.2,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if not p_std > 0:
            raise ValueError(f"p_std must be positive, got {p_std}")
        self.p_mean = float(p_mean)
        self.p_std = float(p_std)

    def _base_log_pdf(self, u: Tensor) -> Tensor:
        z = (u - self.p_mean) / self.p_std
        return -0.5 * z**2 - math.log(self.p_std * math.sqrt(2 * math.pi))

    def _base_cdf(self, u: Tensor) -> Tensor:
        return torch.special.ndtr((u - self.p_mean) / self.p_std)

    def _base_icdf(self, p: Tensor) -> Tensor:
        return self.p_mean + self.p_std * torch.special.ndtri(p)

    def hyperparameters(self) -> dict:
        return super().hyperparameters() | {"p_mean": self.p_mean, "p_std": self.p_std}
