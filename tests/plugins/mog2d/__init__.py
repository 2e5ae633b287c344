"""A 2-D mixture of Gaussians: a task plugin written from docs/tasks.md alone, with a metric of its own.

Data: points of a mixture of ``components`` isotropic Gaussians of standard deviation ``spread`` whose means
lie evenly on a circle of radius ``radius``, stored as ``points.npy`` (float32 [N, 2]) in ``task.root``;
``example_data`` writes such a file from a fixed seed. Without a root and with the stand-in permission, the
task draws ``stand_in_points`` points itself and marks them as a stand-in. Model space: the points (fixed;
sample shape (2,)). Network: an MLP of the preset's ``width`` and ``depth`` on the point and the noise label.
The training split is the reference split.

Metric ``energy-distance``: the energy distance of Székely & Rizzo (2013, J. Stat. Plan. Inference 143,
1249–1272) between generated points X and reference points Y, 2·E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖ over
all pairs of the two samples (the V-statistic); it is ≥ 0 and 0 when the two samples coincide. It joins no
published table and stands in for no other metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.task import TASKS, Task, TaskData, TensorSplit, content_fingerprint

FILE = "points.npy"


def mixture_points(n: int, components: int, radius: float, spread: float, seed: int) -> np.ndarray:
    """n points of the mixture (float32 [n, 2]), each from a uniformly chosen component."""
    rng = np.random.default_rng(seed)
    angle = 2 * math.pi * rng.integers(0, components, n) / components
    means = radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return (means + spread * rng.standard_normal((n, 2))).astype(np.float32)


class PointNet(nn.Module):
    """net(x, noise_labels): an MLP on [x, noise label] with SiLU activations."""

    channels_last = False
    compilable = True

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Linear(3, width), nn.SiLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.SiLU()]
        self.body = nn.Sequential(*layers, nn.Linear(width, 2))

    def forward(self, x: Tensor, noise_labels: Tensor) -> Tensor:
        return self.body(torch.cat([x, noise_labels[:, None].to(x.dtype)], dim=1))


@TASKS.register("mog2d")
class MixtureOfGaussians(Task):
    """2-D mixture of Gaussians on a circle (a test plugin)."""

    modality = "points"
    conditional = False
    model_space = "fixed"

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (2,)

    def load(self) -> TaskData:
        root = self.cfg.get("root")
        if root is not None:
            path = Path(str(root)) / FILE
            if not path.is_file():
                raise FileNotFoundError(f"task.root={root}: no {FILE} there; write one with example_data")
            points, stand_in, source = np.load(path), False, str(path)
        elif self.allow_stand_in:
            cfg = self.cfg
            points = mixture_points(
                int(cfg["stand_in_points"]), int(cfg["components"]), cfg["radius"], cfg["spread"], 0
            )
            stand_in, source = True, "drawn by the task (seed 0)"
        else:
            raise FileNotFoundError(
                f"mog2d: task.root is not set; pass task.root=<folder with {FILE}> or "
                "budget.allow_stand_in=true for points drawn by the task"
            )
        split = TensorSplit(torch.from_numpy(points))
        variant = f"{len(points)} points of a {self.cfg['components']}-component mixture"
        return TaskData(split, split, variant, stand_in, content_fingerprint(points), source)

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / FILE, mixture_points(n, components=8, radius=1.5, spread=0.1, seed=1))
        return {"root": str(folder)}

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        return PointNet(int(preset["width"]), int(preset["depth"]))

    def decode(self, x: Tensor, model: nn.Module | None) -> Tensor:
        return x.detach().to("cpu", torch.float32)


@METRICS.register("energy-distance")
class EnergyDistance(Metric):
    """Energy distance between generated and reference points (see the module docstring)."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec("energy-distance", higher_is_better=False, label="energy distance (2-D points)")

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        x = torch.as_tensor(inputs.generated, dtype=torch.float64)
        y = torch.as_tensor(inputs.reference, dtype=torch.float64)
        value = 2 * torch.cdist(x, y).mean() - torch.cdist(x, x).mean() - torch.cdist(y, y).mean()
        return {"value": float(value), "n": len(x)}
