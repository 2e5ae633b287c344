"""InfoNoise and KG against analytic information profiles; state, robustness and end-to-end checks."""

import io
import math

import pytest
import torch

from suite.noise.calibration import ANALYTIC_CASES, SIGMA_MAX, SIGMA_MIN, analytic_target, total_variation
from suite.noise.infonoise import onset_pivot
from suite.noise.sampler import build_sampler
from suite.noise.weighting import EDMWeight


def feed(sampler, data, steps, batch=512, seed=0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        sigma = sampler.sample(batch, gen, dtype=torch.float64)
        sampler.observe(sigma, data.optimal_losses(sigma, gen))


@pytest.mark.parametrize("case", sorted(ANALYTIC_CASES))
def test_reaches_analytic_target_from_optimal_losses(case):
    """Fed unbiased samples of the exact MMSE (the Bayes denoiser's per-sample losses), the default
    estimator and schedule (warm-up 500, refresh every 100 steps) reach the analytic π within TV 0.02."""
    spec = ANALYTIC_CASES[case]
    sampler, _ = spec.make_sampler()
    feed(sampler, spec.data, steps=1500)
    tv = total_variation(sampler.density, analytic_target(case, sampler))
    assert tv <= 0.02, tv
    assert sampler.history[-1]["cdf_change"] < 0.01  # the paper's stability diagnostic


def test_onset_rule_finds_the_discrete_pivot_and_skips_continuous_data():
    sigma = torch.logspace(math.log10(SIGMA_MIN), math.log10(SIGMA_MAX), 64, dtype=torch.float64)
    two_point = ANALYTIC_CASES["two_point"].mmse(sigma)
    c = onset_pivot(sigma, two_point / sigma**2, p=0.002, persistence=3)
    assert 0.1 < c < 0.5  # binary data carries no information below σ ≈ 0.2
    gaussian = ANALYTIC_CASES["gaussian"].mmse(sigma)
    assert onset_pivot(sigma, gaussian / sigma**2, p=0.002, persistence=3) == sigma[0].item()


@pytest.mark.parametrize("name", ["infonoise", "kg", "edm"])
def test_reloaded_sampler_draws_the_identical_next_batch(name):
    spec = ANALYTIC_CASES["two_point"]
    params = {"warmup_steps": 20, "refresh_every": 10} if name != "edm" else {}
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), **params)
    feed(sampler, spec.data, steps=45, batch=256)
    buffer = io.BytesIO()
    torch.save(sampler.state_dict(), buffer)
    buffer.seek(0)
    fresh = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), **params)
    fresh.load_state_dict(torch.load(buffer, weights_only=False))
    a = sampler.sample(512, torch.Generator().manual_seed(99))
    b = fresh.sample(512, torch.Generator().manual_seed(99))
    assert torch.equal(a, b)
    # and they keep agreeing after further observations and rebuilds
    feed(sampler, spec.data, steps=15, batch=256, seed=5)
    feed(fresh, spec.data, steps=15, batch=256, seed=5)
    assert torch.equal(
        sampler.sample(64, torch.Generator().manual_seed(3)),
        fresh.sample(64, torch.Generator().manual_seed(3)),
    )


def test_reloaded_density_tables_and_the_next_cdf_change_are_bit_identical():
    """A checkpoint restores the normalised tables as saved: normalising them again by their recomputed total
    (not exactly 1 here) changed their last bits and the next rebuild's cdf_change."""
    spec = ANALYTIC_CASES["gaussian"]
    params = {"warmup_steps": 20, "refresh_every": 10}
    sampler = build_sampler("infonoise", SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), **params)
    feed(sampler, spec.data, steps=45, batch=256)
    tables = sampler.density.tables()
    assert (0.5 * (tables["left"] + tables["right"]) * tables["nodes"].diff()).sum().item() != 1.0
    buffer = io.BytesIO()
    torch.save(sampler.state_dict(), buffer)
    buffer.seek(0)
    fresh = build_sampler("infonoise", SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), **params)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    for density in (fresh.density, fresh.density.to("cpu")):
        for key, table in density.tables().items():
            assert torch.equal(table, tables[key]), key
    feed(sampler, spec.data, steps=10, batch=256, seed=5)
    feed(fresh, spec.data, steps=10, batch=256, seed=5)
    assert fresh.history[-1]["cdf_change"] == sampler.history[-1]["cdf_change"]


@pytest.mark.parametrize("name", ["infonoise", "kg"])
def test_non_finite_losses_are_dropped_counted_and_change_nothing(name):
    spec = ANALYTIC_CASES["two_point"]
    clean = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), warmup_steps=5, refresh_every=5)
    dirty = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), warmup_steps=5, refresh_every=5)
    gen = torch.Generator().manual_seed(0)
    bad = torch.tensor([math.nan, math.inf, -math.inf])
    for _ in range(20):
        sigma = clean.sample(256, gen, dtype=torch.float64)
        loss = spec.data.optimal_losses(sigma, gen)
        clean.observe(sigma, loss)
        dirty.observe(torch.cat([sigma, sigma[:3]]), torch.cat([loss, bad.double()]))
    assert dirty.history[-1]["dropped"] == 60
    u = torch.linspace(math.log(SIGMA_MIN), math.log(SIGMA_MAX), 257, dtype=torch.float64)
    assert torch.allclose(clean.density_on(u), dirty.density_on(u), rtol=1e-12, atol=0)


def test_kg_importance_weight_restores_the_reference_objective():
    """With the correction, E_{σ~p}[π_ref(σ)/p(σ)·f(σ)] = E_{σ~π_ref}[f(σ)] for the learned histogram p."""
    spec = ANALYTIC_CASES["gaussian"]
    kg = build_sampler("kg", SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(0.5), warmup_steps=10, refresh_every=10)
    feed(kg, spec.data, steps=40)
    assert kg.density is not None and kg.importance_correction
    gen = torch.Generator().manual_seed(4)
    sigma = kg.sample(400_000, gen, dtype=torch.float64)
    f = torch.sigmoid(sigma.log())  # any bounded test function
    corrected = (kg.importance_weight(sigma) * f).mean()
    reference = kg.base.sample(400_000, gen, dtype=torch.float64)
    assert corrected.item() == pytest.approx(torch.sigmoid(reference.log()).mean().item(), abs=5e-3)
    uncorrected = build_sampler(
        "kg", SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(0.5), importance_correction=False
    )
    assert uncorrected.importance_weight(sigma) is None
