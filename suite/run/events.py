"""What a training loop reports as it goes, and the bus that hands each report to its subscribers.

The loop (``suite.run.loop``) emits one event per thing that happened; the record writers
(``suite.run.writers``) subscribe to the kinds they record. A subscriber is called in the order it subscribed,
on the emitting process; the loop emits on every rank, and the writers subscribe on the main rank only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar


@dataclass(frozen=True)
class Stepped:
    """An optimiser step ended at ``nimg`` processed examples."""

    nimg: int


@dataclass(frozen=True)
class Compiled:
    """The first step compiled the network (or fell back to eager); ``record`` is run.json's account."""

    record: dict[str, Any]


@dataclass(frozen=True)
class Ticked:
    """A stats tick: the mean loss per example since the previous tick, and the pace.

    ``sec_per_kimg`` leaves compile time out (``compile_seconds``, nonzero in the tick that compiled);
    ``eta_seconds`` is the training left at that pace plus, once one was timed, the evaluations left at the
    mean time of this process's evaluations (``evaluations_timed``).
    """

    nimg: int
    total_nimg: int
    loss: float
    sec_per_kimg: float
    wall_time: float
    lr: float
    compile_seconds: float
    eta_seconds: float
    evaluations_left: int
    evaluations_timed: bool


@dataclass(frozen=True)
class Evaluating:
    """The evaluation at ``nimg`` begins."""

    nimg: int


@dataclass(frozen=True)
class Evaluated:
    """The evaluation at ``nimg`` wrote its ``rows`` (records.jsonl) and its network snapshot."""

    nimg: int
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Checkpointed:
    """A checkpoint at ``nimg`` was saved after ``wall_time`` seconds of training."""

    nimg: int
    wall_time: float


E = TypeVar("E")


class Events:
    """Subscribers by event kind."""

    def __init__(self) -> None:
        self._handlers: defaultdict[type, list[Callable[[Any], None]]] = defaultdict(list)

    def subscribe(self, kind: type[E], handler: Callable[[E], None]) -> None:
        self._handlers[kind].append(handler)

    def emit(self, event: object) -> None:
        for handler in self._handlers.get(type(event), ()):
            handler(event)
