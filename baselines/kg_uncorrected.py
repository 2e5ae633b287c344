"""KG without its importance correction: Kingma & Gao's adaptive histogram as a density that moves φ.

Kingma & Gao ("Understanding Diffusion Objectives as the ELBO with Simple Data Augmentation", NeurIPS 2023,
App. F) sample λ from p(λ) ∝ w(λ)·E[loss | λ] and divide each sample's loss by p(λ), so the objective (the
effective allocation over noise levels) is unchanged and only its variance drops. This variant keeps the
histogram rule, p ∝ E[w(σ)·ℓ] per ln σ bin, but trains with the plain weighted loss w(σ)·ℓ, so the
effective allocation becomes

    φ(u) = p(u)·w(σ) ∝ w(σ)²·E[ℓ | σ],

which moves toward where the weighted loss is large. The paper's KG numbers differ from EDM's by large
margins (bMNIST 0.38 vs 0.53, bFashion 1.22 vs 0.94), which the corrected variant (``kg``, in
expectation the EDM objective) cannot explain; docs/kg.md sets out both readings.
"""

from __future__ import annotations

from typing import Any

from baselines.kg import KingmaGaoAdaptive
from suite.noise.sampler import SAMPLERS
from suite.noise.weighting import LossWeight


@SAMPLERS.register("kg-uncorrected")
class KingmaGaoUncorrected(KingmaGaoAdaptive):
    """KG's histogram density ∝ the weighted loss per bin, without the 1/p correction (φ moves)."""

    def __init__(
        self,
        sigma_min: float,
        sigma_max: float,
        weight: LossWeight | None = None,
        bins: int = 100,
        **schedule: Any,
    ) -> None:
        """``schedule``: warmup_steps, refresh_every, decay, min_count, base, base_params (base class)."""
        if "importance_correction" in schedule:
            raise ValueError("kg-uncorrected never applies the importance correction; use sampler kg for it")
        super().__init__(sigma_min, sigma_max, weight, importance_correction=False, bins=bins, **schedule)
