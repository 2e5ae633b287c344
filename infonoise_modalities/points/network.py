"""The raw network F(x, c_noise) of the point tasks: an MLP on the point and a Fourier embedding of c_noise.

The noise label c_noise = ¼·ln σ (EDM's preconditioning, ``suite.run.diffusion``) enters as
[cos(2π f_j c_noise), sin(2π f_j c_noise)] for ``embedding`` / 2 fixed frequencies f_j = 2^(j/2), j = 0 … (a
geometric ladder, as the Fourier features of Tancik et al. 2020, NeurIPS), concatenated with x and passed
through ``depth`` SiLU layers of ``width`` units and a linear read-out to the point's dimension.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class PointMLP(nn.Module):
    """net(x, noise_labels) for points x [N, dim] (module docstring)."""

    channels_last = False
    compilable = True

    def __init__(self, dim: int, width: int, depth: int, embedding: int = 16) -> None:
        super().__init__()
        if dim < 1 or width < 1 or depth < 1 or embedding < 2 or embedding % 2:
            raise ValueError(
                f"PointMLP needs dim, width, depth >= 1 and an even embedding >= 2; got dim={dim}, "
                f"width={width}, depth={depth}, embedding={embedding}"
            )
        frequencies = 2.0 ** (torch.arange(embedding // 2, dtype=torch.float32) / 2)
        self.register_buffer("frequencies", 2 * math.pi * frequencies, persistent=False)
        layers: list[nn.Module] = [nn.Linear(dim + embedding, width), nn.SiLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.SiLU()]
        self.body = nn.Sequential(*layers, nn.Linear(width, dim))

    def forward(self, x: Tensor, noise_labels: Tensor) -> Tensor:
        phase = noise_labels.to(x.dtype)[:, None] * self.frequencies.to(x.dtype)
        return self.body(torch.cat([x, phase.cos(), phase.sin()], dim=1))
