"""Exact metrics of the ground-truth point tasks, whose optimal denoiser D* and moments are known.

Each metric is bound by its task to the task's distribution and σ range (``ExactMetric.bind``); the labels
say "exact": none is a published metric or a substitute for one.

``kl-bound``: the excess denoising error integrated with the likelihood weighting,

    B(θ) = ∫_{σ_min}^{σ_max} E‖D_θ(x₀ + σε; σ) − D*(x₀ + σε; σ)‖² / σ³ dσ
         = ∫_{ln σ_min}^{ln σ_max} E‖D_θ − D*‖² / σ² d ln σ        (nats).

Source and constant: Song, Durkan, Murray & Ermon 2021, "Maximum likelihood training of score-based
diffusion models" (NeurIPS, arXiv 2101.09258), Thm. 1: KL(p_{t_min} ‖ p_θ^SDE) ≤ KL(p_T ‖ π) +
½∫ g(t)² E‖s_θ(x, t) − ∇ ln p_t(x)‖² dt. On the variance-exploding path x = x₀ + σ(t)ε, g² = dσ²/dt =
2σσ̇, and the score of a denoiser is s = (D − x)/σ² (Tweedie), so s_θ − s* = (D_θ − D*)/σ² and the
integrand is ½·2σσ̇·‖D_θ − D*‖²/σ⁴ dt = ‖D_θ − D*‖²/σ³ dσ. B therefore bounds, up to the prior term
KL(p_{σ_max} ‖ N(0, σ_max²I)) (the same for every network), the KL divergence from the data convolved
with N(0, σ_min²I) to the distribution of the network's reverse-time SDE started at σ_max. It does not
bound the probability-flow ODE's distribution, whose gap needs higher-order score errors too (Lu et al.
2022, "Maximum likelihood training for score-based diffusion ODEs by high-order denoising score
matching", ICML); the ODE samples are scored by the two sample metrics below.

Estimator: ``nodes``-point Gauss–Legendre quadrature in u = ln σ on [ln σ_min, ln σ_max] (fixed nodes and
weights ω_j), B̂ = Σ_j ω_j ê_j with ê_j the mean of e = ‖D_θ − D*‖²/σ_j² over draws (x₀, ε) at σ_j, and
Monte Carlo standard error √(Σ_j ω_j² ŝ_j²/n_j) (independent draws per node). ``samples`` is the average
number of draws per node; they are spent in two stages (Neyman allocation, as in stratified sampling:
n_j ∝ ω_j s_j minimises the variance of Σ_j ω_j ê_j for a fixed total, Cochran, "Sampling Techniques",
§5.5): a pilot of ``samples``/8 draws per node estimates each s_j, and the remaining 7/8 of the total are
shared in proportion to ω_j ŝ_j (at least one chunk of 1024 per node). ê_j and its error are taken from the
second stage alone, so, given the pilot, they are unbiased; on the committed ground-truth runs this
allocation has 0.41–0.48 of the variance of equal draws per node. Draws come in chunks of 1024 from a
generator seeded by (``seed``, node, chunk): the same draws at every evaluation and for every run (common
random numbers), so D* is computed once per process and kept with x₀ + σε (x rounded to float32, what the
network sees, and D* evaluated at that rounded point in float64). The per-σ curve (σ_j, E‖D_θ − D*‖², its
standard error, n_j) is recorded in the row's ``curve``.

``fd-exact``: the Fréchet distance between the Gaussian fitted to the generated points and the exact mean
and covariance of the data (``distributions.moments``): ‖μ_g − μ‖² + tr Σ_g + tr Σ − 2 tr((Σ_gΣ)^½),
through the core's ``suite.metrics.frechet.trace_sqrt_product`` with Σ^½ as the second factor. No
reference sample enters, so the value has only the generated sample's noise.

``sliced-w2``: the sliced Wasserstein-2 distance (Rabin, Peyré, Delon & Bernot 2011; Bonneel et al. 2015)
between the n generated points and n fresh exact draws (from ``seed``): SW₂ = (mean over ``projections``
uniform directions θ of W₂²(θᵀX, θᵀY))^½, each 1-D W₂² the mean squared difference of the sorted
projections. ``floor`` is the same distance between two independent sets of n exact draws: what an
exact sampler scores at this n.

``pi-tv``: the total-variation distance ½∫|π(u) − π*(u)| du (trapezoid rule on ``grid`` points of
u = ln σ) between the run's training-noise density π at this evaluation and its exact target π*. For an
adaptive sampler π* is what its own estimator builds from exact statistics: a copy of the sampler is fed
the analytic MMSE at its bin centres (InfoNoise: MMSE itself, so the same gate and loss weight apply;
KG: its weighted statistic of the MMSE) and builds its density. For a fixed sampler π* is the InfoNoise
target (default estimator settings, the task's ``gate_c``, the run's loss weight), so the row says how
far that fixed π is from the information-guided allocation. ``target`` names which.
"""

from __future__ import annotations

import copy
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from infonoise_modalities.points.distributions import IsotropicMixture, exact_mmse, moments
from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.metrics.frechet import trace_sqrt_product
from suite.noise.analytic import AnalyticData, GaussianMixtureData
from suite.noise.sampler import NoiseSampler, build_sampler
from suite.records import write_atomic
from suite.task import content_fingerprint


class ExactMetric(Metric):
    """A metric that needs the data's distribution and the task's σ range (``bind``)."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.data: AnalyticData | None = None
        self.sigma_min = self.sigma_max = math.nan

    def bind(self, data: AnalyticData, sigma_min: float, sigma_max: float) -> ExactMetric:
        """Score against ``data`` on [σ_min, σ_max]."""
        self.data, self.sigma_min, self.sigma_max = data, float(sigma_min), float(sigma_max)
        return self

    def distribution(self) -> AnalyticData:
        if self.data is None:
            raise ValueError(
                f"metric {self.spec.name!r} is scored only on a ground-truth task, which binds its "
                "distribution (infonoise_modalities.points.task.PointTask)"
            )
        return self.data


def _points(samples: Any) -> Tensor:
    return torch.as_tensor(samples, dtype=torch.float64).reshape(len(samples), -1)


CHUNK = 1024


class NodeDraws:
    """x = x₀ + σ_j ε (float32) and D*(x) (float64) for chunk c of node j, drawn once from a generator
    seeded by (seed, j, c) and kept: the common random numbers of every evaluation of a process."""

    def __init__(self, data: AnalyticData, sigmas: Sequence[float], seed: int) -> None:
        self.data, self.sigmas, self.seed = data, list(sigmas), int(seed)
        self._chunks: dict[tuple[int, int], tuple[Tensor, Tensor]] = {}

    def chunk(self, node: int, index: int) -> tuple[Tensor, Tensor]:
        key = (node, index)
        if key not in self._chunks:
            entropy = np.random.SeedSequence([self.seed, node, index]).generate_state(2, np.uint32)
            gen = torch.Generator().manual_seed(int(entropy[0]) << 32 | int(entropy[1]))
            sigma = self.sigmas[node]
            x0 = self.data.sample(CHUNK, gen)
            x = (x0 + sigma * torch.randn(x0.shape, generator=gen, dtype=torch.float64)).float()
            level = torch.full((CHUNK,), sigma, dtype=torch.float64)
            self._chunks[key] = (x, self.data.posterior_mean(x.double(), level))
        return self._chunks[key]

    def errors(self, model: Any, node: int, first: int, count: int, device: torch.device | str) -> Tensor:
        """e = ‖D_θ − D*‖² of chunks [first, first + count) of ``node``, in float64."""
        x = torch.cat([self.chunk(node, c)[0] for c in range(first, first + count)])
        best = torch.cat([self.chunk(node, c)[1] for c in range(first, first + count)])
        level = torch.full((len(x),), self.sigmas[node], dtype=torch.float32, device=device)
        got = model(x.to(device), level)
        return (got.to("cpu", torch.float64).reshape(len(x), -1) - best).square().sum(1)


@METRICS.register("kl-bound")
class KLBound(ExactMetric):
    """∫ E‖D_θ − D*‖²/σ³ dσ with its Monte Carlo standard error and per-σ curve (module docstring)."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self._draws: NodeDraws | None = None

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec(
            "kl-bound", higher_is_better=False, label="KL bound ∫E‖D−D*‖²/σ³dσ (exact D*, nats)"
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        if inputs.model is None:
            raise ValueError("kl-bound scores the denoiser itself; the evaluation handed no model")
        nodes, samples = int(self.options.get("nodes", 32)), int(self.options.get("samples", 16384))
        sigmas, weights = quadrature(nodes, self.sigma_min, self.sigma_max)
        if samples < 8 * CHUNK:
            raise ValueError(f"kl-bound needs samples >= {8 * CHUNK} draws per node; got samples={samples}")
        if self._draws is None:
            self._draws = NodeDraws(self.distribution(), sigmas.tolist(), int(self.options.get("seed", 0)))
        return kl_bound(inputs.model, self._draws, weights, samples, self.device)


def quadrature(nodes: int, sigma_min: float, sigma_max: float) -> tuple[np.ndarray, np.ndarray]:
    """σ_j and weights ω_j of ``nodes``-point Gauss–Legendre quadrature in ln σ on [σ_min, σ_max]."""
    if nodes < 1 or not 0 < sigma_min < sigma_max:
        raise ValueError(
            f"kl-bound needs nodes >= 1 and 0 < sigma_min < sigma_max; got nodes={nodes}, "
            f"sigma range [{sigma_min}, {sigma_max}]"
        )
    t, w = np.polynomial.legendre.leggauss(nodes)
    u_lo, u_hi = math.log(sigma_min), math.log(sigma_max)
    return np.exp(0.5 * (u_hi - u_lo) * t + 0.5 * (u_hi + u_lo)), 0.5 * (u_hi - u_lo) * w


def kl_bound(
    model: Any, draws: NodeDraws, weights: np.ndarray, samples: int, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """B̂ of ``model`` (a denoiser ``model(x, σ)``) with its error and curve, from ``samples`` draws per
    node on average: a pilot, then the Neyman share of the rest (module docstring)."""
    nodes = len(weights)
    sig = np.asarray(draws.sigmas)
    pilot = max(1, samples // 8 // CHUNK)
    with torch.no_grad():
        spread = np.array([draws.errors(model, j, 0, pilot, device).std().item() for j in range(nodes)])
        share = weights * spread / sig**2
        rest = nodes * samples // CHUNK - nodes * pilot
        total = share.sum()
        counts = [max(1, round(rest * a / total)) if total > 0 else rest // nodes for a in share]
        errors = [draws.errors(model, j, pilot, counts[j], device) for j in range(nodes)]
    excess = np.array([e.mean().item() for e in errors])
    excess_se = np.array([e.std().item() / math.sqrt(len(e)) for e in errors])
    return {
        "value": float((weights * excess / sig**2).sum()),
        "mc_se": float(math.sqrt(((weights * excess_se / sig**2) ** 2).sum())),
        "quadrature": (
            f"Gauss-Legendre in ln sigma, {nodes} nodes, {samples} draws per node on average "
            f"(pilot {pilot * CHUNK}, then Neyman allocation), seed {draws.seed}"
        ),
        "curve": {
            "sigma": sig.tolist(),
            "excess": excess.tolist(),
            "excess_se": excess_se.tolist(),
            "draws": [len(e) for e in errors],
        },
    }


@METRICS.register("fd-exact")
class ExactFrechet(ExactMetric):
    """Fréchet distance of the generated points to the data's exact mean and covariance."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec(
            "fd-exact", higher_is_better=False, label="Fréchet distance to the exact moments (raw points)"
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        data = self.distribution()
        if not isinstance(data, GaussianMixtureData):
            raise ValueError("fd-exact needs a Gaussian mixture's exact moments")
        x = _points(inputs.generated)
        mean, cov = moments(data)
        mean_g = x.mean(0)
        a = (x - mean_g) / math.sqrt(len(x) - 1)
        w, v = torch.linalg.eigh(cov)
        root = (v * w.clamp(min=0).sqrt()) @ v.T  # Σ^½: rootᵀroot = Σ
        value = (
            (mean_g - mean).square().sum() + a.square().sum() + cov.trace() - 2 * trace_sqrt_product(a, root)
        )
        return {"value": float(value), "n": len(x)}


def sliced_w2(x: Tensor, y: Tensor, projections: int, generator: torch.Generator) -> float:
    """SW₂ between equal-size point sets x, y [n, d] over ``projections`` uniform directions."""
    theta = torch.randn(x.shape[1], projections, generator=generator, dtype=torch.float64)
    theta = theta / theta.norm(dim=0, keepdim=True)
    px, py = (x @ theta).sort(0).values, (y @ theta).sort(0).values
    return float((px - py).square().mean().sqrt())


@METRICS.register("sliced-w2")
class SlicedW2(ExactMetric):
    """Sliced Wasserstein-2 distance between generated points and fresh exact draws, with its floor."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec(
            "sliced-w2", higher_is_better=False, label="sliced W2 to fresh exact draws (raw points)"
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        data = self.distribution()
        x = _points(inputs.generated)
        projections = int(self.options.get("projections", 256))
        gen = torch.Generator().manual_seed(int(self.options.get("seed", 0)))
        fresh, other = data.sample(len(x), gen), data.sample(len(x), gen)
        return {
            "value": sliced_w2(x, fresh, projections, torch.Generator().manual_seed(1)),
            "floor": sliced_w2(other, fresh, projections, torch.Generator().manual_seed(1)),
            "n": len(x),
            "projections": projections,
        }


@METRICS.register("pi-tv")
class LearnedDensityTV(ExactMetric):
    """TV distance between the run's π and its exact target (module docstring)."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self._mmse: dict[str, Tensor] = {}

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec("pi-tv", higher_is_better=False, label="TV(π, exact target π*) in ln σ")

    def mmse(self, sigma: Tensor) -> Tensor:
        """The data's MMSE at ``sigma``: computed once per distribution, grid and sample count, and kept in
        the suite's cache folder (every run of a study asks for the same curve)."""
        data = self.distribution()
        if not isinstance(data, IsotropicMixture):
            raise ValueError("pi-tv needs an isotropic Gaussian mixture's MMSE")
        n_mc = int(self.options.get("mmse_samples", 4096))
        key = content_fingerprint(data.means, data.stds, data.weights, sigma.cpu(), str(n_mc))
        if key not in self._mmse:
            path = self.cache_dir / "exact-mmse" / f"{key}.pt"
            if path.is_file():
                self._mmse[key] = torch.load(path, weights_only=True)
            else:
                self._mmse[key] = exact_mmse(data, sigma, n_mc)
                buffer = io.BytesIO()
                torch.save(self._mmse[key], buffer)
                write_atomic(path, buffer.getvalue())
        return self._mmse[key]

    def target(self, sampler: NoiseSampler) -> tuple[Any, str]:
        """π*'s density and which estimator built it."""
        if sampler.adaptive:
            estimator, label = copy.deepcopy(sampler).to("cpu"), f"{sampler.name} estimator on the exact MMSE"
        else:
            gate_c = self.options.get("gate_c")
            estimator = build_sampler(
                "infonoise", sampler.sigma_min, sampler.sigma_max, sampler.weight, gate_c=gate_c
            )
            label = f"infonoise estimator (gate_c {gate_c}) on the exact MMSE"
        sigma = estimator.centers.exp()
        statistic = estimator.statistic(estimator.draws(sigma), self.mmse(sigma))
        return estimator.build_density(statistic), label

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        sampler = inputs.sampler
        if sampler is None:
            raise ValueError("pi-tv scores the run's noise sampler; the evaluation handed none")
        density, label = self.target(sampler)
        u = torch.linspace(
            sampler.u_min, sampler.u_max, int(self.options.get("grid", 2001)), dtype=torch.float64
        )
        pi = sampler.density_on(u).cpu()
        exact = density.prob(u.to(density.nodes.device)).cpu()
        value = 0.5 * torch.trapezoid((pi - exact).abs(), u)
        learned = bool(sampler.adaptive and getattr(sampler, "density", None) is not None)
        return {"value": float(value), "target": label, "learned": learned}
