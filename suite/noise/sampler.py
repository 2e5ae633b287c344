"""The training-noise sampler interface.

Coordinate: u = ln σ, where σ = b/a is the noise-to-signal ratio of an affine Gaussian path
x = a·x₀ + b·ε (VE: a = 1; VP and flow-matching paths convert through σ = b/a). The log-SNR is
λ = −2u. A sampler is a probability density π(u) per unit ln σ on the support [ln σ_min, ln σ_max];
draws are inverse-CDF transforms of uniforms (optionally stratified), so a sampler's randomness is
entirely the caller's ``torch.Generator``.

Adaptive samplers additionally ``observe`` the per-sample *unweighted* x₀-space squared error
‖D(x₀+σε; σ) − x₀‖² (summed over dimensions) of each training example, and may return an importance
weight that multiplies the task's fixed loss weight (Kingma & Gao's 1/p correction).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import torch
from torch import Tensor

from suite.noise.weighting import LossWeight
from suite.registry import Registry

SAMPLERS: Registry[NoiseSampler] = Registry("sampler", "infonoise_suite.samplers")

_SUPPORT_RTOL = 1e-6


class NoiseSampler(ABC):
    """A density π(u) over u = ln σ on [ln σ_min, ln σ_max], drawn by inverse CDF.

    Subclasses implement ``log_prob``, ``cdf`` and ``icdf`` in float64; adaptive ones override
    ``_observe`` and the state methods.
    """

    name: ClassVar[str]
    adaptive: ClassVar[bool] = False
    history: list[dict[str, Any]] | tuple[()] = ()  # per-rebuild diagnostics (adaptive samplers)

    def __init__(self, sigma_min: float, sigma_max: float, weight: LossWeight | None = None):
        if not 0 < sigma_min < sigma_max or not math.isfinite(sigma_max):
            raise ValueError(f"need 0 < sigma_min < sigma_max < inf, got [{sigma_min}, {sigma_max}]")
        self.sigma_min = float(sigma_min)
        self.sigma_max = float(sigma_max)
        self.u_min = math.log(self.sigma_min)
        self.u_max = math.log(self.sigma_max)
        self.weight = weight

    # -- density -------------------------------------------------------------------------------------
    @abstractmethod
    def log_prob(self, u: Tensor) -> Tensor:
        """ln π(u), the log density per unit ln σ; −inf outside the support."""

    @abstractmethod
    def cdf(self, u: Tensor) -> Tensor:
        """P(ln σ ≤ u); 0 below the support and 1 above it."""

    def icdf(self, p: Tensor) -> Tensor:
        """The u with cdf(u) = p, for p in [0, 1] (anything else is refused)."""
        p = p.to(torch.float64)
        if bool(((p < 0) | (p > 1) | p.isnan()).any()):
            raise ValueError("icdf takes probabilities in [0, 1]")
        return self._icdf(p)

    @abstractmethod
    def _icdf(self, p: Tensor) -> Tensor:
        """icdf without input validation (used by ``sample``, so drawing never syncs with the host)."""

    # -- drawing -------------------------------------------------------------------------------------
    def sample(
        self,
        n: int,
        generator: torch.Generator | None = None,
        stratified: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> Tensor:
        """Draw n noise levels σ = exp(F⁻¹(p)) on the generator's device.

        With ``stratified`` the uniforms are p_i = (i + U_i)/n in a random order: one draw per
        1/n-quantile of π, which lowers the variance of batch averages over σ.
        """
        device = generator.device if generator is not None else torch.device("cpu")
        p = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
        if stratified:
            order = torch.randperm(n, generator=generator, device=device)
            p = (order.to(torch.float64) + p) / n
        u = self._icdf(p).clamp(self.u_min, self.u_max)
        return u.exp().to(dtype)

    # -- adaptation ----------------------------------------------------------------------------------
    def observe(self, sigma: Tensor, loss: Tensor) -> None:
        """Record each sample's unweighted x₀-space squared error ``loss`` at its noise level ``sigma``.

        σ outside the support is refused (on an accelerator the check is deferred to the sampler's
        next synchronisation point, so that observing never forces a host sync). Non-finite losses are
        dropped and counted by adaptive samplers.
        """
        sigma, loss = _flat_pair(sigma, loss)
        if sigma.device.type == "cpu":
            self.check_support(sigma)
        self._observe(sigma, loss)

    def observe_draws(self, sigma: Tensor, loss: Tensor) -> None:
        """``observe`` for σ this sampler drew itself (``sample`` keeps them inside the support), without the
        support check on the CPU: it reads no value back from the device, on any device, so a training step
        never waits for its queued work here. Adaptive samplers still count σ outside the support on the
        device and refuse them at their next rebuild."""
        self._observe(*_flat_pair(sigma, loss))

    def _observe(self, sigma: Tensor, loss: Tensor) -> None:  # noqa: B027 (fixed samplers: a deliberate no-op)
        """Fixed samplers ignore observations."""

    def check_support(self, sigma: Tensor) -> None:
        """Raise ValueError naming the support if any σ lies outside [σ_min, σ_max]."""
        bad = self.outside_support(sigma)
        if bool(bad.any()):
            worst = sigma[bad][0].item()
            raise ValueError(
                f"sigma={worst:g} is outside the {self.name} sampler's support "
                f"[sigma_min={self.sigma_min:g}, sigma_max={self.sigma_max:g}]"
            )

    def outside_support(self, sigma: Tensor) -> Tensor:
        """Boolean mask of σ outside [σ_min, σ_max] (with a 1e-6 relative tolerance) or not finite."""
        return ~self.inside_support(sigma)

    def inside_support(self, sigma: Tensor) -> Tensor:
        """Boolean mask of σ inside [σ_min, σ_max] (with a 1e-6 relative tolerance); NaN is outside."""
        lo = self.sigma_min * (1 - _SUPPORT_RTOL)
        hi = self.sigma_max * (1 + _SUPPORT_RTOL)
        return (sigma >= lo) & (sigma <= hi)

    def importance_weight(self, sigma: Tensor) -> Tensor | None:
        """Extra factor on the task's loss weight for draws at ``sigma``; None means 1."""
        return None

    # -- records and state ---------------------------------------------------------------------------
    def hyperparameters(self) -> dict[str, Any]:
        """Every setting that defines this sampler, for run records."""
        return {"name": self.name, "sigma_min": self.sigma_min, "sigma_max": self.sigma_max}

    def state_dict(self) -> dict[str, Any]:
        """Mutable state (empty for fixed samplers)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        if state:
            raise ValueError(f"fixed sampler {self.name!r} has no state, got keys {sorted(state)}")

    def to(self, device: torch.device | str) -> NoiseSampler:
        """Move any device state (fixed samplers have none: they draw on the generator's device)."""
        return self

    def profile(self) -> dict[str, Tensor] | None:
        """The estimated information profile behind the density, for records (None: not estimated)."""
        return None

    def density_on(self, u: Tensor) -> Tensor:
        """π(u) per unit ln σ on a float64 grid (zero outside the support)."""
        return self.log_prob(u.to(torch.float64)).exp()


class TruncatedSampler(NoiseSampler):
    """A fixed continuous distribution of u, truncated to the support and renormalised exactly.

    With base CDF F and density f: π(u) = f(u)/(F(b) − F(a)) on [a, b], cdf(u) = (F(u) − F(a))/(F(b) − F(a))
    and icdf(p) = F⁻¹(F(a) + p·(F(b) − F(a))), all in float64.
    """

    _cached_bounds: tuple[float, float] | None = None

    def _bounds(self) -> tuple[float, float]:
        """(F(a), F(b)), computed once: subclasses set their parameters before the first use."""
        if self._cached_bounds is None:
            lo = self._base_cdf(torch.tensor(self.u_min, dtype=torch.float64)).item()
            hi = self._base_cdf(torch.tensor(self.u_max, dtype=torch.float64)).item()
            if not hi > lo:
                raise ValueError(
                    f"{self.name}: no probability mass on the support [{self.sigma_min}, {self.sigma_max}]"
                )
            self._cached_bounds = (lo, hi)
        return self._cached_bounds

    @abstractmethod
    def _base_log_pdf(self, u: Tensor) -> Tensor:
        """ln f(u) of the untruncated distribution."""

    @abstractmethod
    def _base_cdf(self, u: Tensor) -> Tensor:
        """F(u) of the untruncated distribution."""

    @abstractmethod
    def _base_icdf(self, p: Tensor) -> Tensor:
        """F⁻¹(p) of the untruncated distribution."""

    def log_prob(self, u: Tensor) -> Tensor:
        u = u.to(torch.float64)
        lo, hi = self._bounds()
        inside = (u >= self.u_min) & (u <= self.u_max)
        value = self._base_log_pdf(u) - math.log(hi - lo)
        return torch.where(inside, value, -math.inf)

    def cdf(self, u: Tensor) -> Tensor:
        u = u.to(torch.float64).clamp(self.u_min, self.u_max)
        lo, hi = self._bounds()
        return ((self._base_cdf(u) - lo) / (hi - lo)).clamp(0.0, 1.0)

    def _icdf(self, p: Tensor) -> Tensor:
        lo, hi = self._bounds()
        return self._base_icdf(lo + p * (hi - lo)).clamp(self.u_min, self.u_max)


def _flat_pair(sigma: Tensor, loss: Tensor) -> tuple[Tensor, Tensor]:
    """σ and the losses as detached flat tensors of one length (a ValueError naming both lengths if not)."""
    sigma = sigma.detach().reshape(-1)
    loss = loss.detach().reshape(-1)
    if sigma.shape != loss.shape:
        raise ValueError(f"sigma has {sigma.numel()} entries but loss has {loss.numel()}")
    return sigma, loss


def build_sampler(
    name: str,
    sigma_min: float,
    sigma_max: float,
    weight: LossWeight | None = None,
    **params: Any,
) -> NoiseSampler:
    """Instantiate the sampler registered as ``name`` on [σ_min, σ_max] with its own ``params``."""
    cls = SAMPLERS.get(name)
    try:
        return cls(sigma_min=sigma_min, sigma_max=sigma_max, weight=weight, **params)
    except TypeError as err:
        raise ValueError(f"bad parameters for sampler {name!r}: {err}") from None
