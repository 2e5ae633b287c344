"""The variance-exploding Gaussian path x = x₀ + σ·ε with EDM's preconditioned denoiser.

Karras et al. 2022, "Elucidating the Design Space of Diffusion-Based Generative Models"
(arXiv 2206.00364), Eq. 7 and Table 1:

    D(x; σ) = c_skip(σ)·x + c_out(σ)·F(c_in(σ)·x; c_noise(σ)),
    c_skip = σ_d²/(σ² + σ_d²),  c_out = σ·σ_d/√(σ² + σ_d²),  c_in = 1/√(σ² + σ_d²),  c_noise = ¼·ln σ,

where σ_d is the data's standard deviation and F the raw network. The training objective is
E_{σ, x₀, ε}[w(σ)·‖D(x₀ + σε; σ) − x₀‖²] with the task's fixed weight w (``suite.objectives``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class EDMDenoiser(nn.Module):
    """D(x; σ) = c_skip·x + c_out·F(c_in·x; ¼ ln σ), the preconditioned wrapper of a raw network.

    The preconditioning is computed in float32; the raw network's output (bfloat16 under autocast) is
    cast to float32 before it is scaled, so D is always float32. ``memory_format`` is the layout its
    parameters are kept in and its inputs are given in (``torch.channels_last`` for the image U-Nets that
    ask for it, else ``torch.contiguous_format``).
    """

    def __init__(
        self, net: nn.Module, sigma_data: float, memory_format: torch.memory_format = torch.contiguous_format
    ) -> None:
        super().__init__()
        if not sigma_data > 0:
            raise ValueError(f"sigma_data must be positive, got {sigma_data}")
        self.net = net
        self.sigma_data = float(sigma_data)
        self.memory_format = memory_format

    def forward(self, x: Tensor, sigma: Tensor, **cond: Tensor) -> Tensor:
        """D(x; σ) for x of shape [N, ...] and σ of shape [N] (a single σ broadcasts to the batch); the
        conditioning mapping ``cond`` reaches the raw network as keyword arguments."""
        x = x.to(torch.float32)
        s = sigma.to(device=x.device, dtype=torch.float32).reshape(-1).broadcast_to(x.shape[:1])
        sd2 = self.sigma_data**2
        c_skip = sd2 / (s**2 + sd2)
        c_out = s * self.sigma_data / (s**2 + sd2).sqrt()
        c_in = 1 / (s**2 + sd2).sqrt()
        f_x = self.net(per_example(c_in, x), s.log() / 4, **cond)
        return per_example(c_skip, x) + per_example(c_out, f_x.to(torch.float32))


def per_example(c: Tensor, x: Tensor) -> Tensor:
    """c[i]·x[i] for c of shape [N] and x of shape [N, ...], whatever shape an example has: the batch axis is
    moved last, where c broadcasts, and back, so the product keeps x's memory layout."""
    return (x.movedim(0, -1) * c).movedim(-1, 0)
