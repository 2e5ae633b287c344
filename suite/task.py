"""The task contract: everything modality-specific that a benchmark task supplies to the runner.

A task owns its data splits (an indexable set yielding model-space x₀ and a conditioning mapping), its
model-space encoding and decoding (decode may use the model, e.g. nearest embedding, and returns typed
samples: uint8 images, base strings, texts), its network presets per budget size, its conditioning
(what classifier-free guidance drops and what the null condition is), its objective, and its metrics with
the reference split they compare against. Everything else — the diffusion path, loss weight, noise sampler,
optimiser, schedules — belongs to the runner, so a comparison between samplers changes nothing but π(σ).

Conditioning is a mapping of tensors whose first dimension is the batch; it reaches the raw network as
keyword arguments, ``net(x, noise_labels, **cond)`` (k-diffusion's convention), so class labels, signal
tracks and text prefixes need nothing from the runner. ``docs/tasks.md`` walks through writing a task.

Metrics come from the task config, one spelling for every task: ``metrics`` (name → options) is the set the
task is scored by, ``fallback_metrics`` an optional set of labelled substitutes, and
``use_fallback_metrics`` (``auto``, the default, ``true`` or ``false``) chooses between them: ``auto``
takes the fallback set when a metric of ``metrics`` reports what it lacks on this machine
(``Metric.problems``: weights, a checkpoint, a text model) and the run has the stand-in permission
(``allow_stand_in``). A metric's ``task_keys`` (e.g. ``root``) default its options of the same names.

The contract is declared, not discovered: a task class states its ``modality``, whether it is
``conditional`` (a class attribute, or a property where the config decides), its ``model_space`` (``fixed``
data, or ``learned``: the objective encodes examples through the network's own parameters, e.g. token
embeddings), and implements the abstract members (``sample_shape``, ``load``, ``example_data``,
``build_network``, ``decode``). ``TASKS.register`` checks all of it when the class is registered, as
torch-fidelity's registry checks a feature extractor when it is registered, and refuses the class with a
message naming each missing or invalid member and its valid choices.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from suite.registry import Registry

if TYPE_CHECKING:
    from suite.metrics import Metric
    from suite.noise.weighting import LossWeight
    from suite.objectives import Objective

Cond = dict[str, Tensor]


@dataclass(frozen=True)
class Batch:
    """Examples as the task's objective takes them (model space, or token ids for a learned embedding)
    and their conditioning mapping (empty for unconditional tasks)."""

    x0: Tensor
    cond: Cond = field(default_factory=dict)


class Split(ABC):
    """An indexable data set: a tensor, a memory map or a dataset."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of examples."""

    @abstractmethod
    def batch(self, indices: Tensor, device: torch.device) -> Batch:
        """The examples at ``indices`` (a 1-D long tensor), on ``device``."""

    def training_batch(
        self, indices: Tensor, device: torch.device, generator: torch.Generator, rows: slice, total: int
    ) -> Batch:
        """The examples at ``indices`` as a training step sees them: ``batch`` unless the split varies an
        example where it is gathered (DNA windows shifted within their flanks). Such a split draws from the
        step's ``generator`` for the global batch of ``total`` rows and keeps this rank's ``rows``, so that
        every rank draws what one process draws and a resumed run draws what an uninterrupted one did."""
        return self.batch(indices, device)


class TensorSplit(Split):
    """A split held in memory; copied to a device on first use and kept there.

    ``encode`` maps the gathered rows of ``x`` to model space on the device, so that a data set can be
    held in its compact stored form (uint8 images: 4× smaller than float32, 32× smaller than their
    float32 analog bits) and expanded one batch at a time.
    """

    def __init__(
        self, x: Tensor, cond: Cond | None = None, encode: Callable[[Tensor], Tensor] | None = None
    ) -> None:
        cond = dict(cond or {})
        for key, value in cond.items():
            if value.shape[0] != x.shape[0]:
                raise ValueError(f"condition {key!r} has {value.shape[0]} rows for {x.shape[0]} examples")
        self.x = x
        self.cond = cond
        self.encode = encode
        self._on: dict[torch.device, tuple[Tensor, Cond]] = {}

    def __len__(self) -> int:
        return self.x.shape[0]

    def batch(self, indices: Tensor, device: torch.device) -> Batch:
        device = torch.device(device)
        if device not in self._on:
            self._on[device] = (self.x.to(device), {k: v.to(device) for k, v in self.cond.items()})
        x, cond = self._on[device]
        indices = indices.to(device)
        rows = x[indices]
        return Batch(
            rows if self.encode is None else self.encode(rows), {k: v[indices] for k, v in cond.items()}
        )


@dataclass(frozen=True)
class TaskData:
    """A task's splits with their provenance.

    ``variant`` names exactly what was loaded; ``stand_in`` is true when it is not the task's real full
    data set (such records are never mixed with real-data records); ``fingerprint`` is a hash of the
    content as loaded — the comparison depends on it, not on where the files sit (``source``, recorded
    only); ``info`` holds recorded facts such as σ_data and the encoding; ``validation`` is the split that
    best-validation checkpoint selection scores (``suite.run.selection``), None where the task has none.
    """

    train: Split
    reference: Split
    variant: str
    stand_in: bool
    fingerprint: str
    source: str
    info: dict[str, Any] = field(default_factory=dict)
    validation: Split | None = None


def content_fingerprint(*parts: np.ndarray | Tensor | bytes | str) -> str:
    """SHA-256 (hex, 16 characters) over the dtype, shape and bytes of each array, or the bytes/text."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Tensor):
            part = part.detach().cpu().contiguous().numpy()
        if isinstance(part, np.ndarray):
            part = np.ascontiguousarray(part)
            digest.update(f"{part.dtype}:{part.shape}:".encode())
            digest.update(memoryview(part).cast("B"))
        elif isinstance(part, str):
            digest.update(part.encode())
        else:
            digest.update(part)
    return digest.hexdigest()[:16]


MODEL_SPACES = ("fixed", "learned")
MODALITY = re.compile(r"[a-z][a-z0-9_-]*")


class Task(ABC):
    """Base of task plugins; ``cfg`` is the task's resolved config group (``suite/conf/task/<name>.yaml``).

    Declared by every task class (``docs/tasks.md``): ``modality``, ``conditional``, ``model_space``.
    """

    name: ClassVar[str]
    modality: ClassVar[str]
    conditional: bool
    model_space: ClassVar[str]
    # where the classifier-free guidance scale of the task config comes from, for the table's caption
    guidance_source = "frozen in the task config"

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = cfg

    @property
    def allow_stand_in(self) -> bool:
        """Whether this run may load a stand-in where the real data are absent: the budget's
        ``allow_stand_in``, handed to every task as ``task.allow_stand_in`` (``suite/conf/config.yaml``)."""
        return bool(self.cfg.get("allow_stand_in", False))

    # -- data --------------------------------------------------------------------------------------
    @property
    @abstractmethod
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one example in model space (what the diffusion path adds noise to), for the run's
        network preset."""

    @abstractmethod
    def load(self) -> TaskData:
        """The training and reference splits, read from the task's real on-disk format."""

    @classmethod
    @abstractmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        """Write ``n`` examples in this task's real on-disk format into ``folder``; return the task-config
        overrides under which ``load`` reads them (the contract test trains on them, and ``--dry-run``'s
        cost estimate builds its example batch from them)."""

    def data_problems(self) -> list[str]:
        """Why ``load`` would fail here, one line per cause, found from file names and headers without
        loading the data (``suite run`` asks before any run starts, ``--dry-run`` included). A task that
        does not implement it returns none, and is checked when it loads."""
        return []

    @classmethod
    def prepare(cls, source: str | None, dest: str) -> None:
        """``suite data <task> [SOURCE] DEST``: download or convert the real data into ``dest``."""
        raise ValueError(f"task {cls.name!r} reads its files as they are distributed; nothing to prepare")

    # -- network and objective ---------------------------------------------------------------------
    @property
    def network(self) -> Mapping[str, Any]:
        """The run's network preset: ``task.network``, which composition takes from the budget size's entry
        of the task's ``sizes`` mapping (``suite.config.apply_size``)."""
        preset = self.cfg.get("network")
        if not isinstance(preset, Mapping):
            raise ValueError(
                f"task {self.name!r}: task.network={preset!r} is not a network preset; a run's config gets "
                "it from the task's sizes mapping (compose the run with suite.config.compose_run)"
            )
        return preset

    @abstractmethod
    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        """The raw network ``net(x, noise_labels, **cond)``; it declares ``channels_last`` and
        ``compilable`` as class attributes (capabilities the budget may ask for)."""

    def objective(self, weight: LossWeight) -> Objective:
        """The training objective (the Gaussian x₀-space error unless the task says otherwise)."""
        from suite.objectives import GaussianX0Objective

        return GaussianX0Objective(weight)

    # -- conditioning ------------------------------------------------------------------------------
    def drop_condition(self, cond: Cond, keep: Tensor) -> Cond:
        """Classifier-free guidance training: rows where ``keep`` is false become the null condition."""
        null = self.null_condition(cond)
        return {
            key: torch.where(keep.reshape(-1, *[1] * (value.ndim - 1)), value, null[key])
            for key, value in cond.items()
        }

    def null_condition(self, cond: Cond) -> Cond:
        """The unconditional input: all-zero rows (the network maps them to no conditioning)."""
        return {key: torch.zeros_like(value) for key, value in cond.items()}

    def augment(self, x0: Tensor, cond: Cond, generator: torch.Generator) -> tuple[Tensor, Cond]:
        """Training-time augmentation of a global batch, drawn from the step's ``generator`` (none by
        default); an augmenting task adds what it did to ``cond`` so the network is conditioned on it.
        Rows are augmented independently of each other's content: on several ranks the runner hands in a
        global batch holding only its own rows (the others zero) and keeps those rows (``augment_share``)."""
        return x0, cond

    # -- decoding and metrics ----------------------------------------------------------------------
    @abstractmethod
    def decode(self, x: Tensor, model: nn.Module | None) -> Any:
        """Model-space samples → typed samples (uint8 images, base strings, texts)."""

    def decode_generated(self, x: Tensor, model: nn.Module | None, cond: Cond) -> Any:
        """Generated samples with the condition they were generated for (``cond``, on the CPU; empty for
        unconditional tasks) in the typed form the metrics score: ``decode`` unless a sample continues its
        condition (a text continues its prompt, and the metric scores the whole text)."""
        return self.decode(x, model)

    def decode_reference(self, batch: Batch) -> Any:
        """Reference examples in the same typed form as ``decode`` gives."""
        return self.decode(batch.x0, None)

    def _metric_set(self, key: str) -> dict[str, dict[str, Any]]:
        """The config's metric mapping ``key`` (name → options), each metric's ``task_keys`` that the config
        sets added as option defaults."""
        from suite.metrics import METRICS, switch_problems

        chosen = {}
        for name, options in (self.cfg.get(key) or {}).items():
            if problems := switch_problems(f"task.{key}.{name}", options):
                raise ValueError("; ".join(problems))
            defaults = {
                k: self.cfg.get(k) for k in METRICS.get(name).task_keys if self.cfg.get(k) is not None
            }
            chosen[str(name)] = {**defaults, **dict(options or {})}
        return chosen

    def metric_options(self) -> dict[str, dict[str, Any]]:
        """The metrics this task is scored by, name → options: ``metrics``, or ``fallback_metrics`` as
        ``use_fallback_metrics`` chooses (module docstring)."""
        from suite.metrics import metric_problems

        configured = self._metric_set("metrics")
        if not self.cfg.get("fallback_metrics"):
            return configured
        choice = self.cfg.get("use_fallback_metrics", "auto")
        if choice not in ("auto", True, False):
            raise ValueError(f"task.use_fallback_metrics={choice!r}; valid: auto, true, false")
        if choice is True or (choice == "auto" and self.allow_stand_in and metric_problems(configured)):
            return self._metric_set("fallback_metrics")
        return configured

    def metrics(self, device: torch.device, cache_dir: Path) -> list[Metric]:
        """The metrics of ``metric_options``, built through the registry; what one of them lacks on this
        machine (``Metric.problems``) is a FileNotFoundError before anything is loaded."""
        from suite.metrics import METRICS, metric_problems

        chosen = self.metric_options()
        if not chosen:
            raise ValueError(f"task {self.name!r} configures no metrics")
        problems = metric_problems(chosen)
        if problems:
            raise FileNotFoundError("; ".join(problems))
        built = [METRICS.get(name)(options, device, cache_dir) for name, options in chosen.items()]
        for metric in built:
            metric.for_task(self)
        return built


def augment_share(
    task: Task, x0: Tensor, cond: Cond, generator: torch.Generator, rows: slice, total: int
) -> tuple[Tensor, Cond]:
    """The task's augmentation of this rank's ``rows`` of a global batch of ``total`` examples: the task
    augments a global batch (this rank's rows in place, the others zero), so it draws from ``generator``
    exactly what one process draws, and the rank keeps its rows. One process augments its batch as is."""
    if range(total)[rows] == range(total):
        return task.augment(x0, cond, generator)

    def spread(part: Tensor) -> Tensor:
        full = part.new_zeros((total, *part.shape[1:]))
        full[rows] = part
        return full

    augmented, extended = task.augment(spread(x0), {k: spread(v) for k, v in cond.items()}, generator)
    return augmented[rows], {key: value[rows] for key, value in extended.items()}


def contract_problems(cls: type) -> list[str]:
    """Every member of the task contract that ``cls`` misses or declares wrongly, each with its valid
    choices (empty when ``cls`` meets the contract)."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        return [f"{cls!r} is not a subclass of suite.task.Task"]
    problems = [
        f"{member}: abstract, not implemented{_ABSTRACT_HINTS.get(member, '')}"
        for member in sorted(getattr(cls, "__abstractmethods__", ()))
    ]
    modality = getattr(cls, "modality", None)
    if not (isinstance(modality, str) and MODALITY.fullmatch(modality)):
        problems.append(
            f"modality: {'missing' if modality is None else f'invalid value {modality!r}'}; declare a "
            "lowercase name (letters, digits, - and _), e.g. image, sequence, text"
        )
    conditional = inspect.getattr_static(cls, "conditional", None)
    if not isinstance(conditional, (bool, property)):
        problems.append(
            f"conditional: {'missing' if conditional is None else f'invalid value {conditional!r}'}; "
            "declare True or False, or a property that decides from the config"
        )
    space = getattr(cls, "model_space", None)
    if space not in MODEL_SPACES:
        problems.append(
            f"model_space: {'missing' if space is None else f'invalid value {space!r}'}; valid: "
            + ", ".join(MODEL_SPACES)
        )
    augment = inspect.signature(cls.augment)
    if list(augment.parameters) != ["self", "x0", "cond", "generator"]:
        problems.append(f"augment{augment}: must be augment(self, x0, cond, generator)")
    return problems


_ABSTRACT_HINTS = {
    "sample_shape": " (a property: the shape of one model-space example)",
    "load": " (load(self) -> TaskData)",
    "example_data": " (a classmethod example_data(cls, folder, n) -> config overrides)",
    "build_network": " (build_network(self, preset) -> nn.Module)",
    "decode": " (decode(self, x, model) -> typed samples)",
}


TASKS: Registry[Task] = Registry("task", "infonoise_suite.tasks", check=contract_problems)
