"""Stop requests: SIGTERM, SIGUSR2 and SIGINT ask a launch to stop at its next safe point.

SLURM sends SIGTERM on preemption, ``scontrol requeue``, ``scancel`` and at the time limit (then SIGKILL after
its grace, ``KillWait``), and SIGUSR2 ahead of the limit when a job asks for it (``--signal``); Ctrl-C sends
SIGINT. All three are handled alike, for the whole launch: ``suite run`` installs the handlers at its start
(before the heavy imports), a SLURM job at its entry point, and a run on its own while it trains. A handler
only records the request; the launch reads it at these points:

  * before each run (``suite.launch.local.run_local``): a stop between runs starts no further run;
  * after a run's data are loaded: the run stops before training, its lease released;
  * after every training step: the run checkpoints and stops (``suite.run.loop``);
  * between the generation batches, seed ranges, metrics and feature batches of an evaluation: the
    evaluation is abandoned without writing a row (its point's checkpoint was written before it, and the
    re-run evaluates that point again).

A check that finds a request raises :class:`Interrupted`; the run's status becomes "interrupted" and the
launch exits with ``suite.exits.EXIT_INTERRUPTED`` = 130 (128 + SIGINT, the shell's status of an
interrupted command).
A SIGINT that arrives while a stop is already pending (Ctrl-C twice) aborts the process at once, by
SIGINT's default action: no checkpoint is written, and the re-run recovers as from a SIGKILL.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR2)

_received: int | None = None
_depth = 0


class Interrupted(Exception):
    """The launch stopped on a stop request (a run checkpointed first); re-running the command resumes it."""


def _on_signal(signum: int, _frame: object) -> None:
    global _received
    name = signal.Signals(signum).name
    if signum == signal.SIGINT and _received is not None:
        os.write(2, b"second stop request (SIGINT): aborting now, without a checkpoint\n")
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return
    if _received is None:
        _received = signum
        os.write(2, f"{name}: stopping at the next safe point; Ctrl-C again aborts at once\n".encode())


@contextmanager
def stop_requests() -> Iterator[None]:
    """Handle the stop signals inside the block (nested blocks share one request, which the outermost
    block forgets on exit); the previous handlers come back on exit."""
    global _depth, _received
    previous = {s: signal.signal(s, _on_signal) for s in STOP_SIGNALS}
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        for s, handler in previous.items():
            signal.signal(s, handler)
        if _depth == 0:
            _received = None


def requested() -> int | None:
    """The signal that asked to stop, None when none did."""
    return _received


def interrupted(where: str) -> Interrupted:
    """The exception of a stop ``where`` (e.g. "at kimg 0.256"), naming the signal."""
    what = signal.Signals(_received).name if _received is not None else "a stop request of another rank"
    return Interrupted(f"stopped by {what} {where}; re-run the command to resume")


def check(where: str) -> None:
    """Raise :class:`Interrupted` if a stop was requested."""
    if _received is not None:
        raise interrupted(where)
