"""Analog bits: 8-bit images as ±1 bit planes that a continuous diffusion model can denoise.

Chen, Zhang & Hinton 2022, "Analog Bits: Generating Discrete Data using Diffusion Models with
Self-Conditioning" (arXiv 2208.04202), Sec. 2: a discrete value is written as k binary digits, each
digit b ∈ {0, 1} is cast to the real number 2b − 1 ∈ {−1, +1}, and a Gaussian diffusion model is
trained on those reals; a sample is decoded by thresholding every analog bit at 0.

For an image with C channels of 8-bit values p ∈ {0..255} and bit depth k ≤ 8:

    q = ⌊p / 2^(8−k)⌋ ∈ {0..2^k − 1}           (keep the k most significant bits; q = p for k = 8)
    b_j = ⌊q / 2^(k−1−j)⌋ mod 2, j = 0..k−1     (most significant bit first)
    x = 2b − 1,  channels ordered (c, j): channel c·k + j holds bit j of colour channel c,

so the model space has C·k channels of the same height and width (24 for RGB at k = 8). Decoding:
b_j = 1[x > 0], q = Σ_j b_j 2^(k−1−j), and the uint8 image is round(q·255/(2^k − 1)), which maps
q = 0 to 0 and q = 2^k − 1 to 255 and is the identity at k = 8 (decode(encode(p)) = p exactly).
Plain binary code is used, as in the paper's main experiments (its Gray-code variant is not offered).
"""

from __future__ import annotations

import torch
from torch import Tensor

MAX_BITS = 8


def _check_bits(bits: int) -> int:
    if not 1 <= int(bits) <= MAX_BITS or int(bits) != bits:
        raise ValueError(f"bit depth must be an integer in 1..{MAX_BITS}, got {bits!r}")
    return int(bits)


def quantize(images: Tensor, bits: int = MAX_BITS) -> Tensor:
    """uint8 images [N, C, H, W] → the k-bit codes q = ⌊p / 2^(8−k)⌋ (uint8, same shape)."""
    bits = _check_bits(bits)
    if images.dtype != torch.uint8:
        raise ValueError(f"analog bits encode uint8 images, got {images.dtype}")
    return images >> (MAX_BITS - bits)


def encode(images: Tensor, bits: int = MAX_BITS) -> Tensor:
    """uint8 images [N, C, H, W] → analog bits [N, C·k, H, W] in {−1, +1} (float32)."""
    if images.dim() != 4:
        raise ValueError(f"expected images [N, C, H, W], got shape {tuple(images.shape)}")
    bits = _check_bits(bits)
    q = quantize(images, bits)
    n, c, h, w = q.shape
    planes = torch.stack([(q >> (bits - 1 - j)) & 1 for j in range(bits)], dim=2)  # [N, C, k, H, W]
    return planes.to(torch.float32).mul_(2).sub_(1).reshape(n, c * bits, h, w)


def decode(x: Tensor, bits: int = MAX_BITS) -> Tensor:
    """Analog bits [N, C·k, H, W] (any real values) → uint8 images [N, C, H, W] by thresholding at 0."""
    bits = _check_bits(bits)
    if x.dim() != 4 or x.shape[1] % bits:
        raise ValueError(f"expected [N, C·{bits}, H, W] analog bits, got shape {tuple(x.shape)}")
    n, ck, h, w = x.shape
    planes = (x > 0).reshape(n, ck // bits, bits, h, w)
    q = torch.zeros((n, ck // bits, h, w), dtype=torch.int32, device=x.device)
    for j in range(bits):
        q |= planes[:, :, j].to(torch.int32) << (bits - 1 - j)
    levels = 2**bits - 1
    return torch.div(q * 255 + levels // 2, levels, rounding_mode="floor").to(torch.uint8)
