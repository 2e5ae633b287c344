"""Shared behaviour of image tasks: model space, binarisation, the U-Net, class conditioning and FID.

Model space: continuous images map uint8 p to p/127.5 − 1 ∈ [−1, 1] (σ_data = 0.5 by EDM's convention);
binarised images map to {−1, +1} (σ_data = 1) and decode by sign. Binarisation: ``threshold`` sets
b = 1[p/255 > 0.5]; ``stochastic`` draws b ~ Bernoulli(p/255) once, from a fixed seed, so that every run
of every sampler sees the same binary data set (Salakhutdinov & Murray 2008 use such a draw for MNIST).

Class-conditional tasks (``num_classes`` > 0) condition on ``class_labels``, one-hot float rows; the
all-zero row is the null label (the U-Net's label embedding is bias-free). The reference split of an image
task is its training set: FID is measured against training-set statistics, as EDM does.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from infonoise_modalities.image.augment import AUGMENT_DIM, AugmentPipe
from infonoise_modalities.image.networks import EDM_DDPMPP, UNet
from suite.task import Cond, Task, TaskData, TensorSplit, content_fingerprint

BINARIZATIONS = ("threshold", "stochastic")
BINARIZATION_SEED = 20260220


def binarize(images: np.ndarray, method: str) -> np.ndarray:
    """uint8 images → {0, 1} uint8 by ``threshold`` (p/255 > 0.5) or a fixed-seed ``stochastic`` draw."""
    if method == "threshold":
        return (images > 127).astype(np.uint8)
    if method == "stochastic":
        rng = np.random.default_rng(BINARIZATION_SEED)
        return (rng.random(images.shape) < images / 255.0).astype(np.uint8)
    raise ValueError(f"unknown binarization {method!r}; valid: {', '.join(BINARIZATIONS)}")


@dataclass(frozen=True)
class Images:
    """uint8 images [N, H, W] or [N, C, H, W] as read from their files, with their provenance."""

    images: np.ndarray
    labels: np.ndarray | None
    variant: str
    stand_in: bool
    source: str


class ImageTask(Task):
    """An image task: subclasses say how to read the uint8 images from their real files."""

    modality = "image"
    model_space = "fixed"

    @abstractmethod
    def load_images(self) -> Images:
        """The training images as stored on disk."""

    @property
    def binary(self) -> bool:
        return self.cfg.get("binarize") is not None

    @property
    def num_classes(self) -> int:
        """Number of classes for class-conditional training; 0 for unconditional tasks."""
        return int(self.cfg.get("num_classes", 0))

    @property
    def conditional(self) -> bool:  # type: ignore[override]
        """Class-conditional exactly when the config's ``num_classes`` is positive."""
        return self.num_classes > 0

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (int(self.cfg["channels"]), int(self.cfg["resolution"]), int(self.cfg["resolution"]))

    def stored_images(self, images: np.ndarray) -> Tensor:
        """What the split holds, uint8 [N, C, H, W]: the pixels, or their {0, 1} bits when binarised."""
        if self.binary:
            return torch.from_numpy(binarize(images, self.cfg["binarize"]))
        return torch.from_numpy(np.ascontiguousarray(images))

    def encode(self, stored: Tensor) -> Tensor:
        """A batch of stored images → model space: {−1, +1} bits when binarised, else p/127.5 − 1."""
        if self.binary:
            return stored.to(torch.float32) * 2 - 1
        return stored.to(torch.float32) / 127.5 - 1

    def load(self) -> TaskData:
        read = self.load_images()
        images = read.images[:, None] if read.images.ndim == 3 else read.images
        side = int(self.cfg["resolution"])
        expected = (images.shape[1], side, side)
        if images.shape[2:] != expected[1:]:
            raise ValueError(
                f"{self.name}: loaded images of shape {images.shape[1:]}, config says {expected}"
            )
        variant = read.variant + (f", binarized ({self.cfg['binarize']})" if self.binary else "")
        cond = {}
        if self.num_classes:
            if read.labels is None:
                raise ValueError(f"{self.name} is class-conditional but {read.source} holds no labels")
            labels = torch.from_numpy(read.labels.astype(np.int64))
            cond["class_labels"] = nn.functional.one_hot(labels, self.num_classes).to(torch.float32)
        split = TensorSplit(self.stored_images(images), cond, encode=self.encode)
        fingerprint = content_fingerprint(images, *(() if read.labels is None else (read.labels,)))
        info = {"sigma_data": float(self.cfg["sigma_data"]), "encoding": self.encoding}
        return TaskData(split, split, variant, read.stand_in, fingerprint, read.source, info)

    @property
    def encoding(self) -> str:
        """How pixels become model-space values (recorded)."""
        if self.binary:
            return f"binarized ({self.cfg['binarize']}) to {{-1, +1}}"
        return "uint8 p -> p/127.5 - 1"

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        return UNet(
            img_resolution=int(self.cfg["resolution"]),
            in_channels=self.sample_shape[0],
            out_channels=self.sample_shape[0],
            label_dim=self.num_classes,
            **dict(preset),
        )

    def decode(self, x: Tensor, model: nn.Module | None) -> Tensor:
        """Binary: sign → {0, 255}; continuous: clamp to [−1, 1] and round to uint8."""
        if self.binary:
            return torch.where(x > 0, 255, 0).to(torch.uint8)
        return ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)


class EDMImageTask(ImageTask):
    """Natural-image tasks trained as EDM does: DDPM++ (EDM's layout, sized by the preset) and the
    non-leaking augmentation pipe with probability ``augment_p`` (0 disables it)."""

    @property
    def augment_p(self) -> float:
        return float(self.cfg.get("augment_p") or 0.0)

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        channels = self.sample_shape[0]
        return UNet(
            img_resolution=int(self.cfg["resolution"]),
            in_channels=channels,
            out_channels=channels,
            label_dim=self.num_classes,
            augment_dim=AUGMENT_DIM if self.augment_p > 0 else 0,
            **{**EDM_DDPMPP, **dict(preset)},
        )

    def augment(self, x0: Tensor, cond: Cond, generator: torch.Generator) -> tuple[Tensor, Cond]:
        """EDM's augmentation of the clean batch; the 9 parameters join ``cond`` as ``augment_labels``."""
        if self.augment_p <= 0:
            return x0, cond
        augmented, labels = AugmentPipe(self.augment_p)(x0, generator)
        return augmented, {**cond, "augment_labels": labels.to(x0.dtype)}
