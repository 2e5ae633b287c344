"""Solver grids: the Karras grid unchanged, InfoGrid equally spaced in the cumulative learned profile."""

from __future__ import annotations

import math

import pytest
import torch

from suite.noise.information import gaussian_mmse
from suite.run.grids import GRIDS, build_grid, karras_grid
from suite.run.solvers import karras_sigmas

SIGMA_MIN, SIGMA_MAX = 0.002, 80.0
U = torch.linspace(math.log(SIGMA_MIN), math.log(SIGMA_MAX), 64, dtype=torch.float64)


def peaked_profile() -> tuple[torch.Tensor, torch.Tensor]:
    """The entropy-rate profile MMSE/σ² of N(0, 0.25·I) data, normalised over u."""
    rho = gaussian_mmse(U.exp(), 0.25) / U.exp() ** 2
    return U, rho / torch.trapezoid(rho, U)


def test_karras_sigmas_is_the_karras_grid_bit_for_bit():
    for steps in (2, 18, 40):
        assert torch.equal(
            karras_sigmas(steps, SIGMA_MIN, SIGMA_MAX), karras_grid(steps, SIGMA_MIN, SIGMA_MAX)
        )
    assert torch.equal(build_grid("karras", 18, SIGMA_MIN, SIGMA_MAX), karras_grid(18, SIGMA_MIN, SIGMA_MAX))


@pytest.mark.parametrize("name", GRIDS)
@pytest.mark.parametrize("steps", [2, 5, 18])
def test_grid_has_the_steps_and_runs_from_sigma_max_to_sigma_min_then_zero(name: str, steps: int):
    grid = build_grid(name, steps, SIGMA_MIN, SIGMA_MAX, peaked_profile())
    assert grid.dtype == torch.float64 and grid.shape == (steps + 1,)
    assert grid[0].item() == SIGMA_MAX and grid[-1].item() == 0.0
    assert grid[-2].item() == pytest.approx(SIGMA_MIN, rel=1e-12)
    assert bool(torch.all(grid[1:] < grid[:-1]))


@pytest.mark.parametrize("name", ["infogrid", "infogrid-rescaled"])
def test_flat_profile_gives_the_geometric_grid(name: str):
    grid = build_grid(name, 12, SIGMA_MIN, SIGMA_MAX, (U, torch.full_like(U, 3.0)))
    geometric = torch.exp(torch.linspace(math.log(SIGMA_MAX), math.log(SIGMA_MIN), 12, dtype=torch.float64))
    assert torch.allclose(grid[:-1], geometric, rtol=1e-12, atol=0)


def test_infogrid_steps_carry_equal_profile_mass():
    """Each step of the entropic grid resolves the same share of the (exact, closed-form) entropy drop."""
    steps = 10
    grid = build_grid("infogrid", steps, SIGMA_MIN, SIGMA_MAX, peaked_profile())
    v = 0.25  # ∫ v/(v + σ²) d ln σ = ½·ln(σ²/(v + σ²)) + const
    cumulative = 0.5 * torch.log(grid[:-1] ** 2 / (v + grid[:-1] ** 2))
    shares = -cumulative.diff()
    assert torch.allclose(shares, shares.mean().expand_as(shares), rtol=2e-3)


def test_rescaled_grid_lies_between_entropic_and_geometric():
    """Tempering the profile moves interior steps toward the geometric grid, never past it."""
    entropic = build_grid("infogrid", 9, SIGMA_MIN, SIGMA_MAX, peaked_profile())[1:-2].log()
    rescaled = build_grid("infogrid-rescaled", 9, SIGMA_MIN, SIGMA_MAX, peaked_profile())[1:-2].log()
    geometric = torch.linspace(math.log(SIGMA_MAX), math.log(SIGMA_MIN), 9, dtype=torch.float64)[1:-1]
    low, high = torch.minimum(entropic, geometric), torch.maximum(entropic, geometric)
    assert bool(torch.all((rescaled >= low - 1e-9) & (rescaled <= high + 1e-9)))
    assert not torch.allclose(rescaled, entropic) and not torch.allclose(rescaled, geometric)


def test_profile_nodes_outside_the_range_and_zero_mass_regions():
    """A profile on a narrower u range holds its end values; zero-density stretches get no interior step."""
    u = torch.tensor([-2.0, 0.0, 2.0], dtype=torch.float64)
    rho = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    grid = build_grid("infogrid", 7, SIGMA_MIN, SIGMA_MAX, (u, rho))
    inner = grid[1:-2]
    assert bool(torch.all((inner > math.exp(-2.0)) & (inner < math.exp(2.0))))
    assert inner[2].item() == pytest.approx(1.0, rel=1e-3)  # the symmetric triangle's median, σ = e⁰


def test_unknown_grid_lists_valid_names():
    with pytest.raises(
        ValueError, match="unknown solver grid 'edm'; valid grids: karras, infogrid, infogrid-rescaled"
    ):
        build_grid("edm", 18, SIGMA_MIN, SIGMA_MAX)


@pytest.mark.parametrize("name", ["infogrid", "infogrid-rescaled"])
def test_infogrid_without_a_profile_says_what_it_needs(name: str):
    with pytest.raises(ValueError, match="needs the learned information profile.*sampler.jsonl"):
        build_grid(name, 18, SIGMA_MIN, SIGMA_MAX)


def test_bad_profiles_are_refused():
    with pytest.raises(ValueError, match="strictly increasing"):
        build_grid("infogrid", 5, SIGMA_MIN, SIGMA_MAX, (U.flip(0), torch.ones_like(U)))
    with pytest.raises(ValueError, match="non-negative"):
        build_grid("infogrid", 5, SIGMA_MIN, SIGMA_MAX, (U, -torch.ones_like(U)))
    with pytest.raises(ValueError, match="no mass"):
        build_grid("infogrid", 5, SIGMA_MIN, SIGMA_MAX, (U, torch.zeros_like(U)))
    with pytest.raises(ValueError, match="at least 2 steps"):
        build_grid("infogrid", 1, SIGMA_MIN, SIGMA_MAX, peaked_profile())
