"""Tests of suite.noise.information: MMSE curves and the I–MMSE entropy identity (Guo, Shamai & Verdú 2005).

Identity used throughout: ∫ MMSE(σ)/σ² d ln σ over the whole line = H(X₀) for a discrete X₀ (nats).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate

from suite.noise.information import (
    empirical_prior_mmse,
    entropy_rate,
    gaussian_mixture_mmse,
    gaussian_mmse,
    normalized_profile,
    point_set_mmse,
)

F64 = torch.float64
SIGMA_LO, SIGMA_HI = 1e-3, 1e4
U_STEP = 0.02  # spacing in ln σ; the integrand is a smooth bump in ln σ, so the trapezoid rule converges fast


def _log_sigma_grid(step: float = U_STEP) -> torch.Tensor:
    n = int(round((math.log(SIGMA_HI) - math.log(SIGMA_LO)) / step)) + 1
    return torch.linspace(math.log(SIGMA_LO), math.log(SIGMA_HI), n, dtype=F64)


def _tail_bounds(points: torch.Tensor, weights: torch.Tensor) -> tuple[float, float]:
    """Rigorous bounds on ∫ MMSE/σ² d ln σ outside [SIGMA_LO, SIGMA_HI] for a 1-D point set.

    Upper tail: MMSE(σ) ≤ Var(X₀) for every σ, so ∫_{σ_hi}^∞ Var/σ² d ln σ = Var/(2σ_hi²).
    Lower tail: tr Cov(x₀|x) ≤ Σ_j r_j(x)(x_j − x_k)² for any k, and E_{x|k}[r_j] ≤ √(w_j/w_k)·BC_jk with the
    Bhattacharyya coefficient BC_jk = exp(−Δ_jk²/(8σ²)) of N(x_j, σ²), N(x_k, σ²). Hence
    MMSE(σ) ≤ Σ_{j≠k} √(w_j w_k) Δ_jk² exp(−Δ_jk²/(8σ²)), and ∫_0^{σ_lo} exp(−a/σ²) σ⁻³ dσ =
    exp(−a/σ_lo²)/(2a) gives the bound Σ_{j≠k} 4√(w_j w_k) exp(−Δ_jk²/(8σ_lo²)).
    """
    w = weights / weights.sum()
    mean = float((w * points).sum())
    var = float((w * (points - mean) ** 2).sum())
    upper = var / (2 * SIGMA_HI**2)
    lower = 0.0
    for j, k in itertools.permutations(range(len(points)), 2):
        delta2 = float(points[j] - points[k]) ** 2
        lower += 4 * math.sqrt(float(w[j] * w[k])) * math.exp(-delta2 / (8 * SIGMA_LO**2))
    return lower, upper


def _entropy_integral(points: torch.Tensor, weights: torch.Tensor, step: float = U_STEP) -> float:
    u = _log_sigma_grid(step)
    sigma = u.exp()
    rate = entropy_rate(sigma, point_set_mmse(sigma, points, weights), "log_sigma")
    return float(torch.trapezoid(rate, u))


@pytest.mark.parametrize(
    ("points", "weights"),
    [
        ([-1.0, 1.0], [0.5, 0.5]),
        ([-2.0, 0.0, 0.5, 3.0], [0.1, 0.4, 0.2, 0.3]),
    ],
    ids=["two-point", "four-point-unequal"],
)
def test_entropy_identity_point_sets(points, weights):
    pts = torch.tensor(points, dtype=F64)
    w = torch.tensor(weights, dtype=F64)
    entropy = float(-(w * w.log()).sum())
    lower_tail, upper_tail = _tail_bounds(pts, w)
    assert lower_tail < 1e-100 and upper_tail < 1e-7  # [1e-3, 1e4] holds the whole profile
    integral = _entropy_integral(pts, w)
    assert abs(integral - entropy) < 1e-3
    # The only visible error is the omitted upper tail (≈ Var/(2σ_hi²) ~ 1e-8, as MMSE ≈ Var up there);
    # adding it back leaves rounding-level agreement, and the ln σ grid has converged.
    assert abs(integral + upper_tail - entropy) < 1e-10
    assert abs(_entropy_integral(pts, w, 2 * U_STEP) - integral) < 1e-9


def test_entropy_rate_coordinates_agree():
    pts = torch.tensor([-2.0, 0.0, 0.5, 3.0], dtype=F64)
    w = torch.tensor([0.1, 0.4, 0.2, 0.3], dtype=F64)
    u = _log_sigma_grid(0.01)
    sigma = u.exp()
    mmse = point_set_mmse(sigma, pts, w)
    per_log_sigma = torch.trapezoid(entropy_rate(sigma, mmse, "log_sigma"), u)
    per_sigma = torch.trapezoid(entropy_rate(sigma, mmse, "sigma"), sigma)
    per_log_snr = torch.trapezoid(entropy_rate(sigma, mmse, "log_snr"), -2 * u).abs()
    assert torch.allclose(per_sigma, per_log_sigma, rtol=1e-4)
    assert torch.allclose(per_log_snr, per_log_sigma, rtol=1e-12)
    density = normalized_profile(u, entropy_rate(sigma, mmse))
    assert abs(float(torch.trapezoid(density, u)) - 1.0) < 1e-12
    with pytest.raises(ValueError):
        entropy_rate(sigma, mmse, "t")


def _bpsk_mmse(sigma: float) -> float:
    """MMSE of x₀ = ±1 (equal weights): 1 − E tanh(snr + √snr·z), snr = 1/σ².

    Guo, Shamai & Verdú 2005, Eq. (17) (binary input).
    """
    snr = 1.0 / sigma**2

    # 1 − tanh(t) = 2/(1 + e^{2t}) keeps full relative accuracy where the MMSE is tiny.
    def integrand(z: float) -> float:
        t = snr + math.sqrt(snr) * z
        return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * 2.0 / (1.0 + math.exp(min(2 * t, 700.0)))

    centre = -math.sqrt(snr)  # where the tanh argument changes sign
    val, _ = integrate.quad(
        integrand,
        -40,
        40,
        points=[centre] if abs(centre) < 40 else None,
        epsabs=1e-15,
        epsrel=1e-13,
        limit=400,
    )
    return val


def _point_set_reference(sigma: float, points: np.ndarray, weights: np.ndarray) -> float:
    """Σ_k w_k ∫ φ(e) tr Cov(x₀ | x_k + σe) de by adaptive scipy quadrature, split at the mode boundaries."""
    log_w = np.log(weights / weights.sum())

    def post_var(x: float) -> float:
        logits = log_w - (x - points) ** 2 / (2 * sigma**2)
        r = np.exp(logits - logits.max())
        r /= r.sum()
        return float((r * (points - (r * points).sum()) ** 2).sum())

    total = 0.0
    for k, xk in enumerate(points):
        breaks = sorted({((a + b) / 2 - xk) / sigma for a, b in itertools.combinations(points, 2)})
        breaks = [b for b in breaks if abs(b) < 40] or None

        def integrand(e: float, xk: float = xk) -> float:
            return math.exp(-0.5 * e * e) / math.sqrt(2 * math.pi) * post_var(xk + sigma * e)

        val, _ = integrate.quad(integrand, -40, 40, points=breaks, epsabs=1e-15, epsrel=1e-13, limit=500)
        total += math.exp(log_w[k]) * val
    return total


def test_quadrature_accuracy_against_scipy():
    sigma = np.logspace(-2, 3, 16)
    bpsk = point_set_mmse(torch.tensor(sigma), torch.tensor([-1.0, 1.0], dtype=F64))
    ref = torch.tensor([_bpsk_mmse(s) for s in sigma], dtype=F64)
    assert float((bpsk - ref).abs().max()) < 1e-10  # target was 1e-6

    pts = np.array([-2.0, 0.0, 0.5, 3.0])
    w = np.array([0.1, 0.4, 0.2, 0.3])
    got = point_set_mmse(torch.tensor(sigma), torch.tensor(pts), torch.tensor(w))
    ref = torch.tensor([_point_set_reference(s, pts, w) for s in sigma], dtype=F64)
    assert float((got - ref).abs().max()) < 1e-10


def test_point_set_mc_matches_quadrature_and_embeds():
    sigma = torch.tensor([0.3, 1.0, 3.0], dtype=F64)
    pts = torch.tensor([-2.0, 0.0, 0.5, 3.0], dtype=F64)
    w = torch.tensor([0.1, 0.4, 0.2, 0.3], dtype=F64)
    exact = point_set_mmse(sigma, pts, w)
    g = torch.Generator().manual_seed(0)
    # A 1-D set embedded in 2-D: the orthogonal noise carries no information, so the MMSE is unchanged.
    pts2 = torch.stack([pts, torch.zeros_like(pts)], dim=-1)
    mc2 = point_set_mmse(sigma, pts2, w, n_mc=20000, generator=g)
    assert torch.allclose(mc2, exact, rtol=0.02, atol=1e-3)
    with pytest.raises(ValueError):
        point_set_mmse(sigma, pts2, w, method="quadrature")


def test_gaussian_mmse_limits_and_mc():
    v, dim = 2.0, 3
    assert math.isclose(float(gaussian_mmse(1e-4, v, dim)), dim * 1e-8, rel_tol=1e-7)
    assert math.isclose(float(gaussian_mmse(1e4, v, dim)), dim * v, rel_tol=1e-7)
    # Direct MC of E‖x₀ − x̂(x)‖² with the posterior mean x̂ = v/(v+σ²)·x.
    g = torch.Generator().manual_seed(1)
    sigma = torch.tensor([0.1, 1.0, 10.0], dtype=F64)
    x0 = math.sqrt(v) * torch.randn(200000, dim, generator=g, dtype=F64)
    eps = torch.randn(200000, dim, generator=g, dtype=F64)
    for s, closed in zip(sigma, gaussian_mmse(sigma, v, dim), strict=True):
        err = (x0 - v / (v + s**2) * (x0 + s * eps)).square().sum(-1)
        assert abs(float(err.mean() - closed)) < 4 * float(err.std()) / math.sqrt(err.numel())


def test_quantised_gaussian_point_set_matches_closed_form():
    # A fine lattice with Gaussian weights: for σ ≫ spacing h the lattice is invisible (Poisson summation,
    # corrections ~exp(−2π²σ²/h²)) and the truncation at ±7 is negligible.
    h = 0.05
    pts = torch.arange(-7.0, 7.0 + h / 2, h, dtype=F64)
    w = torch.exp(-0.5 * pts**2)
    sigma = torch.tensor([0.3, 1.0, 3.0], dtype=F64)
    assert torch.allclose(point_set_mmse(sigma, pts, w), gaussian_mmse(sigma, 1.0), rtol=1e-8)


def test_gaussian_mixture_single_component_is_exact():
    sigma = torch.logspace(-2, 2, 9, dtype=F64)
    g = torch.Generator().manual_seed(2)
    iso = gaussian_mixture_mmse(sigma, torch.zeros(1, 3), torch.tensor([2.0]), n_mc=64, generator=g)
    assert torch.allclose(iso, gaussian_mmse(sigma, 2.0, 3), rtol=1e-12, atol=1e-15)
    a = torch.randn(3, 3, generator=g, dtype=F64)
    cov = a @ a.T + 0.1 * torch.eye(3, dtype=F64)
    lam = torch.linalg.eigvalsh(cov)
    full = gaussian_mixture_mmse(sigma, torch.ones(1, 3), cov[None], n_mc=64, generator=g)
    # Closed form tr(Σ − Σ(Σ+σ²I)⁻¹Σ) = Σ_i λ_i σ²/(λ_i + σ²).
    assert torch.allclose(full, gaussian_mmse(sigma[:, None], lam).sum(-1), rtol=1e-10)


def test_gaussian_mixture_three_components():
    means = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]], dtype=F64)
    covs = torch.stack(
        [
            0.1 * torch.eye(2, dtype=F64),
            torch.tensor([[1.0, 0.5], [0.5, 1.0]], dtype=F64),
            0.01 * torch.eye(2, dtype=F64),
        ]
    )
    w = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    mean = (w[:, None] * means).sum(0)
    total_var = float(
        (w * (covs.diagonal(dim1=-2, dim2=-1).sum(-1) + means.square().sum(-1))).sum() - mean.square().sum()
    )
    sigma = torch.logspace(-3, 3, 25, dtype=F64)
    m = gaussian_mixture_mmse(sigma, means, covs, w, n_mc=2048, generator=torch.Generator().manual_seed(3))
    assert bool(torch.all(m > 0)) and bool(torch.all(m < total_var))
    assert bool(torch.all(m.diff() > 0))
    assert math.isclose(float(m[0]), 2 * 1e-6, rel_tol=1e-2)  # σ → 0: ≈ d·σ² (every Σ_k is non-singular)
    assert math.isclose(float(m[-1]), total_var, rel_tol=1e-4)  # σ → ∞: → total variance


def test_empirical_prior_limits_and_diagnostics():
    # 16 corners of a 4-D hypercube with side 10: nearest-neighbour distance 10, total variance 4·5² = 100.
    data = 10.0 * torch.tensor(list(itertools.product([0.0, 1.0], repeat=4)), dtype=F64)
    sigma = torch.tensor([0.05, 0.5, 1e4, 1e6], dtype=F64)
    mmse, diag = empirical_prior_mmse(
        sigma, data, n_queries=64, generator=torch.Generator().manual_seed(4), return_diagnostics=True
    )
    assert float(mmse[:2].max()) < 1e-12  # error probability ~exp(−10²/(8σ²)) at σ = 0.5
    assert math.isclose(float(mmse[2]), 100.0, rel_tol=1e-2)
    assert math.isclose(float(mmse[3]), 100.0, rel_tol=1e-5)
    assert torch.allclose(diag.max_weight[:2], torch.ones(2, dtype=F64))
    assert torch.allclose(diag.effective_count[:2], torch.ones(2, dtype=F64))
    assert math.isclose(float(diag.effective_count[3]), 16.0, rel_tol=1e-5)
    assert math.isclose(float(diag.entropy[3]), math.log(16), rel_tol=1e-6)
    assert math.isclose(float(diag.max_weight[3]), 1 / 16, rel_tol=1e-4)


def test_empirical_prior_chunking_is_exact():
    g = torch.Generator().manual_seed(5)
    data = torch.randn(37, 6, generator=g, dtype=F64)
    sigma = torch.logspace(-2, 2, 7, dtype=F64)
    kwargs = {"n_queries": 50, "return_diagnostics": True}
    whole, d_whole = empirical_prior_mmse(
        sigma, data, generator=torch.Generator().manual_seed(6), chunk_size=37, query_batch=50, **kwargs
    )
    parts, d_parts = empirical_prior_mmse(
        sigma, data, generator=torch.Generator().manual_seed(6), chunk_size=5, query_batch=7, **kwargs
    )
    assert torch.allclose(whole, parts, rtol=1e-12, atol=1e-14)
    for field in ("max_weight", "effective_count", "entropy", "mmse_stderr"):
        assert torch.allclose(getattr(d_whole, field), getattr(d_parts, field), rtol=1e-10, atol=1e-14)


def test_empirical_prior_two_points_matches_point_set():
    data = torch.tensor([[-1.0], [1.0]], dtype=F64)
    sigma = torch.tensor([0.3, 0.6, 1.0, 2.0, 5.0], dtype=F64)
    g = torch.Generator().manual_seed(7)
    mmse, diag = empirical_prior_mmse(sigma, data, n_queries=20000, generator=g, return_diagnostics=True)
    exact = point_set_mmse(sigma, data)
    assert bool(torch.all((mmse - exact).abs() < 4 * diag.mmse_stderr + 1e-6))


def test_mixture_quadrature_agrees_with_monte_carlo():
    """The deterministic 2-D quadrature and the Rao–Blackwellised Monte Carlo estimate of one mixture."""
    from suite.noise.information import isotropic_mixture_mmse_2d

    means = torch.tensor([[-1.0, -0.5], [1.0, -0.5], [0.0, 1.0]], dtype=F64)
    stds = torch.tensor([0.1, 0.2, 0.05], dtype=F64)
    weights = torch.tensor([0.3, 0.3, 0.4], dtype=F64)
    sigma = torch.logspace(-2.5, 1.5, 9, dtype=F64)
    quad = isotropic_mixture_mmse_2d(sigma, means, stds, weights)
    finer = isotropic_mixture_mmse_2d(sigma, means, stds, weights, half_width=10.0, points=161)
    assert torch.allclose(quad, finer, rtol=1e-7)
    gen = torch.Generator().manual_seed(0)
    mc = gaussian_mixture_mmse(sigma, means, stds**2, weights, n_mc=20_000, generator=gen)
    assert torch.allclose(quad, mc, rtol=0.02)
    assert torch.all(quad[1:] > quad[:-1])  # MMSE increases with σ
