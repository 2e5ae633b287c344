"""InfoNoise: the training-noise density that follows the conditional-entropy-rate profile.

Source: Raya et al., "Noise Scheduling as Information-Guided Allocation in Diffusion Training"
(arXiv 2602.18647). Through I–MMSE (Guo, Shamai & Verdú 2005) the entropy rate of the clean sample given
the noisy one is dH(X₀|X_σ)/dσ = MMSE(σ)/σ³ per dσ, i.e. MMSE(σ)/σ² per unit u = ln σ. InfoNoise
estimates MMSE(σ) online from the unweighted x₀-space losses training already computes and moves only
the sampling density π, leaving the loss weight w fixed, so that the effective allocation φ = π·w
follows the estimated profile:

  m̂(σ)  = binned, decayed mean of ‖D(x₀+σε; σ) − x₀‖² (bins in ln σ; see ``suite.noise.adaptive``)
  q̂(u)  = m̂(σ)/σ²                               raw profile per unit ln σ
  g(σ)  = σⁿ/(σⁿ + cⁿ), n = 3                       low-noise gate
  ρ̂(u) ∝ q̂(u)·g(σ),   π(u) ∝ ρ̂(u)/w(σ)

The gate pivot c is pinned per domain (``gate_c``) or found by the onset rule: start at the maximum of
q̂, scan toward lower σ and take the first σ where q̂/max q̂ falls below ``onset_p`` = 0.002 and stays
below for ``onset_persistence`` consecutive bins; with no such crossing (continuous data, whose profile
does not vanish at low noise) the gate pivot is σ_min. The density is piecewise linear in u through the
bin centres and the support's end points, so it carries no histogram discretisation error.

The paper publishes n = 3 and p = 0.002 but no grid, smoothing, warm-up or refresh values; the defaults
here were chosen with ``scripts/tune_infonoise.py`` (docs/infonoise-defaults.md) and every value is
recorded in each run.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from suite.noise.adaptive import BinnedAdaptiveSampler, gaussian_smooth_log
from suite.noise.sampler import SAMPLERS
from suite.noise.tabulated import TabulatedDensity
from suite.noise.weighting import LossWeight


def onset_pivot(sigma: Tensor, profile: Tensor, p: float, persistence: int) -> float:
    """σ at the first persistent drop of profile/max below ``p``, scanning down from the maximum.

    ``sigma`` is increasing. Returns sigma[0] when the profile never stays below ``p`` below its peak.
    """
    ratio = profile / profile.max()
    peak = int(torch.argmax(profile).item())
    below = (ratio < p).tolist()
    for k in range(peak, -1, -1):
        window = below[max(0, k - persistence + 1) : k + 1]
        if below[k] and all(window):
            return float(sigma[k].item())
    return float(sigma[0].item())


def low_noise_gate(sigma: Tensor, c: float, n: float = 3.0) -> Tensor:
    """g(σ) = σⁿ/(σⁿ + cⁿ), written as 1/(1 + (c/σ)ⁿ)."""
    return 1.0 / (1.0 + (c / sigma) ** n)


@SAMPLERS.register("infonoise")
class InfoNoise(BinnedAdaptiveSampler):
    """Online entropy-rate-guided training-noise density (arXiv 2602.18647)."""

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        bins: int = 64,
        smoothing_bins: float = 0.0,
        gate_n: float = 3.0,
        gate_c: float | None = None,
        onset_p: float = 0.002,
        onset_persistence: int = 3,
        **schedule: Any,
    ) -> None:
        """``schedule``: warmup_steps, refresh_every, decay, min_count, base, base_params (base class)."""
        super().__init__(sigma_min, sigma_max, weight, bins=bins, **schedule)
        if gate_c is not None and not gate_c > 0:
            raise ValueError(f"gate_c must be positive or null (onset rule), got {gate_c}")
        if not 0 < onset_p < 1 or onset_persistence < 1 or smoothing_bins < 0:
            raise ValueError("need 0 < onset_p < 1, onset_persistence >= 1 and smoothing_bins >= 0")
        self.smoothing_bins = float(smoothing_bins)
        self.gate_n = float(gate_n)
        self.gate_c = None if gate_c is None else float(gate_c)
        self.onset_p = float(onset_p)
        self.onset_persistence = int(onset_persistence)
        self.pivot = self.gate_c

    def statistic(self, draws: dict[str, Tensor], loss: Tensor) -> Tensor:
        """The unweighted x₀-space loss itself: its bin means estimate MMSE(σ)."""
        return loss

    def gate_pivot(self, sigma: Tensor, mmse: Tensor) -> float:
        """The pinned ``gate_c``, or the onset rule applied to the raw profile MMSE/σ² at ``sigma``."""
        if self.gate_c is not None:
            return self.gate_c
        return onset_pivot(sigma, mmse / sigma**2, self.onset_p, self.onset_persistence)

    def target_density(self, mmse_at_nodes: Tensor, nodes: Tensor, pivot: float) -> TabulatedDensity:
        """π ∝ MMSE/σ² · g_c(σ) / w(σ) on ``nodes`` (u values), piecewise linear between them."""
        sigma = nodes.exp()
        rho = mmse_at_nodes / sigma**2 * low_noise_gate(sigma, pivot, self.gate_n)
        return TabulatedDensity.linear(nodes, rho / self.loss_weight(sigma))

    def build_density(self, m_hat: Tensor) -> TabulatedDensity:
        smoothed = gaussian_smooth_log(m_hat, self.smoothing_bins)
        centers = self.centers.to(m_hat.device)
        ends = torch.tensor([self.u_min, self.u_max], dtype=torch.float64, device=m_hat.device)
        nodes = torch.cat([ends[:1], centers, ends[1:]])
        values = torch.cat([smoothed[:1], smoothed, smoothed[-1:]])
        self.pivot = self.gate_pivot(centers.exp(), smoothed)
        return self.target_density(values, nodes, self.pivot)

    def profile(self) -> dict[str, Tensor] | None:
        """The current estimate on the bin centres: m̂, the gated profile ρ̂ (normalised per unit ln σ)."""
        if self.density is None:
            return None
        centers = self.centers.to(self.m_hat.device)
        sigma = centers.exp()
        m = gaussian_smooth_log(self.m_hat, self.smoothing_bins)
        rho = m / sigma**2 * low_noise_gate(sigma, self.pivot, self.gate_n)
        rho = rho / torch.trapezoid(rho, centers)
        return {"u": centers, "m_hat": m, "rho": rho, "pi": self.density.prob(centers)}

    def _rebuild_record(self) -> dict[str, Any]:
        return {"gate_c": self.pivot}

    def hyperparameters(self) -> dict[str, Any]:
        return super().hyperparameters() | {
            "smoothing_bins": self.smoothing_bins,
            "gate_n": self.gate_n,
            "gate_c": self.gate_c,
            "onset_p": self.onset_p,
            "onset_persistence": self.onset_persistence,
        }

    def _extra_state(self) -> dict[str, Any]:
        return {"pivot": self.pivot}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.pivot = state["pivot"]
