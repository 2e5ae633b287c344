"""Several runs on one device (``--runs-per-gpu K``, :func:`run_packed`): the runs are trained K at a time
as K child processes on the same device, each started fresh (``spawn``: the launcher's main module is
imported again, so plugins it registers are there, and ``$SUITE_PLUGINS`` is imported as in a SLURM job)
with ``OMP_NUM_THREADS`` = cores // K (the CPUs this process may use, divided evenly). A child trains its
run exactly as a launch of that run alone does (its own lease, records, checkpoints and resume), so K
packed runs write the same records as the K runs launched one by one, value for value (on the CPU, when
both use the same number of threads: a reduction's order follows the thread count). When a child ends,
the next run starts in its place. Each child runs in a process group of its own (it starts with the stop
signals blocked, leaves the launcher's group, discards what reached it meanwhile, then handles stop requests
and says so on its pipe), so the launcher alone gets a terminal's Ctrl-C: a stop request to the launcher
(SIGINT, SIGTERM, SIGUSR2) is forwarded once to every child, as soon as it is ready, which checkpoints and
stops with status 130 (a child still loading stops at once and resumes from its last checkpoint), and no
further run starts; a second SIGINT aborts every child and the launcher at once, without a checkpoint, as
for one run (``suite.stopping``). A child gets SIGTERM when the launcher dies (Linux ``PR_SET_PDEATHSIG``),
since a terminal's hang-up no longer reaches it. A child that dies without an outcome (killed, crashed) is
a failed run, named in the summary with its ``log.txt``, and the other runs go on; the launch ends with the
same lines and exit codes as above (1 when a child failed). Separate processes
rather than one process stepping K stacked networks (``torch.func``): each run stays isolated (a failure,
a lease lost or a stop touches its own run only), writes exactly what it writes alone, and the training
loop is unchanged. Whether stacking would gain more on a GPU is measured by ``suite bench sweep``."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from suite.exits import EXIT_BUSY, EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED
from suite.launch.local import attempt, done_already, summarize
from suite.launch.plan import PlannedRun
from suite.registry import import_plugins
from suite.stopping import STOP_SIGNALS, requested, stop_requests

CHILD_STATUS = {  # a packed child's exit status, by its run's outcome
    "done": EXIT_DONE,
    "done already": EXIT_DONE,
    "failed": EXIT_FAILED,
    "busy": EXIT_BUSY,
    "lease lost": EXIT_BUSY,
    "interrupted": EXIT_INTERRUPTED,
}


READY = "ready"  # what a packed child sends once it handles stop requests itself


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def check_pack_size(runs_per_gpu: int) -> None:
    """``--runs-per-gpu`` must be a positive number of runs."""
    if runs_per_gpu < 1:
        raise ValueError(f"--runs-per-gpu must be at least 1 (1: one run at a time), got {runs_per_gpu}")


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which SLURM and taskset restrict)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def child_environment(**variables: str) -> Iterator[None]:
    """Set environment variables for the child processes started inside the block (a spawned child
    inherits this process's environment when it starts), and restore them after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _packed_child(cfg_dict: dict[str, Any], run_dir: str, report: Connection) -> None:
    """Entry point of one packed run's process (module docstring): leave the launcher's process group,
    forget the stop signals that reached it before (the launcher forwards those), handle stop requests,
    report ready, import ``$SUITE_PLUGINS``, launch the run as :func:`attempt` does, send its (outcome,
    why) to the launcher and exit with the outcome's status."""
    os.setpgid(0, 0)  # out of the terminal's foreground group: the launcher alone gets its signals
    _die_with_parent()
    for s in STOP_SIGNALS:  # ignoring a blocked, pending signal discards it (POSIX)
        signal.signal(s, signal.SIG_IGN)
    with stop_requests():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the launcher at the start
        launcher = multiprocessing.parent_process()
        if launcher is None or os.getppid() != launcher.pid:  # it died before the request was in place
            os.kill(os.getpid(), signal.SIGTERM)
        report.send(READY)

        import_plugins()
        outcome = attempt(cfg_dict, run_dir)
    with suppress(BrokenPipeError):  # a launcher killed meanwhile; the outcome is in the run's run.json
        report.send(outcome)
    report.close()
    sys.exit(CHILD_STATUS.get(outcome[0], EXIT_FAILED))


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when the launcher dies (it checkpoints and stops), since a
    process group of its own keeps it from a terminal's hang-up; a no-op elsewhere."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))


@dataclass
class _Child:
    """A packed run's process, the end of its report pipe, whether it said ready and what it sent last."""

    process: multiprocessing.process.BaseProcess
    report: Connection
    ready: bool = False
    sent: tuple[str, str] | None = None
    open: bool = True

    def read(self) -> None:
        """Take what the child sent so far (``ready``, then its outcome); stops at the end of the pipe."""
        try:
            while self.open and self.report.poll():
                message = self.report.recv()
                if message == READY:
                    self.ready = True
                else:
                    self.sent = tuple(message)  # type: ignore[assignment]
        except (EOFError, OSError):  # the child is gone: its exit status says the rest
            self.open = False

    def ended(self, run_dir: str, stops: list[int]) -> tuple[str, str]:
        """The (outcome, why) of the finished child: what it sent, else what its exit status says, with the
        run's log for a failure."""
        self.read()
        if self.sent is not None:
            return self.sent
        code = self.process.exitcode
        if code is not None and code < 0 and -code in stops and not self.ready:
            name = signal.Signals(-code).name
            return "interrupted", f"{name} before its training started; re-run to resume"
        how = (
            f"killed by {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"exited with status {code} without an outcome"
        )
        return "failed", f"its process was {how}; log: {Path(run_dir) / 'log.txt'}"


def run_concurrently(
    launches: list[tuple[dict[str, Any], str]], runs_per_gpu: int, labels: list[str]
) -> list[tuple[str, str]]:
    """Launch each (config dict, run folder) in its own process, ``runs_per_gpu`` at a time (module
    docstring); returns each one's (outcome, why), ``not started`` for those a stop request kept back."""
    check_pack_size(runs_per_gpu)
    spawn = multiprocessing.get_context("spawn")
    threads = str(max(1, usable_cores() // runs_per_gpu))
    results: list[tuple[str, str] | None] = [None] * len(launches)
    running: dict[int, _Child] = {}
    stops: list[int] = [requested()] if requested() is not None else []  # type: ignore[list-item]
    told: set[int] = set()  # the children a stop was forwarded to

    def tell(index: int, child: _Child) -> None:
        """Forward the launch's stop to a ready child once."""
        if stops and child.ready and index not in told and child.process.exitcode is None:
            told.add(index)
            with suppress(ProcessLookupError):
                os.kill(child.process.pid, stops[0])  # type: ignore[arg-type]

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and stops:  # Ctrl-C twice: abort every run and the launcher at once
            os.write(2, b"second stop request (SIGINT): aborting every run now, without a checkpoint\n")
            for child in running.values():
                with suppress(ProcessLookupError):
                    os.kill(child.process.pid, signal.SIGINT if child.ready else signal.SIGKILL)  # type: ignore[arg-type]
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
            return
        if not stops:
            stops.append(signum)
            name = signal.Signals(signum).name
            os.write(2, f"{name}: every run stops at its next safe point; Ctrl-C again aborts\n".encode())
        for index, child in list(running.items()):
            tell(index, child)

    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS}
    try:
        waiting = list(range(len(launches)))
        while waiting or running:
            while waiting and len(running) < runs_per_gpu and not stops:
                index = waiting.pop(0)
                print(f"== {labels[index]} -> {launches[index][1]}", flush=True)
                reader, writer = spawn.Pipe(duplex=False)
                process = spawn.Process(target=_packed_child, args=(*launches[index], writer))
                signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # the child starts with them blocked
                try:
                    with child_environment(OMP_NUM_THREADS=threads):
                        process.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
                writer.close()
                running[index] = _Child(process, reader)
            if not running:
                break
            listening = [child.report for child in running.values() if child.open and not child.ready]
            wait([child.process.sentinel for child in running.values()] + listening)
            for index, child in list(running.items()):
                child.read()
                tell(index, child)
                if child.process.exitcode is not None:
                    child.process.join()
                    results[index] = child.ended(launches[index][1], stops)
                    child.report.close()
                    del running[index]
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return [result or ("not started", "") for result in results]


def run_packed(runs: list[PlannedRun], runs_per_gpu: int) -> int:
    """Train the planned runs ``runs_per_gpu`` at a time, each in its own process on the same device
    (module docstring), print one line per run, and return the launch's exit code."""
    check_pack_size(runs_per_gpu)
    todo = []
    for index, run in enumerate(runs):
        if run.status == "done":
            done_already(run)
        else:
            todo.append(index)
    launches: list[tuple[dict[str, Any], str]] = [
        (OmegaConf.to_container(runs[i].cfg, resolve=True), str(runs[i].run_dir))  # type: ignore[misc]
        for i in todo
    ]
    labels = [runs[i].label for i in todo]
    ended = dict(zip(todo, run_concurrently(launches, runs_per_gpu, labels), strict=True))
    outcomes = []
    for index, run in enumerate(runs):
        outcome, why = ended.get(index, ("done already", ""))
        outcomes.append((outcome, run, why))
    return summarize(outcomes)
