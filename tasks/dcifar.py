"""Digitized CIFAR-10: the CIFAR-10 images as analog bits (Chen, Zhang & Hinton 2022, arXiv 2208.04202).

Each 8-bit channel value is written as ``task.bits`` binary digits (most significant first), each digit
b cast to 2b − 1 ∈ {−1, +1}, so a 32×32 RGB image is a 3·bits×32×32 array in model space (24×32×32 at
8 bits) diffused by the same Gaussian path as continuous images (σ_data = 1, the bits' standard
deviation). Samples decode by thresholding each analog bit at 0 and reassembling the uint8 value
(``infonoise_modalities.image.analog_bits``); FID is measured on the decoded images against the training
images decoded the same way (identical to the originals at 8 bits). ``docs/images.md`` records why this
encoding.

The data are read exactly as for ``cifar10`` (``infonoise_modalities.image.cifar10``). EDM's augmentation
pipe resamples pixel values, which would break the bit planes, so this task refuses ``augment_p`` > 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor, nn

from infonoise_modalities.image import analog_bits
from infonoise_modalities.image.cifar10 import CIFAR10Task
from suite.task import TASKS


@TASKS.register("dcifar")
class DigitizedCIFAR10(CIFAR10Task):
    """CIFAR-10 as analog bits: ``sample_shape`` is (3·bits, 32, 32); ``decode`` returns uint8 images."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.bits = int(cfg.get("bits", analog_bits.MAX_BITS))
        if not 1 <= self.bits <= analog_bits.MAX_BITS:
            raise ValueError(f"dcifar: task.bits must be an integer in 1..8, got {cfg.get('bits')!r}")
        if self.augment_p > 0:
            raise ValueError(
                "dcifar: augment_p must be 0; EDM's augmentation resamples pixel values, which breaks the "
                f"analog bit planes (got augment_p={self.augment_p})"
            )

    @property
    def sample_shape(self) -> tuple[int, ...]:
        resolution = int(self.cfg["resolution"])
        return (int(self.cfg["channels"]) * self.bits, resolution, resolution)

    @property
    def encoding(self) -> str:
        return f"analog bits: {self.bits} bits per 8-bit channel, most significant first, bit b -> 2b - 1"

    def encode(self, stored: Tensor) -> Tensor:
        """A batch of uint8 images → analog bits (the split holds the images, 1/32 of their bits' size)."""
        return analog_bits.encode(stored, self.bits)

    def decode(self, x: Tensor, model: nn.Module | None) -> Tensor:
        """Threshold every analog bit at 0 and reassemble uint8 images [N, 3, 32, 32]."""
        return analog_bits.decode(x, self.bits)
