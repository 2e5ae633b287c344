"""InfoNoise end to end: an MLP denoiser trained in-process learns the data's exact information profile
(minutes on 2 cores, so not in the unit tier)."""

import pytest
import torch
from torch import nn

from suite.noise.calibration import ANALYTIC_CASES, SIGMA_MAX, SIGMA_MIN
from suite.noise.infonoise import InfoNoise
from suite.noise.weighting import EDMWeight
from suite.run.diffusion import EDMDenoiser


@pytest.mark.timeout(300)
def test_end_to_end_mlp_denoiser_learns_the_profile():
    """A small MLP denoiser trained on the 2-D mixture with InfoNoise sampling: ρ̂ within TV 0.1.

    The mixture is continuous, so the onset rule finds no pivot; as the paper does for continuous images,
    the gate pivot is pinned (c = 0.05, below the components' scales). Without it the learned loss, far
    from Bayes-optimal at the smallest σ (m̂/MMSE ≈ 10–50 at σ_min after 1500 steps), inflates m̂/σ² there
    and TV rises to ≈ 0.5 — the failure mode the gate exists for.
    """
    torch.manual_seed(0)
    spec = ANALYTIC_CASES["mixture_2d"]
    weight = EDMWeight(spec.sigma_data)
    sampler = InfoNoise(SIGMA_MIN, SIGMA_MAX, weight=weight, warmup_steps=300, refresh_every=50, gate_c=0.05)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                nn.Linear(3, 64),
                nn.SiLU(),
                nn.Linear(64, 64),
                nn.SiLU(),
                nn.Linear(64, 64),
                nn.SiLU(),
                nn.Linear(64, 2),
            )

        def forward(self, x, noise_labels, class_labels=None):
            return self.body(torch.cat([x, noise_labels[:, None]], dim=1))

    model = EDMDenoiser(MLP(), spec.sigma_data)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(1)
    for step in range(1500):
        x0 = spec.data.sample(256, gen).float()
        sigma = sampler.sample(256, gen)
        noise = torch.randn(x0.shape, generator=gen)
        err = (model(x0 + sigma[:, None] * noise, sigma) - x0).square().sum(1)
        opt.zero_grad()
        (weight(sigma) * err).mean().backward()
        opt.step()
        if step == 1125:
            for group in opt.param_groups:
                group["lr"] = 5e-4
        sampler.observe(sigma, err.detach())
    learned = sampler.profile()
    exact = spec.mmse(learned["u"].exp())
    sigma = learned["u"].exp()
    rho = exact / sigma**2 * (1 / (1 + (sampler.pivot / sigma) ** 3))
    rho = rho / torch.trapezoid(rho, learned["u"])
    tv = 0.5 * torch.trapezoid((learned["rho"] - rho).abs(), learned["u"]).item()
    assert tv <= 0.1, tv
