"""Solver grids: the noise levels σ_0 = σ_max > … > σ_{N−1} = σ_min > σ_N = 0 an ODE solver steps through.

``karras``: Karras et al. 2022 ("Elucidating the Design Space of Diffusion-Based Generative Models",
arXiv 2206.00364, Eq. 5), σ_i = (σ_max^{1/ρ} + i/(N−1)·(σ_min^{1/ρ} − σ_max^{1/ρ}))^ρ with ρ = 7.

``infogrid``: InfoNoise's inference grid (Raya et al., arXiv 2602.18647; the authors' project page: "the
learned profile can also be used to construct an inference grid, InfoGrid, at a fixed number of function
evaluations"), built as an entropic-time grid (Stancevic, Handke & Ambrogioni 2025, "Entropic Time
Schedulers for Generative Diffusion Models", arXiv 2504.13612): steps equally spaced in the conditional
entropy H(X₀ | X_σ), so that each step resolves the same amount of information. With the learned profile
ρ̂(u), the entropy rate per unit u = ln σ (I–MMSE: MMSE(σ)/σ², see ``suite.noise.information``), the cumulative

    C(u) = ∫_{ln σ_min}^{u} ρ̂(u') du'

is split into N − 1 equal parts between σ_max and σ_min: C(ln σ_i) = C(ln σ_max)·(1 − i/(N−1)).

``infogrid-rescaled``: the same construction on the tempered density √ρ̂(u). The paper's rescaled grid and
Stancevic et al.'s "rescaled entropic time" are not published in a form we could read, so this variant is a
project choice: the square root is the geometric mean of the entropic-time density and the flat
(log-uniform) one, which moves steps back from the profile's peak toward its tails while keeping their
order, and both variants reduce to the geometric grid for a flat profile.

The profile is (u, ρ̂) on increasing nodes, as the InfoNoise sampler's ``profile()`` and the ``profile``
rows of ``sampler.jsonl`` give it; between nodes ρ̂ is linear and outside them it holds its end values.
The cumulative is integrated with the trapezoid rule on ``FINE_NODES`` points of [ln σ_min, ln σ_max]
(plus the profile's nodes) and inverted linearly. Every grid is N + 1 float64 values on the CPU.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

GRIDS = ("karras", "infogrid", "infogrid-rescaled")
FINE_NODES = 8193
Profile = tuple[Tensor, Tensor]


def _check_range(steps: int, sigma_min: float, sigma_max: float) -> None:
    if steps < 2:
        raise ValueError(f"the grid needs at least 2 steps, got {steps}")
    if not 0 < sigma_min < sigma_max:
        raise ValueError(f"need 0 < sigma_min < sigma_max, got [{sigma_min}, {sigma_max}]")


def karras_grid(steps: int, sigma_min: float, sigma_max: float, rho: float = 7.0) -> Tensor:
    """The EDM grid σ_i = (σ_max^{1/ρ} + i/(N−1)·(σ_min^{1/ρ} − σ_max^{1/ρ}))^ρ, i = 0..N−1, then σ_N = 0.

    Karras et al. 2022, Eq. 5; N = ``steps``. Returns N + 1 float64 values on the CPU.
    """
    _check_range(steps, sigma_min, sigma_max)
    i = torch.arange(steps, dtype=torch.float64)
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    sigmas = (hi + i / (steps - 1) * (lo - hi)) ** rho
    return torch.cat([sigmas, sigmas.new_zeros(1)])


def _profile_arrays(profile: Profile) -> tuple[Tensor, Tensor]:
    """(u, ρ̂) as float64 CPU vectors, checked: same length ≥ 2, u increasing, ρ̂ finite and ≥ 0."""
    u, rho = (torch.as_tensor(p, dtype=torch.float64).detach().cpu().reshape(-1) for p in profile)
    if u.numel() != rho.numel() or u.numel() < 2:
        raise ValueError(f"the profile needs u and rho of one length ≥ 2, got {u.numel()} and {rho.numel()}")
    if not bool(torch.all(u[1:] > u[:-1])):
        raise ValueError("the profile's u (ln σ) nodes must be strictly increasing")
    if not bool(torch.all(torch.isfinite(rho) & (rho >= 0))):
        raise ValueError("the profile's density must be finite and non-negative")
    return u, rho


def entropic_grid(
    steps: int, sigma_min: float, sigma_max: float, profile: Profile, power: float = 1.0
) -> Tensor:
    """Steps equally spaced in the cumulative of ρ̂(u)^``power`` between σ_max and σ_min, then 0.

    ``power`` = 1 is the entropic-time grid (``infogrid``), ½ the tempered one (``infogrid-rescaled``).
    """
    _check_range(steps, sigma_min, sigma_max)
    nodes, rho = _profile_arrays(profile)
    lo, hi = math.log(sigma_min), math.log(sigma_max)
    inside = nodes[(nodes > lo) & (nodes < hi)]
    u = torch.cat([torch.linspace(lo, hi, FINE_NODES, dtype=torch.float64), inside]).unique()
    index = torch.searchsorted(nodes, u).clamp(1, nodes.numel() - 1)
    left, right = nodes[index - 1], nodes[index]
    t = ((u - left) / (right - left)).clamp(0.0, 1.0)
    density = (rho[index - 1] + t * (rho[index] - rho[index - 1])) ** power
    cumulative = torch.cat(
        [density.new_zeros(1), torch.cumsum(0.5 * (density[1:] + density[:-1]) * u.diff(), 0)]
    )
    total = float(cumulative[-1])
    if not total > 0:
        raise ValueError(f"the profile has no mass on [sigma_min, sigma_max] = [{sigma_min}, {sigma_max}]")
    targets = total * (1 - torch.arange(steps, dtype=torch.float64) / (steps - 1))
    k = torch.searchsorted(cumulative, targets).clamp(1, u.numel() - 1)
    c0, c1 = cumulative[k - 1], cumulative[k]
    frac = torch.where(c1 > c0, (targets - c0) / (c1 - c0), torch.ones_like(targets))
    sigmas = (u[k - 1] + frac * (u[k] - u[k - 1])).exp()
    sigmas[0], sigmas[-1] = sigma_max, sigma_min
    return torch.cat([sigmas, sigmas.new_zeros(1)])


def build_grid(
    name: str, steps: int, sigma_min: float, sigma_max: float, profile: Profile | None = None
) -> Tensor:
    """The solver grid ``name`` (``karras``, ``infogrid``, ``infogrid-rescaled``) of ``steps`` steps.

    ``profile`` = (u = ln σ nodes, ρ̂ density over u) is required by the InfoGrid variants and ignored by
    ``karras``. Returns N + 1 float64 values: σ_max, …, σ_min, 0.
    """
    if name == "karras":
        return karras_grid(steps, sigma_min, sigma_max)
    if name not in GRIDS:
        raise ValueError(f"unknown solver grid {name!r}; valid grids: {', '.join(GRIDS)}")
    if profile is None:
        raise ValueError(
            f"grid {name!r} needs the learned information profile (u, rho): the last 'profile' row of an "
            "InfoNoise run's sampler.jsonl, or InfoNoise's profile(); use grid 'karras' for runs without one"
        )
    return entropic_grid(steps, sigma_min, sigma_max, profile, power=1.0 if name == "infogrid" else 0.5)
