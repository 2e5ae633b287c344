"""The metric registry: quality numbers computed from decoded samples against a task's reference split.

A metric is a ``Metric`` subclass decorated with ``@METRICS.register("name")`` in a module that its package
declares under the entry-point group ``infonoise_suite.metrics``, one entry per name (``suite.registry``):
the modality libraries' metrics and a third-party package's alike, so the core never imports a modality
library and a lookup imports only the module that declares the name. A task lists the metrics it is scored
by in its config (``metrics: {name: {options}}``; ``suite.task.Task.metric_options`` chooses between
that set and a labelled ``fallback_metrics`` set). Each metric says which published table its number
joins, if any (``INFONOISE_TABLE`` for the paper's metrics with their real featurisers), and which metric it
stands in for, if any (:class:`MetricSpec`); a task's own metric does neither.

Before a run starts, a metric says what it lacks on this machine (``Metric.problems``: weights, checkpoints,
models, from file names and caches without loading them), as a task reports its data problems, so the
preflight asks the configured metrics and a task falls back to its ``fallback_metrics`` on its stand-in
permission. A metric names the task config keys it takes as option defaults (``Metric.task_keys``, e.g. a
data folder holding its checkpoint), and the parts of it that ``suite bench eval`` times beside its whole
call (``Metric.bench_parts``).

No config, study file or override can let a metric run code from a file: an option that would
(``ENVIRONMENT_SWITCHES``: ``trust_pickle``, reading a pickled checkpoint with
``torch.load`` with ``weights_only`` off) is refused wherever a metric's options are read
(:func:`switch_problems`), and the permission comes only from the environment variable the switch names
(``SUITE_TRUST_PICKLE=1``), which each run records in its ``run.json`` (``trust_pickle``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from suite.registry import Registry

SCALES = ("log", "logit", "linear")
TRUST_PICKLE_ENV = "SUITE_TRUST_PICKLE"
ENVIRONMENT_SWITCHES = {"trust_pickle": TRUST_PICKLE_ENV}  # option name -> the variable that alone sets it


def pickle_trusted() -> bool:
    """Whether this process may read pickled checkpoints (``torch.load`` with ``weights_only`` off): only when
    ``$SUITE_TRUST_PICKLE`` is ``1``."""
    return os.environ.get(TRUST_PICKLE_ENV) == "1"


def switch_problems(where: str, options: Mapping[str, Any] | None) -> list[str]:
    """The options among ``options`` (a metric's, at the config key ``where``) that only the environment
    may set (``ENVIRONMENT_SWITCHES``), one line each saying how to allow what they ask for."""
    return [
        f"{where}.{key}={options[key]!r}: a config, study file or override cannot allow a metric to run code "
        f"from a file; drop {where}.{key}, and to read a pickled checkpoint you trust run the command with "
        f"{variable}=1 in its environment (each run records it in run.json)"
        for key, variable in ENVIRONMENT_SWITCHES.items()
        if key in (options or {})
    ]


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
    ``scale`` is the scale its comparisons are computed on (``suite.report.statistics``): ``log`` for
    positive, right-skewed values (FID, Sei-FID, Fréchet distances, SP-MSE: geometric means and ratios of
    them),
    ``logit`` for values bounded in (0, 1) (MAUVE), ``linear`` for the rest; the number is reported back in
    its own units either way. A spec that leaves it None is compared on the scale
    ``suite.report.time_to_target.scale_of`` gives its name (MAUVE: logit; otherwise linear).
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

    ``task_keys`` names the task config keys whose values are the defaults of options of the same name
    (``root``: the task's data folder, where a metric may find its checkpoint); a key the task config does
    not set is left out.

    ``scores_sampler`` says whether the metric scores the run's training-noise sampler
    (``EvalInputs.sampler``) rather than the network or its samples: such a metric has no value for a
    network scored without a run's sampler (the null network of ``suite eval --null``).
    """

    reads: ClassVar[str] = "reference"
    task_keys: ClassVar[tuple[str, ...]] = ()
    scores_sampler: ClassVar[bool] = False

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """What this metric, configured with ``options``, lacks on this machine before a run starts
        (weights, checkpoints, models), one line each naming what to download and where to put it; read
        from file names and caches, without loading anything. None by default."""
        return []

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

    def for_task(self, task: object) -> None:
        """Read what this metric needs from the task that built it, beyond its options (a ground-truth
        metric: the task's distribution and σ range). Every task calls it on each metric it builds; by
        default a metric needs nothing more."""
        return None

    def bench_parts(self) -> dict[str, Callable[[], dict[str, float]]]:
        """Parts of this metric that ``suite bench eval`` times beside its whole call: the row's label →
        a function that runs the part once and returns its ``seconds``, ``n`` (items processed) and
        ``value``; a label that several metrics give is timed once. None by default."""
        return {}


def metric_problems(configured: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The problems of the configured metrics (name → options), each line once: several metrics that read
    one file (a checkpoint) say so once."""
    found: dict[str, None] = {}
    for name, options in configured.items():
        found.update(dict.fromkeys(METRICS.get(name).problems(options)))
    return list(found)


METRICS: Registry[Metric] = Registry("metric", "infonoise_suite.metrics")
