"""A 1-D convolutional denoiser for one-hot DNA, the raw network F_θ of the DNA task.

Layout: a width-k input convolution over the sequence's four base channels (plus the conditioning
channels), then residual blocks

    h = Conv_k,d(SiLU(GN(x))),   h = Conv_1(dropout(SiLU(GN(h)·(1 + a) + b))),   out = (x + h)/√2,

with (a, b) = Linear(emb) the noise-level modulation and the dilation d of block i cycling through
``dilations`` (WaveNet's schedule, van den Oord et al. 2016, arXiv 1609.03499; DDSM's promoter network
likewise stacks dilated 9-wide convolutions over 1024 bp, Avdeyev et al. 2023); then GN → SiLU → 1×1
convolution to four channels, its weights scaled by 1e-5 like every block's last layer, so the network
starts near F = 0. The embedding is the sinusoidal embedding of the noise label
(``infonoise_modalities.image.networks``) through Linear → SiLU → Linear → SiLU.

Signal conditioning (DDSM feeds the CAGE track as an extra input channel): ``signal`` [N, 1, L] ≥ 0 enters
as two channels, log(1 + s) (CAGE counts span orders of magnitude) and a presence flag 1[s ≥ 0]. A negative
track is the null condition: both channels are 0, so classifier-free guidance's unconditional branch sees
no signal and cannot mistake it for a real track of zeros (``tasks/dna.py`` sets the null signal to −1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from infonoise_modalities.image.networks import PositionalEmbedding

_SKIP_SCALE = 1 / math.sqrt(2)
_SMALL_INIT = 1e-5
SIGNAL_INPUTS = 2  # log(1 + s) and the presence flag


def _group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with the largest group count g ≤ min(32, channels/4) that divides ``channels``."""
    groups = max(1, min(32, channels // 4))
    while channels % groups:
        groups -= 1
    return nn.GroupNorm(groups, channels, eps=1e-6)


def _small_init_(layer: nn.Conv1d) -> None:
    with torch.no_grad():
        layer.weight.mul_(_SMALL_INIT)
        if layer.bias is not None:
            layer.bias.zero_()


def dilated_conv1d(x: Tensor, conv: nn.Conv1d, dilation: int) -> Tensor:
    """``conv`` (an undilated, 'same'-padded odd-width convolution) applied at ``dilation``, exactly.

    Output position i of a dilated convolution reads only positions ≡ i (mod d), so the sequence is split
    into its d interleaved sub-sequences (zero-padded on the right to a multiple of d, which is the
    convolution's own zero padding), each convolved without dilation, and interleaved back. On CPUs this
    runs at the speed of the undilated convolution; PyTorch's dilated kernel is several times slower there.
    """
    if dilation == 1:
        return conv(x)
    n, channels, length = x.shape
    x = F.pad(x, (0, (-length) % dilation))
    m = x.shape[-1] // dilation
    folded = x.reshape(n, channels, m, dilation).permute(0, 3, 1, 2).reshape(n * dilation, channels, m)
    y = conv(folded)
    y = y.reshape(n, dilation, -1, m).permute(0, 2, 3, 1).reshape(n, -1, m * dilation)
    return y[..., :length]


def signal_inputs(signal: Tensor) -> Tensor:
    """[N, C, L] tracks → [N, 2C, L]: log(1 + s) and 1[s ≥ 0], both 0 where s < 0 (the null condition)."""
    present = (signal >= 0).to(torch.float32)
    return torch.cat([torch.log1p(signal.to(torch.float32).clamp(min=0)), present], dim=1)


class DilatedBlock(nn.Module):
    """The residual block of the module docstring at one dilation."""

    def __init__(self, channels: int, emb_channels: int, kernel_size: int, dilation: int, dropout: float):
        super().__init__()
        self.dilation = dilation
        self.norm0 = _group_norm(channels)
        self.conv0 = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)
        self.affine = nn.Linear(emb_channels, 2 * channels)
        self.norm1 = _group_norm(channels)
        self.dropout = nn.Dropout(dropout)
        self.conv1 = nn.Conv1d(channels, channels, kernel_size=1)
        _small_init_(self.conv1)

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        h = dilated_conv1d(F.silu(self.norm0(x)), self.conv0, self.dilation)
        scale, shift = self.affine(emb)[:, :, None].chunk(2, dim=1)
        h = F.silu(torch.addcmul(shift, self.norm1(h), scale + 1))
        return (x + self.conv1(self.dropout(h))) * _SKIP_SCALE


class SeqNet(nn.Module):
    """F(x, noise_labels, signal) → [N, 4, L] for one-hot sequences x [N, 4, L]; see the module docstring.

    ``signal_channels`` is the number of conditioning tracks (0: unconditional, ``signal`` must be None).
    The receptive field is 1 + (k − 1)·(1 + Σᵢ dᵢ) positions.
    """

    channels_last = False
    compilable = True

    def __init__(
        self,
        seq_len: int,
        in_channels: int = 4,
        out_channels: int = 4,
        channels: int = 128,
        num_blocks: int = 8,
        kernel_size: int = 9,
        dilations: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
        signal_channels: int = 1,
        dropout: float = 0.0,
        embedding_dim_mult: int = 4,
    ) -> None:
        super().__init__()
        if kernel_size % 2 == 0 or kernel_size < 1:
            raise ValueError(f"kernel_size must be odd and positive, got {kernel_size}")
        if num_blocks < 1 or not dilations or min(dilations) < 1:
            raise ValueError(f"need ≥ 1 block and positive dilations, got {num_blocks} blocks, {dilations}")
        self.seq_len = seq_len
        self.signal_channels = signal_channels
        self.dilations = [int(dilations[i % len(dilations)]) for i in range(num_blocks)]
        emb_channels = channels * embedding_dim_mult
        self.noise_embed = PositionalEmbedding(channels)
        self.embed_mlp = nn.Sequential(
            nn.Linear(channels, emb_channels), nn.SiLU(), nn.Linear(emb_channels, emb_channels), nn.SiLU()
        )
        self.conv_in = nn.Conv1d(
            in_channels + SIGNAL_INPUTS * signal_channels, channels, kernel_size, padding=kernel_size // 2
        )
        self.blocks = nn.ModuleList(
            DilatedBlock(channels, emb_channels, kernel_size, d, dropout) for d in self.dilations
        )
        self.norm_out = _group_norm(channels)
        self.conv_out = nn.Conv1d(channels, out_channels, kernel_size=1)
        _small_init_(self.conv_out)

    @property
    def receptive_field(self) -> int:
        k = self.conv_in.kernel_size[0]
        return 1 + (k - 1) * (1 + sum(self.dilations))

    def forward(self, x: Tensor, noise_labels: Tensor, signal: Tensor | None = None) -> Tensor:
        if self.signal_channels:
            if signal is None:
                raise ValueError(
                    "this network is signal-conditioned; pass signal [N, C, L] (negative = null)"
                )
            if signal.shape != (x.shape[0], self.signal_channels, x.shape[-1]):
                raise ValueError(
                    f"signal must be [N, {self.signal_channels}, L] = "
                    f"{[x.shape[0], self.signal_channels, x.shape[-1]]}, got {list(signal.shape)}"
                )
            x = torch.cat([x, signal_inputs(signal).to(x.dtype)], dim=1)
        elif signal is not None:
            raise ValueError("this network is unconditional (signal_channels = 0) but got a signal")
        emb = self.embed_mlp(self.noise_embed(noise_labels.reshape(-1)).to(x.dtype))
        h = self.conv_in(x)
        for block in self.blocks:
            h = block(h, emb)
        return self.conv_out(F.silu(self.norm_out(h)))
