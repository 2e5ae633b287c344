"""Non-leaking geometric augmentation with the augmentation parameters as conditioning.

Karras et al. 2022 ("Elucidating the Design Space of Diffusion-Based Generative Models", arXiv
2206.00364, Sec. 5 and Appendix F.2) train small data sets with the geometric part of the adaptive
augmentation pipeline of Karras et al. 2020 ("Training Generative Adversarial Networks with Limited Data",
arXiv 2006.06676, Appendix B.1–B.2) and pass the drawn parameters to the network as conditioning; when
sampling the conditioning is zero (no augmentation), so the augmentations do not leak into the samples.
EDM enables, with overall probability p (0.12 for CIFAR-10, 0.15 for FFHQ 64):

    x-flip      every image eligible (multiplier ∞), flipped with probability ½    label b_x ∈ {0, 1}
    y-flip      with probability p, then flipped with probability ½                label b_y ∈ {0, 1}
    scaling     isotropic s = 2^(0.2·z), z ~ N(0, 1)                                 label z
    rotation    θ ~ U(−π, π)                                                        label (cos θ − 1, sin θ)
    anisotropy  s = 2^(0.2·z) along direction r, 1/s across it, z ~ N(0, 1);
                r ~ U(−π, π) with probability ½, else r = 0                         label (z cos r, z sin r)
    translation t = 0.125·(W·z₀, H·z₁), z ~ N(0, 1)                                 label (z₀, z₁)

each drawn independently per image with probability min(1, multiplier·p); a transformation not drawn
contributes a zero label, so a non-augmented image has the all-zero 9-vector. The geometric transform
x_src = G⁻¹x_dst, G = T·A·R·S (scale first), about the image centre, is resampled as ADA describes: reflect
padding, 2× upsampling with a low-pass filter, bilinear sampling, low-pass filtering and 2× decimation.
The low-pass filter here is a Lanczos-3 windowed sinc cut off at half the Nyquist rate (ADA uses a
symlet-6 wavelet filter; both are near-ideal half-band filters). Images whose transform is the identity
are returned untouched (only the flips apply to them).

The training loop calls the pipe on the batch of clean model-space images before noise is added and
passes the labels to the network as ``augment_labels`` (``networks.UNet(augment_dim=9)``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

AUGMENT_DIM = 9
_LANCZOS_A = 3


def _lowpass(device: torch.device) -> Tensor:
    """Half-band Lanczos-3 filter h[m] ∝ sinc(m/2)·sinc(m/6), |m| < 6 (11 taps), with h[0] = ½, the odd
    taps summing to ½ and the even ones zero: upsampling with 2h keeps the original samples exactly."""
    m = torch.arange(-2 * _LANCZOS_A + 1, 2 * _LANCZOS_A, dtype=torch.float64)
    h = torch.sinc(m / 2) * torch.sinc(m / (2 * _LANCZOS_A))
    odd = m.remainder(2) == 1
    h = torch.where(odd, h / (2 * h[odd].sum()), torch.zeros_like(h))
    h[2 * _LANCZOS_A - 1] = 0.5
    return h.to(device=device, dtype=torch.float32)


def _rotation(theta: Tensor) -> Tensor:
    """[N, 3, 3] homogeneous rotations by θ."""
    c, s = theta.cos(), theta.sin()
    m = _identity(theta.shape[0], theta.device)
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1] = c, -s, s, c
    return m


def _scaling(sx: Tensor, sy: Tensor) -> Tensor:
    m = _identity(sx.shape[0], sx.device)
    m[:, 0, 0], m[:, 1, 1] = sx, sy
    return m


def _translation(tx: Tensor, ty: Tensor) -> Tensor:
    m = _identity(tx.shape[0], tx.device)
    m[:, 0, 2], m[:, 1, 2] = tx, ty
    return m


def _identity(n: int, device: torch.device) -> Tensor:
    return torch.eye(3, device=device).expand(n, 3, 3).clone()


class AugmentPipe:
    """EDM's augmentation pipe: ``AugmentPipe(p)(images, generator) -> (augmented, labels [N, 9])``.

    ``p`` ∈ [0, 1] is the overall probability; the per-transformation multipliers and strengths default
    to EDM's (module docstring). Images are float [N, C, H, W] (any channel count). Every random number
    comes from ``generator`` (on the images' device), always in the same amounts whatever is drawn, so a
    step's augmentation is fixed by the generator's state.
    """

    def __init__(
        self,
        p: float,
        xflip: float = math.inf,
        yflip: float = 1.0,
        scale: float = 1.0,
        rotate: float = 1.0,
        aniso: float = 1.0,
        translate: float = 1.0,
        scale_std: float = 0.2,
        aniso_std: float = 0.2,
        aniso_rotate_prob: float = 0.5,
        translate_std: float = 0.125,
    ) -> None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"augmentation probability p must lie in [0, 1], got {p}")
        self.p = float(p)
        multipliers = {
            "xflip": xflip,
            "yflip": yflip,
            "scale": scale,
            "rotate": rotate,
            "aniso": aniso,
            "translate": translate,
        }
        for name, value in multipliers.items():
            if value < 0:
                raise ValueError(f"probability multiplier {name} must be non-negative, got {value}")
        self.probability = {
            name: 0.0 if self.p == 0 or m == 0 else min(1.0, m * self.p) for name, m in multipliers.items()
        }
        self.scale_std = float(scale_std)
        self.aniso_std = float(aniso_std)
        self.aniso_rotate_prob = float(aniso_rotate_prob)
        self.translate_std = float(translate_std)

    def __repr__(self) -> str:
        return f"AugmentPipe(p={self.p})"

    def __call__(self, images: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """Augment ``images`` (float [N, C, H, W]); the labels [N, 9] say what was done to each."""
        if images.dim() != 4 or not images.is_floating_point():
            raise ValueError(f"expected float images [N, C, H, W], got {images.dtype} {tuple(images.shape)}")
        n, _, h, w = images.shape
        device = images.device

        def uniform(*shape: int) -> Tensor:
            return torch.rand((*shape, n), generator=generator, device=device)

        def normal(*shape: int) -> Tensor:
            return torch.randn((*shape, n), generator=generator, device=device)

        def drawn(name: str) -> Tensor:
            return uniform() < self.probability[name]

        zero = torch.zeros(n, device=device)
        flip_x = drawn("xflip") & (uniform() < 0.5)
        flip_y = drawn("yflip") & (uniform() < 0.5)
        z_scale = torch.where(drawn("scale"), normal(), zero)
        theta = torch.where(drawn("rotate"), (uniform() * 2 - 1) * math.pi, zero)
        z_aniso = torch.where(drawn("aniso"), normal(), zero)
        r_aniso = torch.where(uniform() < self.aniso_rotate_prob, (uniform() * 2 - 1) * math.pi, zero)
        r_aniso = torch.where(z_aniso != 0, r_aniso, zero)
        z_shift = torch.where(drawn("translate"), normal(2), torch.zeros(2, n, device=device))

        out = torch.where(flip_x[:, None, None, None], images.flip(3), images)
        out = torch.where(flip_y[:, None, None, None], out.flip(2), out)

        s = torch.exp2(z_scale * self.scale_std)
        a = torch.exp2(z_aniso * self.aniso_std)
        forward = (
            _translation(z_shift[0] * self.translate_std * w, z_shift[1] * self.translate_std * h)
            @ _rotation(r_aniso)
            @ _scaling(a, 1 / a)
            @ _rotation(-r_aniso)
            @ _rotation(theta)
            @ _scaling(s, s)
        )
        moved = (z_scale != 0) | (theta != 0) | (z_aniso != 0) | (z_shift != 0).any(0)
        if moved.any():
            index = moved.nonzero().squeeze(1)
            warped = _warp(out[index], torch.linalg.inv(forward[index]))
            out = out.index_copy(0, index, warped.to(out.dtype))

        labels = torch.stack(
            [
                flip_x.to(torch.float32),
                flip_y.to(torch.float32),
                z_scale,
                theta.cos() - 1,
                theta.sin(),
                z_aniso * r_aniso.cos(),
                z_aniso * r_aniso.sin(),
                z_shift[0],
                z_shift[1],
            ],
            dim=1,
        )
        return out, labels


def _warp(images: Tensor, inverse: Tensor) -> Tensor:
    """Resample images [N, C, H, W] at x_src = inverse·x_dst (pixel units about the centre).

    Continuous coordinates put pixel i at u = i. After reflect padding by (mx, my) pixels the image is
    upsampled 2× (zero insertion, then the half-band filter with gain 2; sample m sits at u = m/2), the
    high-resolution output grid (spacing ½, extended by the filter's half-length) is sampled bilinearly
    at the transformed coordinates, then filtered and decimated back to pixel spacing.
    """
    n, c, h, w = images.shape
    device = images.device
    x = images.to(torch.float32)
    taps = _lowpass(device)
    half = (taps.numel() - 1) // 2  # in high-resolution samples
    centre = torch.tensor([(w - 1) / 2, (h - 1) / 2], device=device)

    # Output positions, relative to the centre, of the high-resolution grid's corners.
    reach = torch.tensor([(w - 1) / 2 + half / 2, (h - 1) / 2 + half / 2], device=device)
    corners = torch.tensor([[-1, -1], [1, -1], [1, 1], [-1, 1]], device=device, dtype=torch.float32) * reach
    corners = torch.cat([corners, torch.ones(4, 1, device=device)], dim=1)  # [4, 3]
    sources = (inverse @ corners.T)[:, :2, :]  # [n, 2, 4]
    need = (sources.abs().amax(dim=(0, 2)) - centre).clamp(min=0) + half / 2 + 1
    mx = int(min(math.ceil(need[0].item()), w - 1))
    my = int(min(math.ceil(need[1].item()), h - 1))
    x = F.pad(x, (mx, mx, my, my), mode="reflect")

    x = _upsample2(x, taps * 2)
    up_h, up_w = x.shape[-2:]

    # High-resolution output grid: u' = m'/2 for m' = −half .. 2(W−1)+half, likewise in y.
    gx = torch.arange(-half, 2 * (w - 1) + half + 1, device=device, dtype=torch.float32) / 2 - centre[0]
    gy = torch.arange(-half, 2 * (h - 1) + half + 1, device=device, dtype=torch.float32) / 2 - centre[1]
    yy, xx = torch.meshgrid(gy, gx, indexing="ij")
    points = torch.stack([xx, yy, torch.ones_like(xx)], dim=-1).reshape(-1, 3)  # [P, 3]
    src = (inverse @ points.T)[:, :2, :]  # [n, 2, P], pixel units about the centre
    # Source pixel u → padded index u + pad → upsampled index 2(u + pad) → align_corners=True coordinate.
    sx = (src[:, 0] + centre[0] + mx) * 2 / (up_w - 1) * 2 - 1
    sy = (src[:, 1] + centre[1] + my) * 2 / (up_h - 1) * 2 - 1
    grid = torch.stack([sx, sy], dim=-1).reshape(n, gy.numel(), gx.numel(), 2)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True)

    return _downsample2(x, taps)


def _upsample2(x: Tensor, taps: Tensor) -> Tensor:
    """Zero insertion to 2L−1 samples per axis, then the separable filter ``taps`` (same size output)."""
    n, c, h, w = x.shape
    up = x.new_zeros(n, c, 2 * h - 1, 2 * w - 1)
    up[:, :, ::2, ::2] = x
    return _filter(up, taps, stride=1)


def _downsample2(x: Tensor, taps: Tensor) -> Tensor:
    """The separable filter ``taps`` without padding, keeping every second sample of each axis."""
    return _filter(x, taps, stride=2, pad=False)


def _filter(x: Tensor, taps: Tensor, stride: int, pad: bool = True) -> Tensor:
    n, c, h, w = x.shape
    k = taps.numel()
    padding = (k - 1) // 2 if pad else 0
    kernel_x = taps.flip(0).reshape(1, 1, 1, k).expand(c, 1, 1, k)
    kernel_y = taps.flip(0).reshape(1, 1, k, 1).expand(c, 1, k, 1)
    x = F.conv2d(x, kernel_x, stride=(1, stride), padding=(0, padding), groups=c)
    return F.conv2d(x, kernel_y, stride=(stride, 1), padding=(padding, 0), groups=c)
