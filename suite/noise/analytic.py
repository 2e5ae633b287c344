"""Data distributions whose Bayes-optimal denoiser is known in closed form.

Each gives draws x₀, the posterior mean E[x₀ | x₀ + σε = x] and hence the per-sample loss of the
*optimal* denoiser, whose expectation is exactly MMSE(σ). They check adaptive samplers against the
analytic information profile and serve as the data of the end-to-end toy tests and benchmarks.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


class AnalyticData:
    """A data distribution with a closed-form posterior mean."""

    dim: int

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """n draws of x₀, shape [n, dim], float64."""
        raise NotImplementedError

    def posterior_mean(self, x: Tensor, sigma: Tensor) -> Tensor:
        """E[x₀ | x] for x = x₀ + σε, row-wise σ of shape [n]."""
        raise NotImplementedError

    def optimal_losses(self, sigma: Tensor, generator: torch.Generator) -> Tensor:
        """‖E[x₀|x] − x₀‖² of fresh draws at each σ: unbiased samples of MMSE(σ)."""
        sigma = sigma.to(torch.float64)
        x0 = self.sample(sigma.numel(), generator)
        x = x0 + sigma[:, None] * torch.randn(x0.shape, generator=generator, dtype=torch.float64)
        return (self.posterior_mean(x, sigma) - x0).square().sum(1)


class GaussianData(AnalyticData):
    """x₀ ~ N(0, v·I_d): E[x₀|x] = v/(v+σ²)·x, MMSE = d·v·σ²/(v+σ²)."""

    def __init__(self, variance: float = 0.25, dim: int = 1) -> None:
        self.variance = float(variance)
        self.dim = int(dim)

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        return math.sqrt(self.variance) * torch.randn(n, self.dim, generator=generator, dtype=torch.float64)

    def posterior_mean(self, x: Tensor, sigma: Tensor) -> Tensor:
        return (self.variance / (self.variance + sigma**2))[:, None] * x

    def posterior_variance(self, x: Tensor, sigma: Tensor) -> Tensor:
        """tr Cov(x₀ | x) = d·vσ²/(v + σ²) per row, whatever x."""
        return (self.dim * self.variance * sigma**2 / (self.variance + sigma**2)).expand(len(x))


class GaussianMixtureData(AnalyticData):
    """x₀ ~ Σ_k w_k N(μ_k, s_k²·I): per component the posterior is Gaussian with mean
    μ_k + s_k²/(s_k²+σ²)·(x − μ_k); responsibilities r_k ∝ w_k N(x; μ_k, (s_k²+σ²)I)."""

    def __init__(self, means: Tensor, stds: Tensor, weights: Tensor) -> None:
        self.means = means.to(torch.float64)
        self.stds = stds.to(torch.float64)
        self.weights = weights.to(torch.float64) / weights.sum()
        self.dim = self.means.shape[1]

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        k = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        noise = torch.randn(n, self.dim, generator=generator, dtype=torch.float64)
        return self.means[k] + self.stds[k, None] * noise

    def posterior_mean(self, x: Tensor, sigma: Tensor) -> Tensor:
        var = self.stds[None, :] ** 2 + sigma[:, None] ** 2  # [n, K]
        sq = (x[:, None, :] - self.means[None]).square().sum(-1)
        logits = self.weights.log()[None] - 0.5 * sq / var - 0.5 * self.dim * var.log()
        resp = torch.softmax(logits, dim=1)
        shrink = self.stds[None, :] ** 2 / var
        comp = self.means[None] + shrink[..., None] * (x[:, None, :] - self.means[None])
        return (resp[..., None] * comp).sum(1)


class PointSetData(AnalyticData):
    """x₀ uniform-or-weighted on a finite set {x_k}: E[x₀|x] = Σ_k softmax_k(ln w_k − ‖x−x_k‖²/2σ²) x_k."""

    def __init__(self, points: Tensor, weights: Tensor | None = None) -> None:
        self.points = points.to(torch.float64).reshape(points.shape[0], -1)
        n = self.points.shape[0]
        w = torch.ones(n, dtype=torch.float64) if weights is None else weights.to(torch.float64)
        self.weights = w / w.sum()
        self.dim = self.points.shape[1]

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        return self.points[torch.multinomial(self.weights, n, replacement=True, generator=generator)]

    def posterior_mean(self, x: Tensor, sigma: Tensor) -> Tensor:
        sq = (x[:, None, :] - self.points[None]).square().sum(-1)
        logits = self.weights.log()[None] - 0.5 * sq / sigma[:, None] ** 2
        return torch.softmax(logits, dim=1) @ self.points
