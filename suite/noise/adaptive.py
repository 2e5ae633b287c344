"""Shared machinery of adaptive samplers: binned loss statistics on the device, warm-up and rebuilds.

Each training step ``observe`` adds a per-sample statistic s(σ, ℓ) to K uniform bins in u = ln σ with
``index_add_`` (no host synchronisation). Every ``refresh_every`` steps after ``warmup_steps`` the
bin sums and counts are all-reduced across ranks, folded into decayed accumulators
  S_k ← γ·S_k + ΔS_k,  N_k ← γ·N_k + ΔN_k    (γ = ``decay`` per rebuild),
and the subclass turns the bin means m̂_k = S_k/N_k (bins with N_k < ``min_count`` are filled by
linear interpolation of ln m̂ in u, constant beyond the outermost filled bins) into a new tabulated
density. Until the first rebuild draws come from a fixed base prior (a registered sampler). Each
rebuild appends the sup-norm change of the CDF to the history, the paper's stability diagnostic.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from suite.noise.sampler import NoiseSampler, build_sampler
from suite.noise.tabulated import TabulatedDensity
from suite.noise.weighting import LossWeight, UniformWeight


def fill_missing_log(values: Tensor, valid: Tensor, centers: Tensor) -> Tensor:
    """Fill invalid bins by linear interpolation of ln(values) over ``centers``; flat beyond the ends."""
    if bool(valid.all()):
        return values
    known_u = centers[valid]
    known_log = values[valid].clamp(min=1e-300).log()
    j = torch.searchsorted(known_u, centers).clamp(1, known_u.numel() - 1) if known_u.numel() > 1 else None
    if j is None:
        return torch.full_like(values, values[valid][0].item())
    u0, u1 = known_u[j - 1], known_u[j]
    t = ((centers - u0) / (u1 - u0)).clamp(0, 1)
    filled = (known_log[j - 1] + t * (known_log[j] - known_log[j - 1])).exp()
    return torch.where(valid, values, filled)


def gaussian_smooth_log(values: Tensor, width_bins: float) -> Tensor:
    """Smooth ln(values) with a Gaussian kernel of std ``width_bins`` bins (edge values replicated)."""
    if width_bins <= 0:
        return values
    radius = max(1, math.ceil(3 * width_bins))
    offsets = torch.arange(-radius, radius + 1, dtype=torch.float64, device=values.device)
    kernel = torch.exp(-0.5 * (offsets / width_bins) ** 2)
    kernel = kernel / kernel.sum()
    logv = values.clamp(min=1e-300).log()
    padded = torch.nn.functional.pad(logv[None, None], (radius, radius), mode="replicate")[0, 0]
    return torch.nn.functional.conv1d(padded[None, None], kernel[None, None])[0, 0].exp()


class BinnedAdaptiveSampler(NoiseSampler):
    """Base of samplers whose density is rebuilt from binned per-sample loss statistics."""

    adaptive = True
    # device tensors: added to every step and all-reduced at each rebuild / folded into decayed accumulators
    _PENDING = ("pending_sum", "pending_count", "pending_dropped", "pending_outside")
    _STATISTICS = (*_PENDING, "acc_sum", "acc_count")

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        bins: int = 64,
        warmup_steps: int = 500,
        refresh_every: int = 100,
        decay: float = 0.9,
        min_count: int = 16,
        base: str = "edm",
        base_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(sigma_min, sigma_max, weight)
        if bins < 2 or warmup_steps < 1 or refresh_every < 1 or min_count < 1 or not 0 <= decay <= 1:
            raise ValueError(
                "need bins >= 2, warmup_steps >= 1, refresh_every >= 1, min_count >= 1 and 0 <= decay <= 1; "
                f"got bins={bins}, warmup_steps={warmup_steps}, refresh_every={refresh_every}, "
                f"min_count={min_count}, decay={decay}"
            )
        self.bins = int(bins)
        self.warmup_steps = int(warmup_steps)
        self.refresh_every = int(refresh_every)
        self.decay = float(decay)
        self.min_count = int(min_count)
        self.base_name = base
        self.base_params = dict(base_params or {})
        self.base = build_sampler(base, sigma_min, sigma_max, weight, **self.base_params)
        if self.base.adaptive:
            raise ValueError(f"the base prior must be a fixed sampler, got adaptive {base!r}")
        self.loss_weight = weight if weight is not None else UniformWeight()
        self.edges = torch.linspace(self.u_min, self.u_max, self.bins + 1, dtype=torch.float64)
        self.centers = 0.5 * (self.edges[1:] + self.edges[:-1])
        self.steps = 0
        self.dropped = 0
        self.density: TabulatedDensity | None = None
        self.history: list[dict[str, Any]] = []
        self._memo: tuple[tuple[Any, ...], Tensor, dict[str, Tensor]] | None = None
        self._allocate(torch.device("cpu"))

    # -- statistics ----------------------------------------------------------------------------------
    def _allocate(self, device: torch.device) -> None:
        zeros = torch.zeros(self.bins, dtype=torch.float64, device=device)
        self.pending_sum, self.pending_count = zeros.clone(), zeros.clone()
        self.acc_sum, self.acc_count = zeros.clone(), zeros.clone()
        self.pending_dropped = torch.zeros((), dtype=torch.float64, device=device)
        self.pending_outside = torch.zeros((), dtype=torch.float64, device=device)

    def to(self, device: torch.device | str) -> BinnedAdaptiveSampler:
        """Move the statistics and the density tables to ``device``."""
        device = torch.device(device)
        for name in self._STATISTICS:
            setattr(self, name, getattr(self, name).to(device))
        if self.density is not None:
            self.density = self.density.to(device)
        return self

    @abstractmethod
    def statistic(self, draws: dict[str, Tensor], loss: Tensor) -> Tensor:
        """Per-sample value whose bin means drive the density (float64), from the float64 loss and the
        batch's ``draws`` (σ, u, inside, ...)."""

    @abstractmethod
    def build_density(self, m_hat: Tensor) -> TabulatedDensity:
        """New sampling density from the filled bin means m̂ (on the bin centers)."""

    def draws(self, sigma: Tensor) -> dict[str, Tensor]:
        """Per-draw quantities of the batch ``sigma``, computed once: σ in float64 (``sigma``), u = ln σ
        (``u``), whether σ lies in the support (``inside``) and what ``_describe_draws`` adds. The
        importance weight and the observation of the same σ tensor share them: a call with the same
        elements (the same storage, shape, strides and dtype, not modified in place since, which torch's
        version counter tells) returns the kept values; the kept tensor holds its storage, so no other
        tensor can take its address."""
        key = (sigma.data_ptr(), sigma.shape, sigma.stride(), sigma.dtype, sigma.device, sigma._version)
        if self._memo is None or self._memo[0] != key:
            sigma64 = sigma.to(torch.float64)
            u = sigma64.log()
            inside = self.inside_support(sigma64)
            values = {"sigma": sigma64, "u": u, "inside": inside}
            values.update(self._describe_draws(values))
            self._memo = (key, sigma, values)
        return self._memo[2]

    def _describe_draws(self, draws: dict[str, Tensor]) -> dict[str, Tensor]:
        """Extra per-draw quantities of a subclass (kept with the draws)."""
        return {}

    def _observe(self, sigma: Tensor, loss: Tensor) -> None:
        if self.pending_sum.device != sigma.device:
            self.to(sigma.device)
        draws = self.draws(sigma)
        u, inside = draws["u"], draws["inside"]
        finite_loss = loss.abs() < math.inf  # torch.isfinite, in two operations
        finite = finite_loss & inside
        value = torch.where(finite, self.statistic(draws, loss.to(torch.float64)), 0.0)
        width = (self.u_max - self.u_min) / self.bins
        # floor is the truncation of .long() here: negative values are clamped to bin 0 first
        index = ((u - self.u_min) / width).nan_to_num(0).clamp(0, self.bins - 1).long()
        self.pending_sum.index_add_(0, index, value)
        self.pending_count.index_add_(0, index, finite.to(torch.float64))
        self.pending_dropped += (
            inside ^ finite
        ).sum()  # inside with a non-finite loss (finite implies inside)
        self.pending_outside += (~inside).sum()
        self.steps += 1
        if self.steps >= self.warmup_steps and (self.steps - self.warmup_steps) % self.refresh_every == 0:
            self.rebuild()

    def rebuild(self) -> None:
        """All-reduce the pending statistics, fold them in and rebuild the density (one host sync)."""
        if dist.is_available() and dist.is_initialized():
            for name in self._PENDING:
                dist.all_reduce(getattr(self, name))
        if (outside := int(self.pending_outside.item())) > 0:
            raise ValueError(
                f"{outside} observed sigma values lie outside the {self.name} sampler's "
                f"support [sigma_min={self.sigma_min:g}, sigma_max={self.sigma_max:g}]"
            )
        self.acc_sum = self.decay * self.acc_sum + self.pending_sum
        self.acc_count = self.decay * self.acc_count + self.pending_count
        self.dropped += int(self.pending_dropped.item())
        for name in self._PENDING:
            getattr(self, name).zero_()
        valid = self.acc_count >= self.min_count
        record: dict[str, Any] = {"step": self.steps, "dropped": self.dropped}
        if not bool(valid.any()):
            record["skipped"] = "no bin has min_count observations yet"
            self.history.append(record)
            return
        centers = self.centers.to(self.acc_sum.device)
        m_hat = fill_missing_log(self.acc_sum / self.acc_count.clamp(min=1), valid, centers)
        new = self.build_density(m_hat)
        grid = torch.linspace(
            self.u_min, self.u_max, 4 * self.bins + 1, dtype=torch.float64, device=centers.device
        )
        record["cdf_change"] = (new.cdf(grid) - self.cdf(grid)).abs().max().item()
        record["filled_bins"] = int(valid.sum().item())
        record.update(self._rebuild_record())
        self.density = new
        self.m_hat = m_hat
        self.history.append(record)

    def _rebuild_record(self) -> dict[str, Any]:
        """Extra per-rebuild diagnostics of a subclass."""
        return {}

    # -- density -------------------------------------------------------------------------------------
    def log_prob(self, u: Tensor) -> Tensor:
        if self.density is None:
            return self.base.log_prob(u)
        u = u.to(torch.float64).to(self.density.nodes.device)
        inside = (u >= self.u_min) & (u <= self.u_max)
        value = self.density.prob(u).log()
        return torch.where(inside, value, torch.full_like(value, -math.inf))

    def cdf(self, u: Tensor) -> Tensor:
        if self.density is None:
            return self.base.cdf(u)
        return self.density.cdf(u.to(torch.float64).to(self.density.nodes.device))

    def _icdf(self, p: Tensor) -> Tensor:
        if self.density is None:
            return self.base._icdf(p)
        return self.density.icdf(p.to(self.density.nodes.device))

    # -- records and state ---------------------------------------------------------------------------
    def hyperparameters(self) -> dict[str, Any]:
        return super().hyperparameters() | {
            "bins": self.bins,
            "warmup_steps": self.warmup_steps,
            "refresh_every": self.refresh_every,
            "decay": self.decay,
            "min_count": self.min_count,
            "base": self.base.hyperparameters(),
            "loss_weight": self.loss_weight.describe(),
        }

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "steps": self.steps,
            "dropped": self.dropped,
            "history": list(self.history),
            **{k: getattr(self, k).detach().cpu().clone() for k in self._STATISTICS},
        }
        if self.density is not None:
            state["density"] = {k: v.cpu() for k, v in self.density.tables().items()}
            state["m_hat"] = self.m_hat.cpu()
        state.update(self._extra_state())
        return state

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        device = self.pending_sum.device
        self.steps = int(state["steps"])
        self.dropped = int(state["dropped"])
        self.history = list(state["history"])
        for key in self._STATISTICS:
            setattr(self, key, state[key].to(device=device, dtype=torch.float64).clone())
        if "density" in state:
            d = state["density"]
            if "cum" in d:
                self.density = TabulatedDensity.from_tables(**d).to(device)
            else:  # written before the cumulative table was kept: normalised again, as it was then
                self.density = TabulatedDensity(d["nodes"], d["left"], d["right"]).to(device)
            self.m_hat = state["m_hat"].to(device)
        else:
            self.density = None
        self._load_extra_state(state)

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what ``_extra_state`` saved."""
