"""Fixed loss weights w(σ) on the x₀-space squared error.

The training objective of every run is E_{σ~π}[w(σ)·‖D(x₀+σε; σ) − x₀‖²]; the pair (π, w) fixes the
effective allocation φ(σ) = π(σ)·w(σ) over noise levels. The weight belongs to the task and stays the
same for every sampler of a comparison.
"""

from __future__ import annotations

import torch
from torch import Tensor


class LossWeight:
    """A fixed weight w(σ) > 0 of the x₀-space error."""

    name: str = ""

    def __call__(self, sigma: Tensor) -> Tensor:
        raise NotImplementedError

    def describe(self) -> dict[str, float | str]:
        """Name and parameters, for records."""
        return {"name": self.name}


class EDMWeight(LossWeight):
    """EDM's weight w(σ) = (σ² + σ_data²)/(σ·σ_data)² (Karras et al. 2022, Eq. 8 and Table 1).

    It makes the effective output-space loss of the preconditioned network unit-variance at every σ.
    """

    name = "edm"

    def __init__(self, sigma_data: float) -> None:
        if not sigma_data > 0:
            raise ValueError(f"sigma_data must be positive, got {sigma_data}")
        self.sigma_data = float(sigma_data)

    def __call__(self, sigma: Tensor) -> Tensor:
        sd2 = self.sigma_data**2
        s2 = sigma**2
        return (s2 + sd2) / (s2 * sd2)

    def describe(self) -> dict[str, float | str]:
        return {"name": self.name, "sigma_data": self.sigma_data}


class UniformWeight(LossWeight):
    """w(σ) = 1: the plain x₀-space squared error."""

    name = "uniform"

    def __call__(self, sigma: Tensor) -> Tensor:
        return torch.ones_like(sigma)


WEIGHTS: dict[str, type[LossWeight]] = {"edm": EDMWeight, "uniform": UniformWeight}


def build_weight(name: str, sigma_data: float) -> LossWeight:
    """The loss weight called ``name`` (``edm`` or ``uniform``) for data of scale ``sigma_data``."""
    if name == "edm":
        return EDMWeight(sigma_data)
    if name == "uniform":
        return UniformWeight()
    raise ValueError(f"unknown loss weight {name!r}; valid weights: {', '.join(sorted(WEIGHTS))}")
