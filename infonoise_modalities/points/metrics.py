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

Estimator: the (2n + 1)-point Gauss–Kronrod rule in u = ln σ on [ln σ_min, ln σ_max], n = ``nodes`` (fixed
nodes and Kronrod weights ω_j; Kronrod 1965, nodes and weights from the Jacobi–Kronrod matrix of Laurie,
"Calculation of Gauss-Kronrod quadrature rules", Math. Comp. 66, 1997), B̂ = Σ_j ω_j ê_j/σ_j² with ê_j an
estimate of E e, e = ‖D_θ − D*‖², over draws (x₀, ε) at σ_j, and Monte Carlo standard error
√(Σ_j ω_j² se(ê_j)²/σ_j⁴) (independent draws per node). Its quadrature error is estimated by the embedded
n-point Gauss–Legendre rule on every other node (weights γ_j, zero at the Kronrod-only nodes), from the same
ê_j: ``quadrature_error`` = |Σ_j (ω_j − γ_j) ê_j/σ_j²| = |B̂ − B̂_Gauss|, the error of the coarser rule
(QUADPACK's raw estimate, Piessens et al. 1983, before its heuristic scaling), which bounds the Kronrod
value's own error wherever the Gauss rule is in its convergent range (the Kronrod rule is exact to degree
3n + 1, the Gauss rule to 2n − 1); ``quadrature_error_mc_se`` is the Monte Carlo error of that difference,
√(Σ_j (ω_j − γ_j)² se(ê_j)²/σ_j⁴), so an estimate below it is noise. The quadrature error is a bias, not
a spread over draws: it adds to ``mc_se``, it does not combine with it in quadrature.

ê_j is a control-variate mean (Owen, "Monte Carlo theory, methods and examples", 2013, §8.9) with three
controls of known mean, functions of x and D*(x) alone (μ, tr Σ: the data's exact mean and total variance):

    c₁ = ‖x − μ‖²,            E c₁ = tr Σ + σ²d
    c₂ = ‖D* − μ‖²,           E c₂ = tr Σ − MMSE(σ)
    c₃ = (x − μ)·(D* − μ),    E c₃ = tr Σ

(E c₂ by the law of total variance, E‖x₀ − μ‖² = E‖D* − μ‖² + MMSE; E c₃ as E[x·D*] = E[x·x₀] = E‖x₀‖²);
‖x − D*‖² = c₁ + c₂ − 2c₃, the error of the identity denoiser, is among their combinations. ê_j =
mean(e − β_jᵀ(c − E c)) with β_j the least-squares coefficients of e on (c, 1). A denoiser far from D* errs
much as the identity does (D_θ ≈ x at small σ early in training) and near the data mean at large σ, so e
moves with the controls: on a committed ground-truth run (cauchy, seed 0) the standard error of B̂ at equal
draws is 0.15 of the plain mean's at 0.4 kimg, 0.47 at 4 kimg and 0.32 at 32 kimg. MMSE(σ) = E tr Cov(x₀ |
x) is averaged over ``control_samples`` draws per node of its own (seeded apart from the draws of e): a
smooth, nearly constant integrand (exact for Gaussian data), whose error se(MMSE) enters the recorded error
as β_{j,2}² se(MMSE)².

``samples`` is the average number of draws per node; they are spent in two stages (Neyman allocation, as in
stratified sampling: n_j ∝ ω_j s_j/σ_j² minimises the variance of B̂ for a fixed total, Cochran, "Sampling
Techniques", §5.5): a pilot of ``samples``/8 draws per node estimates β_j and the residual's spread s_j, and
the remaining 7/8 of the total are shared in proportion to ω_j s_j/σ_j² (at least one chunk of 1024 per
node). ê_j and its error are taken from the second stage alone, so, given the pilot, they are unbiased.
Draws come in chunks of 1024 from a generator seeded by (``seed``, node, chunk): the same draws at every
evaluation and for every run (common random numbers), so D* is computed once per process and kept with x₀ +
σε (x rounded to float32, what the network sees, and D* evaluated at that rounded point in float64). The
per-σ curve (σ_j, E‖D_θ − D*‖², its standard error, n_j, β_j) is recorded in the row's ``curve``.

``fd-exact``: the Fréchet distance between the Gaussian fitted to the generated points and the exact mean
and covariance of the data (``distributions.moments``): ‖μ_g − μ‖² + tr Σ_g + tr Σ − 2 tr((Σ_gΣ)^½),
through the core's ``suite.metrics.frechet.trace_sqrt_product`` with Σ^½ as the second factor. No
reference sample enters, so the value has only the generated sample's noise; but that noise biases it
upwards: n exact draws score E FD > 0, about tr Σ/n + Σ_ij Var(Σ_g,ij)/(4λ) for Σ = λI (the mean's
term plus, to second order in Σ_g − Σ, the squared error of the fitted covariance; d(d + 5)λ/(4n) for
Gaussian data). ``floor`` is that bias at the row's n, measured: the mean FD of ``floor_draws`` sets of n
exact draws (from ``seed``, cached per distribution and n), with its standard error ``floor_se``. The
headline ``value`` stays the raw distance (as the docs and tables have it, and as ``sliced-w2`` reports its
own floor beside its raw value); ``above_floor`` = value − floor is the bias-corrected distance, an
estimate of the distance of the sampler's law itself (with the floor's error), not a distance of the samples.

``sliced-w2``: the sliced Wasserstein-2 distance (Rabin, Peyré, Delon & Bernot 2011; Bonneel et al. 2015)
between the n generated points and n fresh exact draws (from ``seed``): SW₂ = (mean over ``projections``
uniform directions θ of W₂²(θᵀX, θᵀY))^½, each 1-D W₂² the mean squared difference of the sorted
projections. ``floor`` is the same distance between two independent sets of n exact draws: what an
exact sampler scores at this n.

``pi-tv``: the total-variation distance ½∫|π(u) − π*(u)| du (trapezoid rule on ``grid`` points of
u = ln σ) between the run's training-noise density π at this evaluation and one exact target π* for every
sampler: the InfoNoise allocation on the exact statistics, built by an InfoNoise estimator (default estimator
settings, the task's ``gate_c``, the run's loss weight) fed the analytic MMSE at its bin centres. Every
sampler, adaptive or fixed, KG and KG-uncorrected included, is scored against that π*, so the rows of a
table compare like with like (``target`` names it). An adaptive sampler's distance to what its *own*
estimator builds from exact statistics (a copy of it fed the analytic MMSE: InfoNoise, the same π* with
its run's settings; KG, its weighted statistic of the MMSE) is another quantity, recorded beside the value
as ``own_target_tv`` (with ``own_target`` naming it), never as ``value``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from infonoise_modalities.points.distributions import IsotropicMixture, exact_mmse, moments
from suite.cache import cached_tensor
from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.metrics.frechet import trace_sqrt_product
from suite.noise.analytic import AnalyticData, GaussianMixtureData
from suite.noise.sampler import NoiseSampler, build_sampler
from suite.stream import seeded_generator
from suite.task import content_fingerprint


class ExactMetric(Metric):
    """A metric that needs the data's distribution and the task's σ range (``bind``)."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.data: AnalyticData | None = None
        self.sigma_min = self.sigma_max = math.nan
        self._cache: dict[Path, Tensor] = {}

    def bind(self, data: AnalyticData, sigma_min: float, sigma_max: float) -> ExactMetric:
        """Score against ``data`` on [σ_min, σ_max]."""
        self.data, self.sigma_min, self.sigma_max = data, float(sigma_min), float(sigma_max)
        return self

    def for_task(self, task: object) -> None:
        """Score against the task's distribution on its σ range (its config's sigma_min, sigma_max)."""
        data = getattr(task, "distribution", None)
        if not isinstance(data, AnalyticData):
            raise TypeError(
                f"metric {self.spec.name!r} scores against a distribution with a closed-form denoiser; task "
                f"{getattr(task, 'name', task)!r} has none (a ground-truth point task has one)"
            )
        self.bind(data, float(task.cfg["sigma_min"]), float(task.cfg["sigma_max"]))  # type: ignore[attr-defined]

    def cached(self, name: str, key: tuple[Tensor | str, ...], compute: Callable[[], Tensor]) -> Tensor:
        """``compute()``, kept in the suite's cache folder under ``name`` and the content fingerprint of the
        tensors and texts of ``key`` (every run of a study asks for the same tensor), and in this process; a
        kept file that does not prove to be that value is recomputed (``suite.cache.cached_tensor``)."""
        fingerprint = content_fingerprint(*key)
        path = self.cache_dir / name / f"{fingerprint}.pt"
        if path not in self._cache:
            self._cache[path] = cached_tensor(path, f"{name}/{fingerprint}", compute)
        return self._cache[path]

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
    """x = x₀ + σ_j ε (float32), D*(x) and the controls c (float64, [n, 3]) for chunk c of node j, drawn once
    from a generator seeded by (seed, j, c) and kept: the common random numbers of every evaluation of a
    process."""

    def __init__(self, data: AnalyticData, sigmas: Sequence[float], seed: int) -> None:
        self.data, self.sigmas, self.seed = data, list(sigmas), int(seed)
        self.mean = moments(data)[0]
        self._chunks: dict[tuple[int, int], tuple[Tensor, Tensor, Tensor]] = {}

    def chunk(self, node: int, index: int) -> tuple[Tensor, Tensor, Tensor]:
        key = (node, index)
        if key not in self._chunks:
            gen = seeded_generator(self.seed, node, index)
            sigma = self.sigmas[node]
            x0 = self.data.sample(CHUNK, gen)
            x = (x0 + sigma * torch.randn(x0.shape, generator=gen, dtype=torch.float64)).float()
            best = self.data.posterior_mean(x.double(), torch.full((CHUNK,), sigma, dtype=torch.float64))
            noisy, denoised = x.double() - self.mean, best - self.mean
            controls = torch.stack(
                [noisy.square().sum(1), denoised.square().sum(1), (noisy * denoised).sum(1)], dim=1
            )
            self._chunks[key] = (x, best, controls)
        return self._chunks[key]

    def errors(
        self, model: Any, node: int, first: int, count: int, device: torch.device | str
    ) -> tuple[Tensor, Tensor]:
        """e = ‖D_θ − D*‖² [n] and the controls c [n, 3] of chunks [first, first + count) of ``node``, in
        float64."""
        chunks = [self.chunk(node, c) for c in range(first, first + count)]
        x, best, controls = (torch.cat(part) for part in zip(*chunks, strict=True))
        level = torch.full((len(x),), self.sigmas[node], dtype=torch.float32, device=device)
        got = model(x.to(device), level)
        return (got.to("cpu", torch.float64).reshape(len(x), -1) - best).square().sum(1), controls


CONTROLS = (
    "|x - mu|^2, |D* - mu|^2, (x - mu).(D* - mu)"  # the controls, in their order (part of the cache key)
)


def control_means(data: AnalyticData, sigmas: Sequence[float], seed: int, samples: int) -> Tensor:
    """E c at each σ and its standard error, as a [2, nodes, 3] tensor (module docstring): exact but for
    MMSE(σ) = E tr Cov(x₀ | x), the posterior variance averaged over ``samples`` draws per node from
    generators seeded by (seed, node, chunk, 1), apart from the draws of :class:`NodeDraws`."""
    posterior_variance = getattr(data, "posterior_variance", None)
    if posterior_variance is None:
        raise ValueError(f"kl-bound needs the data's posterior variance; {type(data).__name__} has none")
    total = float(torch.trace(moments(data)[1]))
    out = torch.zeros(2, len(sigmas), 3, dtype=torch.float64)
    for node, sigma in enumerate(sigmas):
        values = []
        for index in range(max(1, samples // CHUNK)):
            gen = seeded_generator(seed, node, index, 1)
            x0 = data.sample(CHUNK, gen)
            x = x0 + sigma * torch.randn(x0.shape, generator=gen, dtype=torch.float64)
            values.append(posterior_variance(x, torch.full((CHUNK,), sigma, dtype=torch.float64)))
        trace = torch.cat(values)
        out[0, node] = torch.tensor([total + sigma**2 * data.dim, total - trace.mean().item(), total])
        out[1, node, 1] = trace.std() / math.sqrt(len(trace))
    return out


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
        sigmas, weights, gauss = quadrature(nodes, self.sigma_min, self.sigma_max)
        if samples < 8 * CHUNK:
            raise ValueError(f"kl-bound needs samples >= {8 * CHUNK} draws per node; got samples={samples}")
        seed = int(self.options.get("seed", 0))
        if self._draws is None:
            self._draws = NodeDraws(self.distribution(), sigmas.tolist(), seed)
        return kl_bound(
            inputs.model, self._draws, weights, samples, self.controls(sigmas), self.device, gauss
        )

    def controls(self, sigmas: np.ndarray) -> Tensor:
        """E c at each σ with its error (:func:`control_means`), once per distribution, σ grid, seed and
        ``control_samples``."""
        data, seed = self.distribution(), int(self.options.get("seed", 0))
        control_samples = int(self.options.get("control_samples", 65536))
        described = tuple(v if isinstance(v, Tensor) else str(v) for v in vars(data).values())
        return self.cached(
            "kl-bound-controls",
            (
                CONTROLS,
                type(data).__name__,
                *described,
                torch.from_numpy(sigmas),
                str(seed),
                str(control_samples),
            ),
            lambda: control_means(data, sigmas.tolist(), seed, control_samples),
        )


def quadrature(nodes: int, sigma_min: float, sigma_max: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """σ_j, Kronrod weights ω_j and embedded Gauss weights γ_j (zero at the Kronrod-only nodes) of the
    (2·``nodes`` + 1)-point Gauss–Kronrod rule in ln σ on [σ_min, σ_max], σ increasing."""
    if nodes < 1 or not 0 < sigma_min < sigma_max:
        raise ValueError(
            f"kl-bound needs nodes >= 1 and 0 < sigma_min < sigma_max; got nodes={nodes}, "
            f"sigma range [{sigma_min}, {sigma_max}]"
        )
    t, w, g = gauss_kronrod(nodes)
    u_lo, u_hi = math.log(sigma_min), math.log(sigma_max)
    half = 0.5 * (u_hi - u_lo)
    return np.exp(half * t + 0.5 * (u_hi + u_lo)), half * w, half * g


def gauss_kronrod(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes t [2n + 1] (increasing) on [−1, 1], Kronrod weights and the weights of the n-point Gauss–Legendre
    rule on the nodes t[1::2] (zero elsewhere), for the Legendre weight.

    Laurie's (1997) algorithm: the Jacobi–Kronrod matrix's recurrence coefficients (α, β) follow from the
    Legendre ones (α_k = 0, β_0 = 2, β_k = k²/(4k² − 1)) by his mixed recurrence (Gautschi's ``r_kronrod``),
    and the rule is that matrix's Gauss rule (Golub & Welsch 1969: the eigenvalues, and β_0 times the squared
    first components of the eigenvectors)."""
    size = math.ceil(3 * n / 2) + 1
    k = np.arange(size, dtype=np.float64)
    beta0 = np.where(k == 0, 2.0, k * k / np.maximum(4 * k * k - 1, 1))
    a, b = np.zeros(2 * n + 1), np.zeros(2 * n + 1)
    b[:size] = beta0
    s, t = np.zeros(n // 2 + 2), np.zeros(n // 2 + 2)
    t[1] = b[n + 1]
    for m in range(n - 1):
        k_ = np.arange((m + 1) // 2, -1, -1)
        low = m - k_
        s[k_ + 1] = np.cumsum(
            (a[k_ + n + 1] - a[low]) * t[k_ + 1] + b[k_ + n + 1] * s[k_] - b[low] * s[k_ + 1]
        )
        s, t = t, s
    s[1 : n // 2 + 2] = s[: n // 2 + 1].copy()
    for m in range(n - 1, 2 * n - 2):
        k_ = np.arange(m + 1 - n, (m - 1) // 2 + 1)
        low = m - k_
        j = n - 1 - low
        s[j + 1] = np.cumsum(
            -(a[k_ + n + 1] - a[low]) * t[j + 1] - b[k_ + n + 1] * s[j + 1] + b[low] * s[j + 2]
        )
        last, top = j[-1], (m + 1) // 2
        if m % 2 == 0:
            a[top + n + 1] = a[top] + (s[last + 1] - b[top + n + 1] * s[last + 2]) / t[last + 2]
        else:
            b[top + n + 1] = s[last + 1] / s[last + 2]
        s, t = t, s
    a[2 * n] = a[n - 1] - b[2 * n] * s[1] / t[1]
    off = np.sqrt(b[1:])
    nodes, vectors = np.linalg.eigh(np.diag(a) + np.diag(off, 1) + np.diag(off, -1))
    nodes = 0.5 * (nodes - nodes[::-1])  # symmetric about 0, as the Legendre weight is
    kronrod = b[0] * vectors[0] ** 2
    kronrod = 0.5 * (kronrod + kronrod[::-1])
    gauss = np.zeros(2 * n + 1)
    gauss[1::2] = np.polynomial.legendre.leggauss(n)[1]
    return nodes, kronrod, gauss


def kl_bound(
    model: Any,
    draws: NodeDraws,
    weights: np.ndarray,
    samples: int,
    controls: Tensor,
    device: torch.device | str = "cpu",
    gauss: np.ndarray | None = None,
) -> dict[str, Any]:
    """B̂ of ``model`` (a denoiser ``model(x, σ)``) with its error and curve, from ``samples`` draws per
    node on average (a pilot, then the Neyman share of the rest) and the controls c of known mean
    ``controls[0]`` (standard error ``controls[1]``, :func:`control_means`; module docstring); with the
    embedded rule's weights ``gauss``, the quadrature error estimate |B̂ − B̂_Gauss| and its Monte Carlo
    error too."""
    nodes = len(weights)
    sig = np.asarray(draws.sigmas)
    pilot = max(1, samples // 8 // CHUNK)
    with torch.no_grad():
        pilots = [draws.errors(model, j, 0, pilot, device) for j in range(nodes)]
        beta = [coefficients(e, c) for e, c in pilots]
        spread = np.array([(e - c @ b).std().item() for (e, c), b in zip(pilots, beta, strict=True)])
        share = weights * spread / sig**2
        rest = nodes * samples // CHUNK - nodes * pilot
        total = share.sum()
        counts = [max(1, round(rest * a / total)) if total > 0 else rest // nodes for a in share]
        second = [draws.errors(model, j, pilot, counts[j], device) for j in range(nodes)]
    known, known_se = controls
    residuals = [e - (c - m) @ b for (e, c), b, m in zip(second, beta, known, strict=True)]
    excess = np.array([r.mean().item() for r in residuals])
    excess_se = np.array(
        [
            math.sqrt(r.var().item() / len(r) + float((b * m_se).square().sum()))
            for r, b, m_se in zip(residuals, beta, known_se, strict=True)
        ]
    )
    rule = (
        "Gauss-Legendre"
        if gauss is None
        else f"Gauss-Kronrod ({len(weights)} nodes, Gauss {(nodes - 1) // 2} embedded)"
    )
    out = {
        "value": float((weights * excess / sig**2).sum()),
        "mc_se": float(math.sqrt(((weights * excess_se / sig**2) ** 2).sum())),
        "quadrature": (
            f"{rule} in ln sigma, {nodes} nodes, {samples} draws per node on average "
            f"(pilot {pilot * CHUNK}, then Neyman allocation), three control variates of known mean, "
            f"seed {draws.seed}"
        ),
        "curve": {
            "sigma": sig.tolist(),
            "excess": excess.tolist(),
            "excess_se": excess_se.tolist(),
            "draws": [len(r) for r in residuals],
            "beta": [b.tolist() for b in beta],
        },
    }
    if gauss is not None:
        spare = weights - gauss
        out["gauss_value"] = float((gauss * excess / sig**2).sum())
        out["quadrature_error"] = abs(out["value"] - out["gauss_value"])
        out["quadrature_error_mc_se"] = float(math.sqrt(((spare * excess_se / sig**2) ** 2).sum()))
    return out


def coefficients(e: Tensor, controls: Tensor) -> Tensor:
    """β of the least-squares fit of e on (controls, 1), controls [n, k] (rank-revealing: collinear controls,
    as for Gaussian data, get a minimum-norm β)."""
    design = torch.cat([controls - controls.mean(0), torch.ones(len(e), 1, dtype=controls.dtype)], dim=1)
    fit = torch.linalg.lstsq(design, e[:, None], driver="gelsd").solution
    return fit[:-1, 0]


@METRICS.register("fd-exact")
class ExactFrechet(ExactMetric):
    """Fréchet distance of the generated points to the data's exact mean and covariance."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec(
            "fd-exact", higher_is_better=False, label="Fréchet distance to the exact moments (raw points)"
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        x = _points(inputs.generated)
        value = frechet_to_moments(x, *self.moments())
        floor, floor_se = self.floor(len(x)).tolist()
        return {
            "value": value,
            "n": len(x),
            "floor": floor,
            "floor_se": floor_se,
            "floor_draws": int(self.options.get("floor_draws", 16)),
            "above_floor": value - floor,
        }

    def moments(self) -> tuple[Tensor, Tensor, Tensor]:
        """The data's exact mean, covariance and Σ^½ (float64)."""
        data = self.distribution()
        if not isinstance(data, GaussianMixtureData):
            raise ValueError(f"fd-exact needs a Gaussian mixture's exact moments; got {type(data).__name__}")
        mean, cov = moments(data)
        w, v = torch.linalg.eigh(cov)
        return mean, cov, (v * w.clamp(min=0).sqrt()) @ v.T  # Σ^½: rootᵀroot = Σ

    def floor(self, n: int) -> Tensor:
        """[mean, standard error] of the FD of ``floor_draws`` sets of n exact draws (module docstring), once
        per distribution, n, count and seed."""
        data, draws, seed = (
            self.distribution(),
            int(self.options.get("floor_draws", 16)),
            int(self.options.get("seed", 0)),
        )
        if draws < 2 or n < 2:
            raise ValueError(f"fd-exact's floor needs floor_draws >= 2 and n >= 2 points; got {draws}, n={n}")

        def compute() -> Tensor:
            exact = self.moments()
            values = torch.tensor(
                [
                    frechet_to_moments(data.sample(n, seeded_generator(seed, n, k)), *exact)
                    for k in range(draws)
                ],
                dtype=torch.float64,
            )
            return torch.stack([values.mean(), values.std() / math.sqrt(draws)])

        described = tuple(v if isinstance(v, Tensor) else str(v) for v in vars(data).values())
        key = ("fd-exact floor", type(data).__name__, *described, str(n), str(draws), str(seed))
        return self.cached("fd-exact-floor", key, compute)


def frechet_to_moments(x: Tensor, mean: Tensor, cov: Tensor, root: Tensor) -> float:
    """‖μ_g − μ‖² + tr Σ_g + tr Σ − 2 tr((Σ_gΣ)^½) of the points x [n, d] (float64) to the exact mean,
    covariance and Σ^½ (module docstring)."""
    mean_g = x.mean(0)
    a = (x - mean_g) / math.sqrt(len(x) - 1)
    value = (mean_g - mean).square().sum() + a.square().sum() + cov.trace() - 2 * trace_sqrt_product(a, root)
    return float(value)


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

    scores_sampler = True

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
        key = (data.means, data.stds, data.weights, sigma.cpu(), str(n_mc))
        return self.cached("exact-mmse", key, lambda: exact_mmse(data, sigma, n_mc))

    def target(self, sampler: NoiseSampler) -> tuple[Any, str]:
        """The one exact target π* (module docstring) on ``sampler``'s σ range and loss weight, whatever the
        sampler, and its label."""
        gate_c = self.options.get("gate_c")
        estimator = build_sampler(
            "infonoise", sampler.sigma_min, sampler.sigma_max, sampler.weight, gate_c=gate_c
        )
        return self.built(estimator), f"infonoise estimator (gate_c {gate_c}) on the exact MMSE"

    def built(self, estimator: NoiseSampler) -> Any:
        """The density ``estimator`` (an adaptive sampler) builds from the exact MMSE at its bin centres."""
        sigma = estimator.centers.exp()
        statistic = estimator.statistic(estimator.draws(sigma), self.mmse(sigma))
        return estimator.build_density(statistic)

    def __call__(self, inputs: EvalInputs) -> dict[str, Any]:
        sampler = inputs.sampler
        if sampler is None:
            raise ValueError("pi-tv scores the run's noise sampler; the evaluation handed none")
        density, label = self.target(sampler)
        u = torch.linspace(
            sampler.u_min, sampler.u_max, int(self.options.get("grid", 2001)), dtype=torch.float64
        )
        pi = sampler.density_on(u).cpu()

        def tv(target: Any) -> float:
            return float(0.5 * torch.trapezoid((pi - target.prob(u.to(target.nodes.device)).cpu()).abs(), u))

        learned = bool(sampler.adaptive and getattr(sampler, "density", None) is not None)
        out: dict[str, Any] = {"value": tv(density), "target": label, "learned": learned}
        if sampler.adaptive:
            out["own_target_tv"] = tv(self.built(copy.deepcopy(sampler).to("cpu")))
            out["own_target"] = f"{sampler.name} estimator on the exact MMSE"
        return out
