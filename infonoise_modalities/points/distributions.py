"""The ground-truth distributions: isotropic Gaussian mixtures Σ_k w_k N(μ_k, s²I), their moments and MMSE.

Both are ``suite.noise.analytic.GaussianMixtureData``, so the posterior mean E[x₀ | x₀ + σε = x] (the optimal
denoiser D*) is in closed form:

* ``ring``: ``components`` equal-weight Gaussians of standard deviation ``spread`` whose means lie evenly on
  a circle of radius ``radius`` in the plane (d = 2);
* ``two-scale``: in d dimensions, ``clusters`` centres c_i ~ N(0, I_d) and around each ``subclusters``
  centres c_i + δ_ij, δ_ij ~ N(0, ``sub_scale``²·I_d), each the mean of a Gaussian of standard deviation
  ``spread`` ≪ ``sub_scale`` ≪ 1, all drawn from ``structure_seed``. Which cluster a point belongs to is
  decided at σ of the order of the cluster distances (≈ √(2d)), which sub-cluster at σ of the order of
  √(2d)·``sub_scale``: the entropy-rate profile MMSE(σ)/σ² has two bands, of ln(clusters) and
  ln(subclusters) nats, a decade or more apart, and a continuous part below σ ≈ ``spread``;
* ``fitted``: a mixture of spherical Gaussians fitted to real data and shipped as a JSON ``file`` beside
  this module (weights, means, standard deviations and the provenance of the fit, checked by its
  ``sha256``): ``fashion_mixture.json`` is Fashion-MNIST on its first 32 principal components, 64
  components by EM (``scripts/fit_fashion_mixture.py``), so the information profile is the data's.

``IsotropicMixture`` computes the same posterior mean as ``GaussianMixtureData`` through matrix products
(‖x − μ_k‖² = ‖x‖² − 2xᵀμ_k + ‖μ_k‖², and Σ_k r_k(μ_k + λ_k(x − μ_k)) = Σ_k r_k(1 − λ_k)μ_k + (Σ_k r_kλ_k)x
with λ_k = s_k²/(s_k² + σ²)), so no [n, K, d] array is formed: the metrics call it for every evaluation.

Moments of a mixture: mean μ̄ = Σ_k w_k μ_k, covariance Σ = Σ_k w_k (s_k²I + μ_kμ_kᵀ) − μ̄μ̄ᵀ. MMSE(σ) is
the tensor-product quadrature of ``suite.noise.information.isotropic_mixture_mmse_2d`` in d = 2 and the
Monte Carlo average of the posterior variance tr Cov(x₀ | x) = Σ_k r_k(d·s_k²(1 − λ_k) + ‖m_k‖²) − ‖m̄‖²
over draws x of the noisy data otherwise (Rao–Blackwellised, as
``suite.noise.information.gaussian_mixture_mmse``, whose general covariance path costs d times more per draw).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from suite.noise.analytic import AnalyticData, GaussianData, GaussianMixtureData
from suite.noise.information import isotropic_mixture_mmse_2d

KINDS = ("ring", "two-scale", "fitted")


FITTED = Path(__file__).resolve().parent


class IsotropicMixture(GaussianMixtureData):
    """Σ_k w_k N(μ_k, s_k²I) with the posterior mean in matrix products (module docstring)."""

    def responsibilities(self, x: Tensor, sigma: Tensor) -> tuple[Tensor, Tensor]:
        """r [n, K] and λ [n, K] at x [n, d] for row-wise σ [n]."""
        var = self.stds[None, :] ** 2 + sigma[:, None] ** 2
        sq = x.square().sum(1, keepdim=True) - 2 * x @ self.means.T + self.means.square().sum(1)[None]
        logits = self.weights.log()[None] - 0.5 * sq / var - 0.5 * self.dim * var.log()
        return torch.softmax(logits, dim=1), self.stds[None, :] ** 2 / var

    def posterior_mean(self, x: Tensor, sigma: Tensor) -> Tensor:
        return self._mean(x, *self.responsibilities(x, sigma))

    def _mean(self, x: Tensor, resp: Tensor, shrink: Tensor) -> Tensor:
        """m̄ = Σ_k r_k((1 − λ_k)μ_k + λ_k x) from the responsibilities r and shrinkages λ."""
        return (resp * (1 - shrink)) @ self.means + (resp * shrink).sum(1, keepdim=True) * x

    def posterior_variance(self, x: Tensor, sigma: Tensor) -> Tensor:
        """tr Cov(x₀ | x) per row: Σ_k r_k(d·s_k²(1 − λ_k) + ‖m_k‖²) − ‖m̄‖², with ‖m_k‖² expanded in
        products of x and μ_k."""
        resp, shrink = self.responsibilities(x, sigma)
        keep = 1 - shrink
        xm = x @ self.means.T
        norm = (
            keep.square() * self.means.square().sum(1)[None]
            + 2 * keep * shrink * xm
            + shrink.square() * x.square().sum(1, keepdim=True)
        )
        within = self.dim * self.stds[None, :] ** 2 * keep
        return (resp * (within + norm)).sum(1) - self._mean(x, resp, shrink).square().sum(1)


def ring(components: int, radius: float, spread: float) -> IsotropicMixture:
    """Equal-weight Gaussians of std ``spread`` on a circle of ``radius`` (2-D)."""
    angle = 2 * math.pi * torch.arange(components, dtype=torch.float64) / components
    means = radius * torch.stack([angle.cos(), angle.sin()], dim=1)
    k = torch.ones(components, dtype=torch.float64)
    return IsotropicMixture(means, spread * k, k)


def two_scale(
    dim: int, clusters: int, subclusters: int, sub_scale: float, spread: float, structure_seed: int
) -> IsotropicMixture:
    """Clusters of tight sub-clusters in ``dim`` dimensions (module docstring), from ``structure_seed``."""
    gen = torch.Generator().manual_seed(structure_seed)
    centres = torch.randn(clusters, 1, dim, generator=gen, dtype=torch.float64)
    offsets = sub_scale * torch.randn(clusters, subclusters, dim, generator=gen, dtype=torch.float64)
    means = (centres + offsets).reshape(-1, dim)
    k = torch.ones(means.shape[0], dtype=torch.float64)
    return IsotropicMixture(means, spread * k, k)


def fitted(file: str, sha256: str) -> IsotropicMixture:
    """The spherical mixture stored in ``file`` (a name beside this module), refused unless its content's
    SHA-256 is ``sha256``."""
    path = FITTED / file
    if path.parent != FITTED or not path.is_file():
        known = sorted(p.name for p in FITTED.glob("*.json"))
        raise ValueError(
            f"distribution.file={file!r} is not a fitted mixture beside {FITTED}; valid: {known}"
        )
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    if digest != sha256:
        raise ValueError(
            f"{path}: sha256 {digest} is not the configured {sha256}: the file changed; refit it with "
            "scripts/fit_fashion_mixture.py and set distribution.sha256 to the new digest"
        )
    stored = json.loads(content)
    means = torch.tensor(stored["means"], dtype=torch.float64)
    stds = torch.tensor(stored["stds"], dtype=torch.float64)
    weights = torch.tensor(stored["weights"], dtype=torch.float64)
    return IsotropicMixture(means, stds, weights)


def build_distribution(cfg: Mapping[str, Any]) -> IsotropicMixture:
    """The distribution a task config's ``distribution`` mapping names (``kind`` and its parameters)."""
    params = dict(cfg)
    kind = params.pop("kind", None)
    if kind not in KINDS:
        raise ValueError(
            f"distribution.kind={kind!r} is not a ground-truth distribution; valid: {', '.join(KINDS)}"
        )
    try:
        if kind == "ring":
            return ring(
                int(params.pop("components")), float(params.pop("radius")), float(params.pop("spread"))
            )
        if kind == "fitted":
            data = fitted(str(params.pop("file")), str(params.pop("sha256")))
            if params:
                raise ValueError(f"distribution.kind=fitted: unknown parameters {sorted(params)}")
            return data
        data = two_scale(
            int(params.pop("dim")),
            int(params.pop("clusters")),
            int(params.pop("subclusters")),
            float(params.pop("sub_scale")),
            float(params.pop("spread")),
            int(params.pop("structure_seed")),
        )
    except KeyError as err:
        raise ValueError(f"distribution.kind={kind}: missing parameter {err.args[0]!r}") from None
    if params:
        raise ValueError(f"distribution.kind={kind}: unknown parameters {sorted(params)}")
    return data


def moments(data: AnalyticData) -> tuple[Tensor, Tensor]:
    """The exact mean [d] and covariance [d, d] of a Gaussian or a Gaussian mixture (float64)."""
    if isinstance(data, GaussianData):
        eye = torch.eye(data.dim, dtype=torch.float64)
        return torch.zeros(data.dim, dtype=torch.float64), data.variance * eye
    if not isinstance(data, GaussianMixtureData):
        raise ValueError(f"exact moments are known for Gaussian data and mixtures, not {type(data).__name__}")
    w, mu = data.weights, data.means
    mean = w @ mu
    second = (w * data.stds**2).sum() * torch.eye(data.dim, dtype=torch.float64) + (mu.T * w) @ mu
    return mean, second - torch.outer(mean, mean)


def exact_mmse(data: IsotropicMixture, sigma: Tensor, n_mc: int = 4096, seed: int = 0) -> Tensor:
    """MMSE(σ) of the mixture at each σ: quadrature in 2-D, the mean posterior variance over ``n_mc`` draws
    (the same x₀ and ε at every σ, from ``seed``) in higher dimension."""
    sigma = sigma.to(torch.float64).cpu()
    if data.dim == 2:
        return isotropic_mixture_mmse_2d(sigma, data.means, data.stds, data.weights)
    gen = torch.Generator().manual_seed(seed)
    x0 = data.sample(n_mc, gen)
    eps = torch.randn(x0.shape, generator=gen, dtype=torch.float64)
    out = [data.posterior_variance(x0 + s * eps, s.expand(n_mc)).mean() for s in sigma]
    return torch.stack(out)
