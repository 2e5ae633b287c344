"""Shared behaviour of image tasks: model space, binarisation, the U-Net and FID.

Model space: continuous images map uint8 p to p/127.5 − 1 ∈ [−1, 1] (σ_data = 0.5 by EDM's convention);
binarised images map to {−1, +1} (σ_data = 1) and decode by sign. Binarisation: ``threshold`` sets
b = 1[p/255 > 0.5]; ``stochastic`` draws b ~ Bernoulli(p/255) once, from a fixed seed, so that every run
of every sampler sees the same binary data set (Salakhutdinov & Murray 2008 use such a draw for MNIST).

Quality is the Fréchet distance of decoded samples to the decoded training set through torch-fidelity;
it is called FID only with the standard Inception-v3 weights (grayscale is replicated to 3 channels).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from suite.metrics.fid import INCEPTION_EXTRACTOR, FrechetDistance
from suite.networks import UNet
from suite.task import MetricSpec, Task, TrainingData

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


class ImageTask(Task):
    """An image task: subclasses only say how to load the uint8 images from their real files."""

    modality = "image"

    @abstractmethod
    def load_images(self) -> tuple[np.ndarray, np.ndarray | None, str, bool]:
        """(uint8 images [N, H, W] or [N, C, H, W], labels or None, variant, stand_in)."""

    @property
    def binary(self) -> bool:
        return self.cfg.get("binarize") is not None

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (int(self.cfg["channels"]), int(self.cfg["resolution"]), int(self.cfg["resolution"]))

    def load_data(self) -> TrainingData:
        images, labels, variant, stand_in = self.load_images()
        if images.ndim == 3:
            images = images[:, None]
        if tuple(images.shape[1:]) != self.sample_shape:
            raise ValueError(
                f"{self.name}: loaded images of shape {images.shape[1:]}, config says {self.sample_shape}"
            )
        if self.binary:
            bits = torch.from_numpy(binarize(images, self.cfg["binarize"]))
            x = bits.to(torch.float32) * 2 - 1
            variant = f"{variant}, binarized ({self.cfg['binarize']})"
        else:
            x = torch.from_numpy(images).to(torch.float32) / 127.5 - 1
        y = None if labels is None or self.num_classes == 0 else torch.from_numpy(labels.astype(np.int64))
        return TrainingData(x=x, labels=y, variant=variant, stand_in=stand_in)

    def build_network(self, network_cfg: Mapping[str, Any]) -> nn.Module:
        channels = int(self.cfg["channels"])
        return UNet(
            img_resolution=int(self.cfg["resolution"]),
            in_channels=channels,
            out_channels=channels,
            label_dim=self.num_classes,
            **dict(network_cfg),
        )

    def decode(self, x: Tensor) -> Tensor:
        """Binary: sign → {0, 255}; continuous: clamp to [−1, 1] and round to uint8."""
        if self.binary:
            return torch.where(x > 0, 255, 0).to(torch.uint8)
        return ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)

    def metric(self, eval_cfg: Mapping[str, Any]) -> MetricSpec:
        extractor = eval_cfg.get("feature_extractor", INCEPTION_EXTRACTOR)
        real = extractor == INCEPTION_EXTRACTOR
        return MetricSpec(
            name="fid" if real else f"fd-{extractor}", higher_is_better=False, substitute=not real
        )

    def evaluate(self, generated: Tensor, reference: Tensor, eval_cfg: Mapping[str, Any]) -> float:
        fid = FrechetDistance(
            feature_extractor=eval_cfg.get("feature_extractor", INCEPTION_EXTRACTOR),
            weights_path=eval_cfg.get("weights_path"),
            batch_size=int(eval_cfg.get("batch_size", 64)),
            cuda=generated.is_cuda,
        )
        return fid(generated.cpu(), reference.cpu())
