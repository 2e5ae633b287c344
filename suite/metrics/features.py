"""Metrics as a featuriser × a distance: the featuriser registry and the Fréchet metric built on it.

A featuriser maps a task's typed samples (what ``Task.decode`` gives) to one feature matrix [n, d] per layer
it offers; it is a :class:`Featurizer` subclass registered with ``@FEATURIZERS.register("name")`` in a
module that its package declares under the entry-point group ``infonoise_suite.featurizers``
(``suite.registry``; ``suite list`` shows them all). Registered here: ``identity`` (the samples themselves,
flattened); the DNA and text libraries add Sei's and the language models' features.

The distance of :class:`FrechetMetric` is the exact Fréchet distance of ``suite.metrics.frechet`` (Heusel
et al. 2017's FD, computed in sample space when the features outnumber the samples). A task whose metric is
a Fréchet distance in some featuriser's features configures it instead of writing a module::

    metrics:
      frechet: {featurizer: identity}          # recorded as fd-identity, a task's own metric

Every layer the featuriser offers is scored and recorded (``fd_<layer>``), the configured ``layer`` (default:
the featuriser's first) being the row's value, and each beside its real-vs-real floor (``floor_<layer>``):
the distance between two disjoint halves of the reference set (a fixed random split, seed 0), computed once
per reference set, which gives the value a scale (a reference of fewer than 4 examples has no floor). The
floor compares half-size sets, so it sits above the floor of full-size sets. FID keeps torch-fidelity's
code path and MAUVE mauve-text's, each in its modality library.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.metrics.frechet import frechet_distance, time_frechet
from suite.registry import Registry

FLOOR_SEED = 0
MIN_HALF = 2
BENCH_N = 2_000  # samples per set in the Fréchet core that suite bench eval times


class Featurizer(ABC):
    """Typed samples → {layer: float feature matrix [n, d]}; ``options`` are the metric's other options."""

    layers: ClassVar[tuple[str, ...]]

    def __init__(self, options: Mapping[str, Any], device: torch.device) -> None:
        self.options = dict(options)
        self.device = torch.device(device)

    @abstractmethod
    def __call__(self, samples: Any) -> dict[str, np.ndarray]:
        """Features of ``samples`` at every layer of ``layers``."""


FEATURIZERS: Registry[Featurizer] = Registry("featuriser", "infonoise_suite.featurizers")


@FEATURIZERS.register("identity")
class Identity(Featurizer):
    """The samples themselves (a tensor or array [n, ...]), flattened to float64 rows [n, d]."""

    layers = ("samples",)

    def __call__(self, samples: Any) -> dict[str, np.ndarray]:
        array = torch.as_tensor(samples).detach().cpu().to(torch.float64)
        return {"samples": array.reshape(array.shape[0], -1).numpy()}


def content_key(samples: Any) -> str:
    """sha256 over a set of samples: base strings or texts one by one, anything else as a float64 array."""
    digest = hashlib.sha256()
    if isinstance(samples, (list, tuple)) and samples and isinstance(samples[0], str):
        for text in samples:
            digest.update(text.encode() + b"\0")
    else:
        array = torch.as_tensor(samples).detach().cpu().contiguous().numpy()
        digest.update(f"{array.dtype}:{array.shape}:".encode())
        digest.update(memoryview(np.ascontiguousarray(array)).cast("B"))
    return digest.hexdigest()


def disjoint_halves(n: int, seed: int = FLOOR_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves (⌊n/2⌋ rows each) of a fixed random permutation of range(n) (``seed``)."""
    if n < 2 * MIN_HALF:
        need = f"at least {2 * MIN_HALF} reference examples ({MIN_HALF} per half)"
        raise ValueError(f"a real-vs-real floor needs {need}, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    half = n // 2
    return np.sort(order[:half]), np.sort(order[half : 2 * half])


class FrechetMetric(Metric):
    """Exact Fréchet distance in a featuriser's features, at every layer, beside real-vs-real floors.

    Options: ``featurizer`` (a registered name; a subclass may fix it as ``featurizer_name``), ``layer``
    (the row's value; default the featuriser's first layer), and the featuriser's own options.
    ``bench_dim`` (a subclass's) is the feature dimension at which ``suite bench eval`` times the Fréchet
    core on two random sets of ``BENCH_N`` rows; None: no such part.
    """

    featurizer_name: ClassVar[str | None] = None
    bench_dim: ClassVar[int | None] = None

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        name = self.featurizer_name or self.options.get("featurizer")
        if name is None:
            raise ValueError(
                f"a Fréchet metric needs the option featurizer; valid: {', '.join(FEATURIZERS.names())}"
            )
        own = {k: v for k, v in self.options.items() if k not in ("featurizer", "layer")}
        self.featurizer_label = str(name)
        self.features = FEATURIZERS.get(str(name))(own, self.device)
        self.layer = str(self.options.get("layer", self.features.layers[0]))
        if self.layer not in self.features.layers:
            raise ValueError(f"unknown {name} layer {self.layer!r}; valid: {', '.join(self.features.layers)}")
        self._floors: dict[str, dict[str, float]] = {}

    @property
    def spec(self) -> MetricSpec:
        label = f"Fréchet distance ({self.featurizer_label} features, layer {self.layer})"
        return MetricSpec(f"fd-{self.featurizer_label}", higher_is_better=False, label=label, scale="log")

    def bench_parts(self) -> dict[str, Callable[[], dict[str, float]]]:
        """The Fréchet core at ``bench_dim`` features, when the subclass sets it."""
        if self.bench_dim is None:
            return {}
        d = self.bench_dim
        return {
            f"Fréchet core (d={d}, n={BENCH_N})": lambda: time_frechet(d=d, n=BENCH_N, device=self.device)
        }

    def floors(self, reference: Any) -> dict[str, float]:
        """{layer: FD between the features of two disjoint halves of ``reference``}, memoised by content."""
        key = content_key(reference)
        if key not in self._floors:
            features = self.features(reference)
            first, second = disjoint_halves(len(reference))
            self._floors[key] = {
                layer: frechet_distance(features[layer][first], features[layer][second], device=self.device)
                for layer in self.features.layers
            }
        return self._floors[key]

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        generated = self.features(inputs.generated)
        reference = self.features(inputs.reference)
        layers = self.features.layers
        distances = {
            layer: frechet_distance(generated[layer], reference[layer], device=self.device)
            for layer in layers
        }
        result = {
            "value": distances[self.layer],
            **{f"fd_{layer}": distances[layer] for layer in layers},
            "feature_dim": float(generated[self.layer].shape[1]),
            "n_generated": float(len(inputs.generated)),
            "n_reference": float(len(inputs.reference)),
        }
        if len(inputs.reference) < 2 * MIN_HALF:  # each half needs a covariance: no floor to record
            return result
        floors = self.floors(inputs.reference)
        return {
            **result,
            **{f"floor_{layer}": floors[layer] for layer in layers},
            "n_floor": float(len(inputs.reference) // 2),
        }


METRICS.register("frechet")(FrechetMetric)
