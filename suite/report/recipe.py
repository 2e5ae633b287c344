"""Recipe cards: where every setting that decides a paper row's result comes from, checked against what a run
composes.

A card (``suite/conf/recipe/<task>.yaml``) lists, per budget (``paper``, ``short``; ``all`` for entries every
carded budget shares), the settings that decide a result. Each entry names

- ``setting``: what it is (one of :data:`REQUIRED`, or any further name);
- ``key``: a dotted key of the composed run config (``budget.lr``, ``task.network.dropout``), or
  ``derived.<name>``, a quantity computed from it (:data:`DERIVED`: steps, epochs, NFE, the per-step EMA
  decay, the optimiser, the weights the final values come from), or null for a setting the task does not
  have (its value null too);
- ``value``: the reference's value (or, for an own choice, the suite's);
- exactly one of ``source`` (repository, file and symbol or line, or paper section) and ``own`` (why the
  suite chose it where no reference fixes it);
- ``deviation`` where the run knowingly departs from the reference value: why.

A card may start from a shared one (``base: _edm``); its entries replace the base's of the same
``setting``. :func:`check_card` composes the run (:func:`suite.config.compose_run`, any overrides
included) and compares every entry: a composed value that differs from the card's without a declared
deviation is a drift, and ``suite recipe`` exits non-zero on one. Numbers compare to a relative 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from suite.config import CONF_DIR, compose_run

CARD_DIR = CONF_DIR / "recipe"
CARDED_BUDGETS = ("paper", "short")
PAPER_ROWS = ("owt", "dna", "cifar10", "cifar10_cond", "ffhq64", "fashion", "bmnist", "bfashion", "dcifar")
# the settings every card states for every carded budget
REQUIRED = (
    "network",
    "optimiser",
    "learning rate",
    "lr warm-up",
    "gradient clipping",
    "batch",
    "length (kimg)",
    "length (epochs)",
    "EMA",
    "dropout",
    "precision",
    "augmentation",
    "label dropout",
    "evaluation points",
    "evaluation samples",
    "final samples",
    "solver",
    "NFE",
    "reference statistics",
    "metric",
    "guidance",
)
ENTRY_KEYS = {"setting", "key", "value", "source", "own", "deviation"}
RELATIVE_TOLERANCE = 1e-6


def _steps(cfg: DictConfig, card: dict[str, Any]) -> float:
    return cfg.budget.kimg * 1000 / cfg.budget.batch


def _epochs(cfg: DictConfig, card: dict[str, Any]) -> float:
    """Passes over the training set: the budget's ``epochs`` where it states them (the run derives its kimg
    from the count it loads), else kimg·1000 / the card's ``train_examples``."""
    stated = OmegaConf.select(cfg, "budget.epochs", default=None)
    if stated is not None:
        return float(stated)
    return cfg.budget.kimg * 1000 / card["train_examples"]


def _ema_beta(cfg: DictConfig, card: dict[str, Any]) -> float:
    """Per-step EMA decay after the ramp-up: 0.5^(batch / half-life in images) (schedule.ema_beta)."""
    return 0.5 ** (cfg.budget.batch / (cfg.budget.ema_halflife_kimg * 1000))


def _lr_warmup_steps(cfg: DictConfig, card: dict[str, Any]) -> float:
    return cfg.budget.lr_rampup_kimg * 1000 / cfg.budget.batch


def _nfe(cfg: DictConfig, card: dict[str, Any]) -> int:
    from suite.run.solvers import nfe

    return nfe(str(cfg.task.solver), int(cfg.task.solver_steps))


def _optimiser(cfg: DictConfig, card: dict[str, Any]) -> str:
    """The optimiser every run builds (``suite.run.state.TrainingState``)."""
    from suite.run.state import ADAM_BETAS, ADAM_EPS

    return f"Adam(betas={list(ADAM_BETAS)}, eps={ADAM_EPS:g}, weight_decay=0)"


def _final_weights(cfg: DictConfig, card: dict[str, Any]) -> str:
    """The weights a run's final values come from: the raw weights of its best validation check where the
    budget selects a checkpoint (``budget.selection``, ``suite.run.selection``), else the EMA's."""
    metric = OmegaConf.select(cfg, "budget.selection.metric", default=None)
    return "EMA" if metric is None else f"raw, best validation {metric}"


DERIVED: dict[str, Callable[[DictConfig, dict[str, Any]], Any]] = {
    "steps": _steps,
    "epochs": _epochs,
    "ema_beta": _ema_beta,
    "lr_warmup_steps": _lr_warmup_steps,
    "nfe": _nfe,
    "optimiser": _optimiser,
    "final_weights": _final_weights,
}


@dataclass(frozen=True)
class Line:
    """One setting of a card beside the value the run composes."""

    setting: str
    key: str | None  # None: a setting this task does not have
    card: Any
    composed: Any
    origin: str  # "source: …" or "own choice: …"
    deviation: str | None

    @property
    def differs(self) -> bool:
        return not same(self.card, self.composed)

    @property
    def drift(self) -> bool:
        """A difference the card does not declare."""
        return self.differs and not self.deviation


def same(a: Any, b: Any) -> bool:
    """Equal values; numbers to a relative 1e-6, mappings and lists element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def card_path(task: str) -> Path:
    return CARD_DIR / f"{task}.yaml"


def load_card(task: str) -> dict[str, Any]:
    """The task's card with its base's entries merged in (the card's replace the base's of one setting)."""
    path = card_path(task)
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in CARD_DIR.glob("[!_]*.yaml")))
        raise ValueError(f"no recipe card for task {task!r} ({path}); cards: {have}")
    card = yaml.safe_load(path.read_text())
    base_name = card.get("base")
    if base_name:
        base = yaml.safe_load(card_path(base_name).read_text())
        for part in set(base) | set(card):
            if isinstance(base.get(part), list) or isinstance(card.get(part), list):
                own = {entry["setting"]: entry for entry in card.get(part) or []}
                merged = [own.pop(entry["setting"], entry) for entry in base.get(part) or []]
                card[part] = merged + list(own.values())
    return card


def card_entries(card: dict[str, Any], budget: str) -> list[dict[str, Any]]:
    """The entries of one budget: the card's ``all`` entries, replaced by the budget's of the same setting."""
    if budget not in card:
        raise ValueError(
            f"the recipe card of {card.get('task')!r} has no {budget!r} section; "
            f"carded budgets: {', '.join(b for b in CARDED_BUDGETS if b in card)}"
        )
    own = {entry["setting"]: entry for entry in card[budget]}
    shared = [own.pop(entry["setting"], entry) for entry in card.get("all") or []]
    return shared + list(own.values())


def entry_problems(entry: dict[str, Any]) -> list[str]:
    """What is wrong with one entry's form (unknown fields, no value, not exactly one of source and own)."""
    name = entry.get("setting", "?")
    problems = [
        f"{name}: unknown field {k!r}; valid: {', '.join(sorted(ENTRY_KEYS))}"
        for k in entry
        if k not in ENTRY_KEYS
    ]
    if "key" not in entry or "value" not in entry:
        problems.append(f"{name}: needs key and value")
    if ("source" in entry) == ("own" in entry):
        problems.append(f"{name}: needs exactly one of source (the reference) and own (own choice: why)")
    key = str(entry.get("key") or "")
    if key.startswith("derived.") and key.removeprefix("derived.") not in DERIVED:
        problems.append(f"{name}: unknown derived quantity {key!r}; valid: {', '.join(DERIVED)}")
    return problems


def composed_value(cfg: DictConfig, entry: dict[str, Any], card: dict[str, Any]) -> Any:
    key = entry["key"]
    if key is None:
        return None
    if key.startswith("derived."):
        return DERIVED[key.removeprefix("derived.")](cfg, card)
    missing = object()
    value = OmegaConf.select(cfg, key, default=missing)
    if value is missing:
        raise ValueError(f"recipe card of {card.get('task')!r}: {key!r} is not a key of the composed config")
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def check_card(task: str, budget: str, overrides: list[str] | None = None) -> list[Line]:
    """Every entry of the task's card for ``budget`` beside the value the run composes (sampler edm: the
    card holds nothing a sampler changes)."""
    card = load_card(task)
    entries = card_entries(card, budget)
    problems = [problem for entry in entries for problem in entry_problems(entry)]
    missing = sorted(set(REQUIRED) - {entry["setting"] for entry in entries})
    if missing:
        problems.append(f"no entry for {', '.join(missing)}")
    if problems:
        raise ValueError(f"recipe card of {task!r}, budget {budget!r}: " + "; ".join(problems))
    cfg = compose_run(task, "edm", budget, overrides)
    order = {name: index for index, name in enumerate(REQUIRED)}
    entries.sort(key=lambda entry: order.get(entry["setting"], len(REQUIRED)))
    return [
        Line(
            setting=entry["setting"],
            key=entry["key"],
            card=entry["value"],
            composed=composed_value(cfg, entry, card),
            origin=f"source: {entry['source']}" if "source" in entry else f"own choice: {entry['own']}",
            deviation=entry.get("deviation"),
        )
        for entry in entries
    ]


def render(task: str, budget: str, lines: list[Line]) -> str:
    """The card as text: each setting, the composed value, the card's, and where it comes from; a difference
    is marked ``≠`` with its declared deviation, or ``DRIFT`` where none is declared."""
    out = [
        f"recipe card: task {task}, budget {budget} ({card_path(task).relative_to(CONF_DIR.parent.parent)})"
    ]
    for line in lines:
        mark = "DRIFT" if line.drift else "≠" if line.differs else "="
        out.append(f"{mark:<5} {line.setting}  [{line.key or 'not a setting of this task'}]")
        out.append(f"        composed: {_show(line.composed)}")
        if line.differs:
            out.append(f"        card:     {_show(line.card)}")
        out.append(f"        {line.origin}")
        if line.deviation:
            out.append(f"        deviation: {line.deviation}")
    drifts = [line.setting for line in lines if line.drift]
    declared = [line.setting for line in lines if line.differs and line.deviation]
    out.append(
        f"{len(lines)} settings; {len(declared)} declared deviations"
        + (f"; UNDECLARED differences: {', '.join(drifts)}" if drifts else "; no undeclared difference")
    )
    return "\n".join(out)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return format(value, ".7g")
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("\n...")
