"""Training objectives: what one step minimises, and what the adaptive samplers observe.

The default is the Gaussian x₀-space objective of EDM (Karras et al. 2022, arXiv 2206.00364, Eq. 2 and 8)

    L = E_{σ~π, x₀, ε}[ w(σ)·‖D(x₀ + σε; σ) − x₀‖² ],

with the task's fixed weight w and an adaptive sampler's per-sample importance factor. Every objective
returns two per-sample quantities: the weighted loss that carries the gradient, and the *observed* error,
the unweighted x₀-space squared error ‖D(x₀ + σε; σ) − x₀‖² summed over the example. Its expectation at
fixed σ is the MMSE(σ) of the current denoiser — the quantity InfoNoise turns into the entropy-rate
profile ρ(σ) ∝ MMSE(σ)/σ³ through the I–MMSE relation, and Kingma & Gao's schedule histograms. A task
whose model space is learned (token embeddings) supplies its own objective with ``encode``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from suite.noise.weighting import LossWeight


class Objective(ABC):
    """A per-sample training objective on the Gaussian path x = x₀ + σ·ε."""

    def encode(self, model: nn.Module, x0: Tensor) -> Tensor:
        """The batch's examples in model space (the identity when the data already are)."""
        return x0

    @abstractmethod
    def losses(
        self,
        model: nn.Module,
        x0: Tensor,
        sigma: Tensor,
        noise: Tensor,
        cond: dict[str, Tensor],
        importance: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """(weighted loss carrying the gradient, observed unweighted x₀-space error, detached), each [N]."""


class GaussianX0Objective(Objective):
    """w(σ)·importance·‖D(x₀ + σε; σ) − x₀‖², the squared error summed over every non-batch dimension.

    ``denoise`` is the one place a subclass changes: it may return a per-sample auxiliary loss (a
    cross-entropy on the denoiser's logits, say) that is added to the weighted error and is not observed.
    """

    def __init__(self, weight: LossWeight) -> None:
        self.weight = weight

    def denoise(
        self, model: nn.Module, x: Tensor, sigma: Tensor, cond: dict[str, Tensor], x0: Tensor
    ) -> tuple[Tensor, Tensor | None]:
        """D(x; σ) and an optional per-sample auxiliary loss [N] (none here)."""
        return model(x, sigma, **cond), None

    def losses(
        self,
        model: nn.Module,
        x0: Tensor,
        sigma: Tensor,
        noise: Tensor,
        cond: dict[str, Tensor],
        importance: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        if noise.shape != x0.shape:
            raise ValueError(f"noise shape {tuple(noise.shape)} differs from data shape {tuple(x0.shape)}")
        sigma = sigma.to(device=x0.device, dtype=torch.float32)
        x = x0 + sigma.reshape(-1, *([1] * (x0.ndim - 1))) * noise
        denoised, auxiliary = self.denoise(model, x, sigma, cond, x0)
        error = (denoised - x0).square().flatten(1).sum(dim=1)
        weighted = self.weight(sigma) * error
        if auxiliary is not None:
            weighted = weighted + auxiliary
        if importance is not None:
            weighted = weighted * importance
        return weighted, error.detach()
