"""ODE solvers against the exact probability-flow trajectory of Gaussian data.

For data N(0, v·I) the ideal denoiser is D(x; σ) = v/(v + σ²)·x, the ODE dx/dσ = (x − D)/σ = σx/(v + σ²)
and its solution x(σ) = x(σ_max)·√((v + σ²)/(v + σ_max²)). With v = 0.25, σ ∈ [0.002, 80], ρ = 7 the
relative error of x(0) is (measured): Heun 5.5e-2 / 1.2e-2 / 2.9e-3 / 6.9e-4 at 18 / 36 / 72 / 144
steps, Euler 1.5e-1 / 7.8e-2 / 3.9e-2 / 2.0e-2. So Heun at 18 steps is *not* within 1e-3 of the
analytic x(0) on this problem (it reaches 1e-3 near 144 steps); the ρ = 7 grid takes steps of about
a factor 2 in σ near σ ≈ √v where the trajectory bends. The uncorrected last Euler step to σ = 0 is
not what limits the accuracy: its own relative error is about σ_min²/(2v) ≈ 8e-6, and the error at
the grid's last nonzero σ agrees with the error at σ = 0 to within 2%, so the tests measure at σ = 0.
"""

from __future__ import annotations

import math

import pytest
import torch

from suite.run.solvers import SOLVERS, euler_sample, guided, heun_sample, karras_sigmas, nfe

V, SIGMA_MIN, SIGMA_MAX = 0.25, 0.002, 80.0


def gaussian_denoiser(x, sigma):
    return V / (V + sigma.reshape(-1, *([1] * (x.ndim - 1))) ** 2) * x


def relative_error(solver, steps: int) -> float:
    latents = SIGMA_MAX * torch.randn(
        4, 1, 2, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    x0 = solver(gaussian_denoiser, latents, karras_sigmas(steps, SIGMA_MIN, SIGMA_MAX))
    exact = latents * math.sqrt(V / (V + SIGMA_MAX**2))
    return ((x0 - exact).norm() / exact.norm()).item()


def test_karras_sigmas():
    sigmas = karras_sigmas(18, SIGMA_MIN, SIGMA_MAX)
    assert sigmas.dtype == torch.float64 and sigmas.shape == (19,)
    assert sigmas[0].item() == pytest.approx(SIGMA_MAX, rel=1e-12)
    assert sigmas[17].item() == pytest.approx(SIGMA_MIN, rel=1e-12)
    assert sigmas[18].item() == 0
    assert (sigmas.diff() < 0).all()
    # σ^{1/ρ} is evenly spaced (Karras et al. 2022, Eq. 5).
    roots = sigmas[:-1] ** (1 / 7)
    torch.testing.assert_close(roots.diff(), roots.diff()[:1].expand(17))


def test_heun_converges_to_the_analytic_solution():
    assert relative_error(heun_sample, 18) < 0.06
    assert relative_error(heun_sample, 144) < 1e-3


def test_heun_is_second_order():
    errors = [relative_error(heun_sample, steps) for steps in (18, 36, 72, 144)]
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert 3 < coarse / fine < 5


def test_euler_is_first_order():
    errors = [relative_error(euler_sample, steps) for steps in (18, 36, 72, 144)]
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert 1.8 < coarse / fine < 2.2
    assert relative_error(heun_sample, 18) < errors[0] / 2


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("steps", [2, 18])
def test_nfe_counts_denoiser_calls(solver, steps):
    calls = []

    def counting(x, sigma):
        calls.append(sigma)
        assert x.dtype == torch.float32 and sigma.dtype == torch.float32 and sigma.shape == (3,)
        return gaussian_denoiser(x, sigma)

    out = SOLVERS[solver](
        counting, SIGMA_MAX * torch.randn(3, 1, 2, 2), karras_sigmas(steps, SIGMA_MIN, SIGMA_MAX)
    )
    assert out.dtype == torch.float32
    assert len(calls) == nfe(solver, steps)
    assert nfe("heun", 18) == 35


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="unknown solver"):
        nfe("rk4", 10)
    with pytest.raises(ValueError, match="final 0"):
        heun_sample(gaussian_denoiser, torch.randn(1, 1), torch.tensor([80.0, 1.0]))
    with pytest.raises(ValueError, match="at least 2"):
        karras_sigmas(1, SIGMA_MIN, SIGMA_MAX)


def test_guidance_combines_the_condition_with_the_null_condition():
    cond = {"class_labels": torch.eye(3)[[0, 2]], "signal": torch.ones(2, 4)}
    null = {key: torch.zeros_like(value) for key, value in cond.items()}

    def denoiser(x, sigma, class_labels, signal):
        # Conditional rows add their class index + 1 and their signal's sum; null rows add nothing.
        shift = (class_labels * torch.arange(1.0, 4.0)).sum(dim=1) + signal.sum(dim=1)
        return x * 0.5 + shift.reshape(-1, 1, 1, 1)

    x, sigma = torch.randn(2, 1, 2, 2), torch.tensor([1.0, 2.0])
    d_cond, d_uncond = denoiser(x, sigma, **cond), x * 0.5
    torch.testing.assert_close(
        guided(denoiser, cond, 2.5, null)(x, sigma), d_uncond + 2.5 * (d_cond - d_uncond)
    )


def test_guidance_zero_and_one_run_one_pass_each_and_reproduce_both_samplers():
    cond = {"class_labels": torch.eye(3)[[1]]}
    null = {"class_labels": torch.zeros(1, 3)}
    seen = []

    def denoiser(x, sigma, class_labels):
        seen.append(class_labels)
        return x

    x, sigma = torch.randn(1, 1, 2, 2), torch.ones(1)
    guided(denoiser, cond, 1.0, null)(x, sigma)
    guided(denoiser, cond, 0.0, null)(x, sigma)
    assert len(seen) == 2 and seen[0] is cond["class_labels"] and seen[1] is null["class_labels"]
    with pytest.raises(ValueError, match="condition keys"):
        guided(denoiser, cond, 2.0, {"prefix": torch.zeros(1, 3)})


def test_an_unconditional_denoiser_needs_no_guidance():
    assert torch.equal(guided(lambda x, s: x + 1, {}, 3.0, {})(torch.zeros(2), torch.ones(2)), torch.ones(2))
