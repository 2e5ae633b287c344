"""The metric registry: quality numbers computed from decoded samples against a task's reference split.

A metric is one module of ``suite/metrics/``, a modality's metrics module
(``infonoise_modalities.text.mauve``, ``infonoise_modalities.points.metrics``; imported by name on the first
lookup, as the task plugins are, so the core never imports a modality library), or a module of a third-party
package, through the entry-point group ``infonoise_suite.metrics``, that decorates a ``Metric`` subclass
with ``@METRICS.register("name")``; a task lists the metrics it is scored by in its config (``metrics:
{name: {options}}``). Each metric says which published table its number joins, if any (``INFONOISE_TABLE``
for the paper's metrics with their real featurisers), and which metric it stands in for, if any
(:class:`MetricSpec`); a task's own metric does neither.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from suite.registry import Registry

SCALES = ("log", "logit", "linear")
INFONOISE_TABLE = "InfoNoise (Raya et al., arXiv 2602.18647), results/paper/infonoise_table.csv"


@dataclass(frozen=True)
class MetricSpec:
    """How a quality number is named, read and labelled.

    ``published`` names the published table whose values this number joins (the metric with its real
    featuriser or weights, e.g. FID with Inception-v3), ``substitutes`` the metric this number stands in
    for (e.g. a Fréchet distance in other features for FID); a task's own metric has neither.
    ``best_of_ranges`` says whether the final point may report the best of several generation-seed ranges
    (EDM's FID convention, ``budget.eval.final_ranges``); every other metric is scored on one range, since
    the minimum over ranges biases a value that was not defined that way (Sei-FID, MAUVE).
    ``scale`` is the scale its comparisons are computed on (``suite.statistics``): ``log`` for positive,
    right-skewed values (FID, Sei-FID, Fréchet distances, SP-MSE: geometric means and ratios of them),
    ``logit`` for values bounded in (0, 1) (MAUVE), ``linear`` for the rest; the number is reported back in
    its own units either way. A spec that leaves it None is compared on the scale ``suite.table.scale_of``
    gives its name (MAUVE: logit; otherwise linear).
    """

    name: str
    higher_is_better: bool
    label: str
    published: str | None = None
    substitutes: str | None = None
    best_of_ranges: bool = False
    scale: str | None = None

    def __post_init__(self) -> None:
        if self.scale is not None and self.scale not in SCALES:
            raise ValueError(f"metric {self.name!r}: scale={self.scale!r}; valid: {', '.join(SCALES)}")


@dataclass(frozen=True)
class EvalInputs:
    """What a metric compares: decoded ``generated`` samples, decoded ``reference`` examples, and
    ``matched``, the decoded reference examples whose conditioning produced ``generated`` (row-aligned;
    None for unconditional tasks). ``model`` is the denoiser D(x; σ) that generated them and ``sampler``
    the run's training-noise sampler at this point (None where the caller has none): a metric of a task
    whose optimal denoiser is known scores the network and the learned π themselves."""

    generated: Any
    reference: Any
    matched: Any | None = None
    model: Any | None = None
    sampler: Any | None = None


class Metric(ABC):
    """A quality metric; ``options`` is its entry in the task config's ``metrics`` mapping.

    ``reads`` says which real examples the metric compares with, so that the evaluator decodes only what
    some metric reads and records how many real examples each row compared: ``"reference"`` (the reference
    set, ``EvalInputs.reference``), ``"matched"`` (the real examples of the generated samples' conditions,
    ``EvalInputs.matched``, for a conditional task; the reference set for an unconditional one) or
    ``"generated"`` (none: the generated samples alone).
    """

    reads: ClassVar[str] = "reference"

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        self.options = dict(options)
        self.device = torch.device(device)
        self.cache_dir = Path(cache_dir)

    @property
    @abstractmethod
    def spec(self) -> MetricSpec:
        """Name, direction and label of the number this metric returns."""

    @abstractmethod
    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        """{"value": the number, plus optional extras such as "std" or "n_seeds"}."""


METRICS: Registry[Metric] = Registry(
    "metric",
    packages=("suite.metrics", "infonoise_modalities.text.mauve", "infonoise_modalities.points.metrics"),
    entry_point_group="infonoise_suite.metrics",
)
