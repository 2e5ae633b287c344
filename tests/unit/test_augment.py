"""EDM's non-leaking augmentation pipe: identity at p = 0, labels that describe what was done."""

from __future__ import annotations

import math

import pytest
import torch

from infonoise_modalities.image.augment import (
    AUGMENT_DIM,
    AugmentPipe,
    _lowpass,
    _rotation,
    _translation,
    _warp,
)


def smooth_images(n: int, size: int = 32) -> torch.Tensor:
    """Band-limited test images (sums of low-frequency sinusoids with per-image phases)."""
    yy, xx = torch.meshgrid(torch.arange(size * 1.0), torch.arange(size * 1.0), indexing="ij")
    phase = torch.arange(n * 1.0)[:, None, None, None]
    return torch.cat(
        [
            torch.sin(xx / 5 + phase) + torch.cos(yy / 7),
            torch.sin((xx + yy) / 6 - phase),
            torch.cos(xx / 4) * torch.sin(yy / 9 + phase),
        ],
        dim=1,
    )


def test_probability_zero_is_the_identity_with_zero_labels():
    images = torch.randn(8, 3, 16, 16)
    out, labels = AugmentPipe(0.0)(images, torch.Generator().manual_seed(0))
    assert torch.equal(out, images)
    assert labels.shape == (8, AUGMENT_DIM) and torch.equal(labels, torch.zeros(8, AUGMENT_DIM))


def test_images_without_augmentation_are_untouched_and_have_zero_labels():
    images = torch.randn(256, 3, 16, 16)
    out, labels = AugmentPipe(0.12)(images, torch.Generator().manual_seed(1))
    plain = (labels == 0).all(dim=1)
    assert 0 < plain.sum() < len(images)
    assert torch.equal(out[plain], images[plain])
    assert not torch.equal(out[~plain], images[~plain])


def test_x_flip_matches_its_label():
    images = torch.randn(64, 3, 8, 8)
    pipe = AugmentPipe(1.0, yflip=0, scale=0, rotate=0, aniso=0, translate=0)
    out, labels = pipe(images, torch.Generator().manual_seed(2))
    flipped = labels[:, 0] == 1
    assert 10 < flipped.sum() < 54  # every image eligible, each flipped with probability 1/2
    assert torch.equal(out[flipped], images[flipped].flip(3))
    assert torch.equal(out[~flipped], images[~flipped])
    assert torch.equal(labels[:, 1:], torch.zeros(64, AUGMENT_DIM - 1))


def test_x_flip_is_eligible_at_any_positive_p():
    pipe = AugmentPipe(0.01, yflip=0, scale=0, rotate=0, aniso=0, translate=0)
    _, labels = pipe(torch.randn(400, 1, 4, 4), torch.Generator().manual_seed(3))
    assert 150 < labels[:, 0].sum() < 250


def test_draws_follow_the_probability():
    n, p = 4000, 0.3
    _, labels = AugmentPipe(p)(torch.zeros(n, 1, 8, 8), torch.Generator().manual_seed(4))
    scaled = (labels[:, 2] != 0).float().mean().item()
    rotated = (labels[:, 4] != 0).float().mean().item()
    translated = (labels[:, 7] != 0).float().mean().item()
    tolerance = 4 * math.sqrt(p * (1 - p) / n)
    for rate in (scaled, rotated, translated):
        assert abs(rate - p) < tolerance
    assert abs(labels[:, 1].mean().item() - p / 2) < tolerance  # y-flip: drawn with p, flipped with 1/2


def test_same_generator_state_gives_the_same_augmentation():
    images = torch.randn(16, 3, 16, 16)
    a = AugmentPipe(0.5)(images, torch.Generator().manual_seed(5))
    b = AugmentPipe(0.5)(images, torch.Generator().manual_seed(5))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_rotation_label_undoes_the_rotation():
    images = smooth_images(6)
    pipe = AugmentPipe(1.0, xflip=0, yflip=0, scale=0, aniso=0, translate=0)
    out, labels = pipe(images, torch.Generator().manual_seed(6))
    theta = torch.atan2(labels[:, 4], labels[:, 3] + 1)
    assert (theta.abs() > 0).all()
    back = _warp(out, _rotation(theta))  # inverse of the inverse map: rotate by −θ
    yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    disc = ((xx - 15.5) ** 2 + (yy - 15.5) ** 2).sqrt() < 8
    assert (back - images)[..., disc].abs().max() < 0.05


def test_warp_translates_by_whole_pixels_in_the_interior():
    images = smooth_images(2)
    shift = _translation(torch.tensor([3.0, 3.0]), torch.tensor([-2.0, -2.0]))
    out = _warp(images, torch.linalg.inv(shift))
    # out(x, y) = in(x − 3, y + 2)
    torch.testing.assert_close(out[..., 4:26, 7:29], images[..., 6:28, 4:26], atol=2e-3, rtol=0)


def test_warp_identity_keeps_band_limited_interiors():
    images = smooth_images(2)
    out = _warp(images, torch.eye(3).expand(2, 3, 3))
    torch.testing.assert_close(out[..., 5:-5, 5:-5], images[..., 5:-5, 5:-5], atol=1e-3, rtol=0)


def test_lowpass_is_half_band():
    taps = _lowpass(torch.device("cpu"))
    assert taps.sum().item() == pytest.approx(1.0, abs=1e-6)
    assert taps[5].item() == 0.5
    assert torch.equal(taps, taps.flip(0))
    offsets = torch.arange(-5, 6)
    assert torch.all(taps[(offsets % 2 == 0) & (offsets != 0)] == 0)


def test_bad_probability_is_refused():
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\], got 1.5"):
        AugmentPipe(1.5)
    with pytest.raises(ValueError, match="float images"):
        AugmentPipe(0.1)(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), None)
