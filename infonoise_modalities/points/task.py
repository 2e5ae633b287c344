"""The base of the ground-truth point tasks: data drawn from a distribution whose optimal denoiser is known.

The data *are* the distribution (``distributions.build_distribution`` of the config's ``distribution``
mapping): ``load`` draws ``train_size`` training points from ``train_seed`` and ``reference_size`` reference
points from ``reference_seed`` (separate streams, so no reference point is a training point), float32 in
model space (sample shape (d,)); nothing is read from disk and nothing is a stand-in, so ``example_data``
writes no file and only sets the sizes. The fingerprint covers the distribution's parameters and both
draws. The network is ``network.PointMLP`` of the preset's ``width``, ``depth`` and ``embedding``; samples
decode to float32 points. Each exact metric reads the task's distribution and σ range
when the task builds it (``metrics.ExactMetric.for_task``), as every metric reads its task.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from infonoise_modalities.points.distributions import build_distribution
from infonoise_modalities.points.network import PointMLP
from suite.noise.analytic import GaussianMixtureData
from suite.task import Task, TaskData, TensorSplit, content_fingerprint


class PointTask(Task):
    """Points of a Gaussian mixture with a closed-form posterior mean."""

    modality = "points"
    conditional = False
    model_space = "fixed"

    @cached_property
    def distribution(self) -> GaussianMixtureData:
        return build_distribution(self.cfg["distribution"])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (self.distribution.dim,)

    def _draw(self, n: int, seed: int) -> Tensor:
        return self.distribution.sample(n, torch.Generator().manual_seed(seed)).to(torch.float32)

    def load(self) -> TaskData:
        cfg, data = self.cfg, self.distribution
        train = self._draw(int(cfg["train_size"]), int(cfg["train_seed"]))
        reference = self._draw(int(cfg["reference_size"]), int(cfg["reference_seed"]))
        fingerprint = content_fingerprint(data.means, data.stds, data.weights, train, reference)
        variant = (
            f"{len(train)} training and {len(reference)} reference draws (seeds {cfg['train_seed']}, "
            f"{cfg['reference_seed']}) of a {data.means.shape[0]}-component mixture in d = {data.dim}"
        )
        source = f"drawn from the distribution {dict(cfg['distribution'])}"
        info = {"sigma_data": float(cfg["sigma_data"]), "encoding": "points"}
        return TaskData(TensorSplit(train), TensorSplit(reference), variant, False, fingerprint, source, info)

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        """The data are drawn, not read: no file is written, only the sizes are set."""
        return {"train_size": n, "reference_size": n}

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        return PointMLP(
            self.distribution.dim,
            int(preset["width"]),
            int(preset["depth"]),
            int(preset.get("embedding", 16)),
        )

    def decode(self, x: Tensor, model: nn.Module | None) -> Tensor:
        return x.detach().to("cpu", torch.float32)
