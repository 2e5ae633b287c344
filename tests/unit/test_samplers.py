"""Fixed samplers against closed forms; interface contracts of every registered sampler."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from suite.noise.sampler import SAMPLERS, build_sampler
from suite.noise.weighting import EDMWeight
from suite.registry import UnknownNameError

SIGMA_MIN, SIGMA_MAX = 0.002, 80.0
U_MIN, U_MAX = math.log(SIGMA_MIN), math.log(SIGMA_MAX)
FIXED = ["logu", "cos", "fm", "edm", "laplace", "cauchy"]
FIXED_VARIANTS = [(name, {}) for name in FIXED] + [
    ("fm", {"t_distribution": "logit_normal", "m": 0.5, "s": 0.8}),
    ("edm", {"p_mean": 1.2, "p_std": 0.7}),
    ("laplace", {"mu": 1.0, "b": 1.0}),
    ("cauchy", {"mu": -2.0, "gamma": 2.0}),
]


def scipy_reference(name: str, params: dict) -> stats.rv_continuous:
    """The untruncated distribution of u = ln σ, written independently with scipy.stats."""
    if name == "logu":
        return stats.uniform(loc=U_MIN, scale=U_MAX - U_MIN)
    if name == "cos":  # σ ~ half-Cauchy(0, 1)  ⇒  u = ln σ has density 1/(π cosh u)
        return stats.hypsecant()
    if name == "fm":
        if params.get("t_distribution") == "logit_normal":
            return stats.norm(loc=params["m"], scale=params["s"])
        return stats.logistic()
    if name == "edm":
        return stats.norm(loc=params.get("p_mean", -1.2), scale=params.get("p_std", 1.2))
    if name == "laplace":  # λ ~ Laplace(μ, b), u = −λ/2
        return stats.laplace(loc=-params.get("mu", 0.0) / 2, scale=params.get("b", 0.5) / 2)
    if name == "cauchy":
        return stats.cauchy(loc=-params.get("mu", 0.0) / 2, scale=params.get("gamma", 1.0) / 2)
    raise KeyError(name)


def truncated_logpdf(ref: stats.rv_continuous, u: np.ndarray) -> np.ndarray:
    mass = ref.cdf(U_MAX) - ref.cdf(U_MIN)
    return ref.logpdf(u) - math.log(mass)


@pytest.mark.parametrize("name,params", FIXED_VARIANTS)
def test_density_integrates_to_one(name, params):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, **params)
    value, err = integrate.quad(
        lambda u: sampler.log_prob(torch.tensor([u], dtype=torch.float64)).exp().item(),
        U_MIN,
        U_MAX,
        limit=500,
        epsabs=1e-12,
        epsrel=1e-12,
    )
    assert abs(value - 1) <= 1e-6, (name, value, err)


@pytest.mark.parametrize("name,params", FIXED_VARIANTS)
def test_icdf_inverts_cdf(name, params):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, **params)
    u = torch.linspace(U_MIN, U_MAX, 2001, dtype=torch.float64)
    back = sampler.icdf(sampler.cdf(u))
    density = sampler.log_prob(u).exp()
    keep = density > 1e-9  # where the CDF is flat to double precision the inverse is not defined
    assert torch.allclose(back[keep], u[keep], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name,params", FIXED_VARIANTS)
def test_draws_pass_ks(name, params):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, **params)
    gen = torch.Generator().manual_seed(1234)
    u = sampler.sample(200_000, gen, dtype=torch.float64).log().numpy()
    result = stats.kstest(u, lambda x: sampler.cdf(torch.from_numpy(np.asarray(x))).numpy())
    assert result.pvalue > 1e-3, result


@pytest.mark.parametrize("name,params", FIXED_VARIANTS)
def test_log_prob_matches_scipy(name, params):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, **params)
    ref = scipy_reference(name, params)
    u = np.random.default_rng(0).uniform(U_MIN, U_MAX, 1000)
    ours = sampler.log_prob(torch.from_numpy(u)).exp().numpy()
    theirs = np.exp(truncated_logpdf(ref, u))
    assert np.max(np.abs(ours / theirs - 1)) <= 1e-6


def test_stratified_draws_cover_every_quantile():
    sampler = build_sampler("edm", SIGMA_MIN, SIGMA_MAX)
    gen = torch.Generator().manual_seed(0)
    sigma = sampler.sample(512, gen, stratified=True, dtype=torch.float64)
    p = sampler.cdf(sigma.log()).sort().values
    bucket = torch.floor(p * 512).long()
    assert torch.equal(bucket, torch.arange(512))


def test_unknown_sampler_lists_valid_names():
    with pytest.raises(UnknownNameError) as err:
        build_sampler("edmm", SIGMA_MIN, SIGMA_MAX)
    for name in FIXED + ["kg", "infonoise"]:
        assert name in str(err.value)


def test_bad_parameter_is_named():
    with pytest.raises(ValueError, match="p_std"):
        build_sampler("edm", SIGMA_MIN, SIGMA_MAX, p_std=-1)
    with pytest.raises(ValueError, match="t_distribution"):
        build_sampler("fm", SIGMA_MIN, SIGMA_MAX, t_distribution="beta")
    with pytest.raises(ValueError, match="bad parameters for sampler 'edm'"):
        build_sampler("edm", SIGMA_MIN, SIGMA_MAX, p_meen=0.0)


@pytest.mark.parametrize("name", sorted(n for n, _ in SAMPLERS))
def test_sigma_outside_support_is_refused(name):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(0.5))
    sigma = torch.tensor([0.5, 100.0])
    with pytest.raises(ValueError, match=r"support \[sigma_min=0.002, sigma_max=80\]"):
        sampler.observe(sigma, torch.ones(2))


@pytest.mark.parametrize("name", sorted(n for n, _ in SAMPLERS))
def test_icdf_refuses_probabilities_outside_unit_interval(name):
    sampler = build_sampler(name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(0.5))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sampler.icdf(torch.tensor([1.5]))
