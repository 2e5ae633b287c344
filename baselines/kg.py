"""KG: Kingma & Gao's adaptive noise schedule ("Understanding Diffusion Objectives as the ELBO with
Simple Data Augmentation", NeurIPS 2023, Sec. 5.2 and App. F; VDM++).

The density is a histogram over log-SNR bins (here: uniform bins in u = ln σ = −λ/2, the same bins in
reverse order) proportional to a running average of the *weighted* loss in each bin. Two variants:

- ``importance_correction: true`` (KG's own use): the objective is the reference objective
  ∫ π_ref(σ)·w(σ)·E[ℓ] du of the base prior π_ref, estimated with draws from p and the importance factor
  π_ref(σ)/p(σ) on each sample's loss. The objective is unchanged; only its variance drops. The binned
  statistic is the integrand π_ref(σ)·w(σ)·ℓ, so p ∝ E[π_ref·w·ℓ] (KG's variance-optimal choice).
- ``importance_correction: false``: p ∝ E[w(σ)·ℓ] per bin and the loss keeps the plain weight w, so the
  effective allocation φ = p·w moves toward the weighted loss.

Statistics are kept as in ``suite.noise.adaptive`` (device bins, decayed accumulators, rebuild every
``refresh_every`` steps after a warm-up on the base prior).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from suite.noise.adaptive import BinnedAdaptiveSampler
from suite.noise.sampler import SAMPLERS
from suite.noise.tabulated import TabulatedDensity
from suite.noise.weighting import LossWeight


@SAMPLERS.register("kg")
class KingmaGaoAdaptive(BinnedAdaptiveSampler):
    """Histogram density ∝ the running average of the weighted loss per bin (Kingma & Gao 2023)."""

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        importance_correction: bool = True,
        bins: int = 100,
        **schedule: Any,
    ) -> None:
        """``schedule``: warmup_steps, refresh_every, decay, min_count, base, base_params (base class)."""
        super().__init__(sigma_min, sigma_max, weight, bins=bins, **schedule)
        self.importance_correction = bool(importance_correction)

    def _describe_draws(self, draws: dict[str, Tensor]) -> dict[str, Tensor]:
        """π_ref(σ), the base prior's density at the draws: the importance weight and the binned statistic of
        the same batch both use it, so it is computed once per batch."""
        if not self.importance_correction:
            return {}
        return {"reference": self.base.log_prob(draws["u"]).exp()}

    def statistic(self, draws: dict[str, Tensor], loss: Tensor) -> Tensor:
        """π_ref(σ)·w(σ)·ℓ with the correction, w(σ)·ℓ without it."""
        factor = self.loss_weight(draws["sigma"])
        if self.importance_correction:
            factor = factor * draws["reference"]
        return factor * loss

    def build_density(self, m_hat: Tensor) -> TabulatedDensity:
        return TabulatedDensity.histogram(self.edges.to(m_hat.device), m_hat)

    def importance_weight(self, sigma: Tensor) -> Tensor | None:
        """π_ref(σ)/p(σ) when the correction is on and the histogram is in use; None otherwise."""
        if not self.importance_correction or self.density is None:
            return None
        if self.pending_sum.device != sigma.device:
            self.to(sigma.device)
        draws = self.draws(sigma.detach())
        # π_ref is zero outside the support (and at NaN), where the ratio is 0 whatever p: p's own zero there
        # is not needed
        ratio = draws["reference"] / self.density.segment_value(draws["u"]).clamp(min=1e-300)
        return ratio.to(sigma.dtype)

    def hyperparameters(self) -> dict[str, Any]:
        return super().hyperparameters() | {"importance_correction": self.importance_correction}
