"""The run spec: the typed, checked numbers that the core reads from a run's resolved config.

A run's config is composed by Hydra (``suite.config``) and written to the run folder as its provenance
record. The core reads it once, here: :func:`run_spec` turns the ``task``, ``budget`` and ``sampler``
groups into frozen dataclasses, checks every value, and raises one :class:`SpecError` listing each invalid
value with the rule it breaks. The training loop, the evaluator, the planned cost, the benches, the post
hoc profile and ``suite eval`` take the spec; the task plugin alone receives its own config group
(``RunSpec.task_cfg``), whose modality-specific keys only it reads. The pattern is EDM2's single
``setup_training_config``: settings are validated where they are assembled, not where they are used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from suite.config import comparison_hash, config_hash, flatten, sampler_label, sampler_params
from suite.run.schedule import EVAL_SPACINGS
from suite.watch import WATCHERS

PRECISIONS = ("fp32", "bf16")
FINAL_EVALS = ("budget", "per_reference")
EVAL_LATENTS = ("shared", "per_seed")  # task.eval_latents: one latent set for every run, or one per run seed
SWITCHES = ("auto", "true", "false")  # budget.compile: auto = on CUDA, off on the CPU
DEVICES = ("auto", "cpu", "cuda")  # device=: auto = cuda where torch sees one, else cpu


class SpecError(ValueError):
    """Invalid values in a run's config; ``problems`` holds one line per value."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class EvalSpec:
    """How an evaluation point generates and scores (``budget.eval``)."""

    samples: int
    reference: int | None  # None: the whole reference split
    seed: int
    final_samples: int  # at the last point; equals ``samples`` unless the budget asks for more
    final_ranges: int  # disjoint generation-seed ranges at the last point (EDM: 3, best recorded)
    batch_size: int
    guidance: float
    precision: str  # the network's precision while generating: fp32, or bf16 autocast (the solver stays fp32)
    # the task's ``final_eval: per_reference``: the last point generates one sample per reference example,
    # conditioned on that example, scores it against the whole reference split, one range (DDSM's protocol)
    per_reference_final: bool = False
    # sets of such samples at a per_reference final point; each metric's value is their mean, with its
    # standard error (DDSM: 5 sets per test window)
    final_sets: int = 1
    # the task's ``eval_latents``: ``shared``, every run generates from the latents of ``seed`` (common random
    # numbers across runs); ``per_seed``, from those of (``seed``, the run's seed), so the seeds of a sampler
    # sample different latent sets and the latents' spread enters the seed interval
    latents: str = "shared"


@dataclass(frozen=True)
class SelectionSpec:
    """Best-validation checkpoint selection (``budget.selection``, ``suite.run.selection``): after
    ``first_epoch`` passes over the training set and every ``every_epochs`` after it, the raw (non-EMA)
    weights are scored on ``metric`` over the task's validation split and the best are kept; the run's final
    values come from them."""

    metric: str
    every_epochs: float
    first_epoch: float


SELECTION_KEYS = ("metric", "every_epochs", "first_epoch")


@dataclass(frozen=True)
class BudgetSpec:
    """Training length, optimiser, precision and schedules (``budget``)."""

    name: str
    size: str  # which of the task's network presets
    kimg: float
    batch: int
    lr: float
    lr_rampup_kimg: float
    ema_halflife_kimg: float
    ema_rampup_ratio: float | None
    grad_clip: float
    stratified: bool
    precision: str
    compile: bool | None  # None ("auto"): compiled on CUDA, eager on the CPU; True / False force it
    cuda_graphs: bool  # the compiled step replays CUDA graphs (mode "reduce-overhead"); CUDA only
    channels_last: bool
    tick_kimg: float
    checkpoint_kimg: float
    eval_points: int
    eval: EvalSpec
    eval_spacing: str = "linear"
    epochs: float | None = None  # stated in passes over the training set: kimg is derived when the data load
    selection: SelectionSpec | None = None  # best-validation checkpoint selection; None: the EMA's finals

    def for_training_set(self, examples: int) -> BudgetSpec:
        """The budget of a run that loaded ``examples`` training examples: one stated in epochs trains
        kimg = epochs · examples / 1000 (its configured kimg is the planning estimate); others unchanged."""
        if self.epochs is None:
            return self
        return replace(self, kimg=self.epochs * examples / 1000)

    def compiles(self, device_type: str) -> bool:
        """Whether the training step is compiled on a device of this type (``auto``: on CUDA only)."""
        return device_type == "cuda" if self.compile is None else self.compile

    @property
    def total_nimg(self) -> int:
        return int(round(self.kimg * 1000))

    @property
    def tick_nimg(self) -> int:
        return int(self.tick_kimg * 1000)

    @property
    def checkpoint_nimg(self) -> int:
        return int(self.checkpoint_kimg * 1000)


@dataclass(frozen=True)
class DiffusionSpec:
    """The task's numbers that the diffusion path, the objective and the solver read (``task``)."""

    sigma_data: float
    sigma_min: float
    sigma_max: float
    loss_weight: str
    solver: str
    solver_steps: int
    cond_dropout: float


@dataclass(frozen=True)
class SamplerSpec:
    """The noise sampler: its registered name, constructor parameters and label (``sampler``)."""

    name: str
    params: Mapping[str, Any]
    label: str  # the name, with parameters that differ from its config file's defaults


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One run: task, diffusion numbers, budget, sampler, seed and device, with its two hashes; ``config``
    is the resolved config it was read from, kept as the run's provenance record (``config.yaml``)."""

    config: DictConfig
    task: str
    task_cfg: DictConfig
    diffusion: DiffusionSpec
    budget: BudgetSpec
    sampler: SamplerSpec
    seed: int
    device: str
    config_hash: str
    comparison_hash: str
    watch: tuple[str, ...] = ()  # live loggers (``suite.watch``)

    @property
    def label(self) -> str:
        return f"{self.task}/{self.budget.name}/{self.sampler.label}/seed{self.seed}"


class _Reader:
    """Reads typed values from one config group and collects what is wrong with them."""

    def __init__(self, node: DictConfig, prefix: str) -> None:
        self.node, self.prefix, self.problems = node, prefix, []

    def _get(self, key: str) -> Any:
        return OmegaConf.select(self.node, key, default=None)

    def _bad(self, key: str, value: Any, rule: str) -> None:
        self.problems.append(f"{self.prefix}.{key}={value!r}: must be {rule}")

    def number(self, key: str, minimum: float = 0.0, strict: bool = True, at_least: float = 0.0) -> float:
        value = self._get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and (value <= minimum if strict else value < minimum):
            ok = False
        if not ok:
            self._bad(key, value, "a finite positive number" if strict else f"a finite number >= {minimum:g}")
            return 1.0
        if 0 < value < at_least:
            self._bad(key, value, f"at least {at_least:g} (one example)")
        return float(value)

    def integer(self, key: str, optional: bool = False, minimum: int = 1) -> int | None:
        value = self._get(key)
        if optional and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self._bad(key, value, f"an integer >= {minimum}")
            return minimum
        return value

    def flag(self, key: str, absent: bool | None = None) -> bool:
        value = self._get(key)
        if value is None and absent is not None:  # a config written before the key existed
            return absent
        if not isinstance(value, bool):
            self._bad(key, value, "true or false")
            return False
        return value

    def switch(self, key: str) -> bool | None:
        """true, false or auto (None)."""
        value = self._get(key)
        if isinstance(value, bool):
            return value
        if value != "auto":
            self.problems.append(f"{self.prefix}.{key}={value!r}: valid: {', '.join(SWITCHES)}")
        return None

    def choice(self, key: str, valid: tuple[str, ...], absent: str | None = None) -> str:
        value = self._get(key)
        if value is None and absent is not None:  # a config written before the key existed
            return absent
        if value not in valid:
            self.problems.append(f"{self.prefix}.{key}={value!r}: valid: {', '.join(valid)}")
            return valid[0]
        return str(value)

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value:
            self._bad(key, value, "a non-empty string")
            return ""
        return value


def _selection(r: _Reader) -> SelectionSpec | None:
    """``budget.selection``: absent, null or with ``metric`` null, none."""
    node = r._get("selection")
    if node is None or OmegaConf.select(node, "metric", default=None) is None:
        return None
    unknown = sorted(set(node) - set(SELECTION_KEYS))
    if unknown:
        r.problems.append(f"budget.selection.{unknown[0]}: not a key; valid: {', '.join(SELECTION_KEYS)}")
    every = r.number("selection.every_epochs")
    first = every if r._get("selection.first_epoch") is None else r.number("selection.first_epoch")
    return SelectionSpec(metric=r.text("selection.metric"), every_epochs=every, first_epoch=first)


def _budget(node: DictConfig) -> tuple[BudgetSpec, list[str]]:
    r = _Reader(node, "budget")
    samples = r.integer("eval.samples")
    ev = EvalSpec(
        samples=samples,
        reference=r.integer("eval.reference", optional=True),
        seed=r.integer("eval.seed", minimum=0),
        final_samples=r.integer("eval.final_samples", optional=True) or samples,
        final_ranges=r.integer("eval.final_ranges", optional=True) or 1,
        batch_size=r.integer("eval.batch_size"),
        guidance=r.number("eval.guidance", strict=False),
        precision=r.choice("eval.precision", PRECISIONS, absent="fp32"),
        final_sets=r.integer("eval.final_sets", optional=True) or 1,
    )
    rampup = OmegaConf.select(node, "ema_rampup_ratio", default=None)
    spec = BudgetSpec(
        name=r.text("name"),
        size=r.text("size"),
        kimg=r.number("kimg"),
        batch=r.integer("batch"),
        lr=r.number("lr"),
        lr_rampup_kimg=r.number("lr_rampup_kimg", strict=False),
        ema_halflife_kimg=r.number("ema_halflife_kimg"),
        ema_rampup_ratio=None if rampup is None else r.number("ema_rampup_ratio"),
        grad_clip=r.number("grad_clip", strict=False),
        stratified=r.flag("stratified"),
        precision=r.choice("precision", PRECISIONS),
        compile=r.switch("compile"),
        cuda_graphs=r.flag("cuda_graphs", absent=False),
        channels_last=r.flag("channels_last"),
        tick_kimg=r.number("tick_kimg", at_least=0.001),
        checkpoint_kimg=r.number("checkpoint_kimg", at_least=0.001),
        eval_points=r.integer("eval_points"),
        eval=ev,
        eval_spacing=r.choice("eval_spacing", EVAL_SPACINGS, absent="linear"),
        epochs=None if OmegaConf.select(node, "epochs", default=None) is None else r.number("epochs"),
        selection=_selection(r),
    )
    return spec, r.problems


def _diffusion(node: DictConfig) -> tuple[DiffusionSpec, list[str]]:
    from suite.noise.weighting import WEIGHTS
    from suite.run.solvers import SOLVERS

    r = _Reader(node, "task")
    spec = DiffusionSpec(
        sigma_data=r.number("sigma_data"),
        sigma_min=r.number("sigma_min"),
        sigma_max=r.number("sigma_max"),
        loss_weight=r.choice("loss_weight", tuple(WEIGHTS)),
        solver=r.choice("solver", tuple(SOLVERS)),
        solver_steps=r.integer("solver_steps"),
        cond_dropout=r.number("cond_dropout", strict=False),
    )
    if not spec.sigma_min < spec.sigma_max:
        r.problems.append(
            f"task.sigma_min={spec.sigma_min!r}, task.sigma_max={spec.sigma_max!r}: must be min < max"
        )
    if spec.cond_dropout >= 1:
        r.problems.append(f"task.cond_dropout={spec.cond_dropout!r}: must be a probability below 1")
    return spec, r.problems


def _watch(cfg: DictConfig) -> tuple[tuple[str, ...], list[str]]:
    """The run's live loggers (``watch``: a name or a list of names; absent in configs written before it)."""

    value = OmegaConf.select(cfg, "watch", default=None)
    names = [] if value is None else [value] if isinstance(value, str) else list(value)
    bad = [name for name in names if name not in WATCHERS]
    if bad:
        return (), [f"watch={names!r}: {bad[0]!r} is not a logger; valid: {', '.join(WATCHERS)}"]
    return tuple(dict.fromkeys(names)), []


def guidance_problem(guidance: float, cond_dropout: float, conditional: bool = True) -> str | None:
    """Classifier-free guidance (Ho & Salimans 2022) extrapolates away from the null condition: a scale in
    (0, ∞); other than 1 only on a conditional task (``conditional``) whose run trains the null condition
    (``cond_dropout`` > 0). None: no problem."""
    if not math.isfinite(guidance) or guidance <= 0:
        return f"guidance {guidance!r}: must be a number in (0, inf); 1 is no guidance"
    if guidance == 1:
        return None
    if not conditional:
        return (
            f"guidance {guidance!r}: the task is unconditional (it has no condition, so no null condition to "
            "guide away from); only guidance 1 applies"
        )
    if cond_dropout > 0:
        return None
    return (
        f"budget.eval.guidance={guidance!r} with task.cond_dropout=0: the null condition is never trained; "
        "set task.cond_dropout > 0 (e.g. 0.1) to train it, or budget.eval.guidance=1"
    )


CHECKED_GROUPS = ("task", "sampler", "budget")


def non_finite_problems(cfg: DictConfig, known: Sequence[str] = ()) -> list[str]:
    """One line per NaN or ±inf float anywhere in the ``task``, ``sampler`` and ``budget`` groups (a
    divergent learning rate, a NaN clip or σ), naming its dotted key; keys that a line of ``known`` names
    already are left out."""
    problems = []
    for group in CHECKED_GROUPS:
        node = cfg.get(group)
        if node is None:
            continue
        for key, value in flatten(OmegaConf.to_container(node, resolve=True), f"{group}.").items():
            values = value if isinstance(value, list) else [value]
            bad = any(isinstance(v, float) and not math.isfinite(v) for v in values)
            if bad and not any(line.startswith(f"{key}=") for line in known):
                problems.append(f"{key}={value!r}: must be a finite number")
    return problems


def read_spec(cfg: DictConfig) -> tuple[RunSpec, list[str]]:
    """The spec of a resolved run config and every invalid value in it, one line each; an invalid value is
    replaced by a valid placeholder, so that the checks can go on to build the parts and report their
    problems too."""
    budget, bad_budget = _budget(cfg.budget)
    diffusion, bad_task = _diffusion(cfg.task)
    watch, bad_watch = _watch(cfg)
    final_eval = cfg.task.get("final_eval", "budget")
    if final_eval not in FINAL_EVALS:
        bad_task.append(f"task.final_eval={final_eval!r}: valid: {', '.join(FINAL_EVALS)}")
    elif final_eval == "per_reference":
        budget = replace(budget, eval=replace(budget.eval, per_reference_final=True))
    latents = cfg.task.get("eval_latents", "shared")
    if latents not in EVAL_LATENTS:
        bad_task.append(f"task.eval_latents={latents!r}: valid: {', '.join(EVAL_LATENTS)}")
    else:
        budget = replace(budget, eval=replace(budget.eval, latents=str(latents)))
    spec = RunSpec(
        config=cfg,
        task=str(cfg.task.name),
        task_cfg=cfg.task,
        diffusion=diffusion,
        budget=budget,
        sampler=SamplerSpec(str(cfg.sampler.name), sampler_params(cfg), sampler_label(cfg)),
        seed=int(cfg.seed),
        device=str(cfg.get("device", "auto")),
        config_hash=config_hash(cfg),
        comparison_hash=comparison_hash(cfg),
        watch=watch,
    )
    guided = guidance_problem(budget.eval.guidance, diffusion.cond_dropout)
    problems = [*bad_budget, *bad_task, *bad_watch, *([guided] if guided else [])]
    if spec.device not in DEVICES:
        problems.append(f"device={spec.device!r}: valid: {', '.join(DEVICES)}")
    return spec, [*problems, *non_finite_problems(cfg, problems)]


def run_spec(cfg: DictConfig) -> RunSpec:
    """The spec of a resolved run config; raises :class:`SpecError` naming every invalid value."""
    spec, problems = read_spec(cfg)
    if problems:
        raise SpecError(problems)
    return spec
