"""The task interface: what a benchmark task supplies to the runner, whatever its modality.

A task owns its data (loaded from the real on-disk format), the raw network for its modality, how model
outputs decode to the evaluation format (uint8 images, base sequences, token text), and its quality
metric. Everything else — the diffusion path, loss weight, noise sampler, optimiser, schedule — belongs
to the runner, so the comparison between samplers changes nothing but π(σ).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from torch import Tensor, nn

from suite.registry import Registry

TASKS: Registry[Task] = Registry("task", packages=("tasks",), entry_point_group="infonoise_suite.tasks")


@dataclass(frozen=True)
class TrainingData:
    """A task's training set in model space, with provenance for the records.

    ``variant`` names exactly what was loaded (e.g. "Fashion-MNIST train, 60000 images, IDX from
    /usr/share/datasets/fashion-mnist"); ``stand_in`` is true when it is not the task's full data set,
    and such records are never mixed with full-data records.
    """

    x: Tensor
    labels: Tensor | None
    variant: str
    stand_in: bool


@dataclass(frozen=True)
class MetricSpec:
    """How a task's quality number is named and read."""

    name: str
    higher_is_better: bool
    substitute: bool


class Task(ABC):
    """Base of task plugins; ``cfg`` is the task's config group (``suite/conf/task/<name>.yaml``)."""

    name: ClassVar[str]
    modality: ClassVar[str]

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = cfg

    @property
    def num_classes(self) -> int:
        """Number of classes for class-conditional training; 0 for unconditional tasks."""
        return int(self.cfg.get("num_classes", 0))

    @abstractmethod
    def load_data(self) -> TrainingData:
        """The training set, in model space (what the diffusion path corrupts)."""

    @property
    @abstractmethod
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one example in model space."""

    @abstractmethod
    def build_network(self, network_cfg: Mapping[str, Any]) -> nn.Module:
        """The raw network net(x, noise_labels, class_labels) for this modality, sized by the budget."""

    @abstractmethod
    def decode(self, x: Tensor) -> Tensor:
        """Model-space samples → the evaluation format."""

    @abstractmethod
    def metric(self, eval_cfg: Mapping[str, Any]) -> MetricSpec:
        """Name and direction of the quality metric this evaluation config measures."""

    @abstractmethod
    def evaluate(self, generated: Tensor, reference: Tensor, eval_cfg: Mapping[str, Any]) -> float:
        """Quality of decoded ``generated`` samples against decoded ``reference`` examples."""
