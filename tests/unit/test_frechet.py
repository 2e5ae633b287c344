"""Sample-space Fréchet distance: agrees with the d×d formula, never allocates d×d when d ≫ n."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch
from torch.profiler import ProfilerActivity

from suite.metrics.frechet import frechet_distance, sample_space_is_cheaper, time_frechet


def reference_fd(x, y):
    """The textbook formula with covariance matrices and scipy's general matrix square root."""
    mu1, mu2 = x.mean(0), y.mean(0)
    s1, s2 = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    covmean = scipy.linalg.sqrtm(s1 @ s2).real
    return float((mu1 - mu2) @ (mu1 - mu2) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))


def correlated(n, d, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) / math.sqrt(d)
    return rng.normal(size=(n, d)) @ mix + shift


@pytest.mark.parametrize("n1, n2, d", [(200, 150, 8), (300, 300, 20), (40, 60, 25)])
def test_both_routes_equal_the_dxd_formula(n1, n2, d):
    x, y = correlated(n1, d, 0), correlated(n2, d, 1, shift=0.3)
    expected = reference_fd(x, y)
    for route in (True, False):
        assert frechet_distance(x, y, sample_space=route) == pytest.approx(expected, rel=1e-6)


def test_identical_sets_give_zero_and_a_mean_shift_gives_its_square():
    x = correlated(50, 400, 2)
    assert abs(frechet_distance(x, x.copy())) < 1e-8
    shift = np.zeros(400)
    shift[3] = 2.0
    assert frechet_distance(x, x + shift) == pytest.approx(4.0, rel=1e-9)


def test_sample_space_route_never_allocates_dxd_when_d_far_exceeds_n():
    n, d = 60, 20_000
    assert sample_space_is_cheaper(n, n, d)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.normal(size=(n, d)).astype(np.float32) + 0.1
    with torch.profiler.profile(
        activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True
    ) as prof:
        value = frechet_distance(x, y)
    assert math.isfinite(value) and value > 0
    events = prof.events()
    largest_input = max((math.prod(shape) for e in events for shape in e.input_shapes if shape), default=0)
    largest_allocation = max(e.cpu_memory_usage for e in events)
    assert largest_input <= n * d
    assert 0 < largest_allocation <= 2 * n * d * 8 < d * d * 8 / 20


def test_rejects_mismatched_dimensions_and_single_rows():
    with pytest.raises(ValueError, match="dimensions differ"):
        frechet_distance(np.zeros((3, 4)), np.zeros((3, 5)))
    with pytest.raises(ValueError, match="at least 2 rows"):
        frechet_distance(np.zeros((1, 4)), np.zeros((3, 4)))


def test_timing_helper_reports_the_sizes_it_ran():
    result = time_frechet(d=500, n=40)
    assert result["d"] == 500 and result["n"] == 40 and result["seconds"] > 0
    assert result["sample_space"] == 1.0
