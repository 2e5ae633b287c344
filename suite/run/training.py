"""The training of one run: one task, one sampler, one budget, one seed, in three parts.

A ``Step`` (``suite.run.step``) takes one optimiser step from the run's training state; a ``Loop``
(``suite.run.loop``) schedules the steps, checkpoints, evaluations and stops, and emits what it does; the
record writers (``suite.run.writers``) subscribed to those events keep stats.jsonl, run.json, sampler.jsonl,
the console line and the live loggers. The ``Trainer`` builds the three from the run's spec and runs the start
of a run: a stop requested while the data loaded stops it before training; otherwise it claims the
comparison's data identity, resumes from the newest checkpoint that loads (``Loop.resume``), records the
start (``suite.run.provenance``), does again a best-validation check (``suite.run.selection``) or an
evaluation that a stop or kill cut short, and trains.

A run is trained under its lease (``suite.lease``): the main process takes it before it loads any data,
removes the temporary files dead writers left in the run directory, and refreshes the heartbeat while it
trains; every write into the run directory asks the lease first, so a process whose lease was taken over
raises :class:`suite.lease.LeaseLost` at its next write instead of writing. A launch that finds the lease
held by a live process raises :class:`suite.lease.RunBusy` on every rank without writing anything.
"""

from __future__ import annotations

import traceback
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import DictConfig

from suite.config import to_dict
from suite.lease import Lease, LeaseLost, RunBusy, clean_temporary_files, read_holder
from suite.metrics import MetricSpec
from suite.records import RunDirectory, append_text, drop_duplicate_rows, now
from suite.run.assembly import build_task
from suite.run.checkpoint import fault_point
from suite.run.distributed import DistContext, init_distributed
from suite.run.evaluation import Evaluator
from suite.run.events import Events
from suite.run.loop import Loop, agree
from suite.run.provenance import claim_data_identity, run_started
from suite.run.selection import Selection
from suite.run.spec import RunSpec, run_spec
from suite.run.state import TrainingState
from suite.run.step import CompiledStep, Step
from suite.run.writers import subscribe_watchers, subscribe_writers
from suite.stopping import Interrupted, interrupted, requested, stop_requests
from suite.task import Task, TaskData
from suite.watch import Watchers, run_log


class Trainer:
    """One run's task, data, training state, step, loop and evaluator; ``run()`` trains and records."""

    def __init__(self, spec: RunSpec, run_dir: Path, ctx: DistContext | None = None) -> None:
        self.ctx = ctx or init_distributed(spec.device)
        self.dir = RunDirectory(run_dir)
        self.task: Task = build_task(spec)
        self.data: TaskData = self.task.load()
        # a budget in epochs trains them over the training examples loaded here (recorded in run.json)
        spec = replace(spec, budget=spec.budget.for_training_set(len(self.data.train)))
        self.spec = spec
        self.state = TrainingState(spec, self.task, self.ctx)
        self.objective = self.task.objective(self.state.weight)
        self.evaluator = Evaluator(spec, self.task, self.data, self.ctx.device) if self.ctx.is_main else None
        if self.evaluator is not None:
            for line in stand_in_lines(self.data, [m.spec for m in self.evaluator.metrics]):
                print(line, flush=True)  # on the launch's terminal and in log.txt, before any number
        step = Step(spec, self.task, self.data.train, self.state, self.objective, self.ctx)
        self.batch = step.batch
        self.train_step = CompiledStep(step, verbose=self.ctx.is_main)
        self.events = Events()
        self.selection: Selection | None = None
        if spec.budget.selection is not None:  # best-validation checkpoint selection
            self.selection = Selection(spec, self.task, self.data, self.state, self.dir, self.evaluator)
        self.loop = Loop(
            self.train_step, spec.budget, self.dir, self.evaluator, self.events, self.ctx, self.selection
        )

    @property
    def nimg(self) -> int:
        return self.state.nimg

    def run(self) -> dict[str, Any]:
        """Train to the budget, evaluating and checkpointing on schedule; returns the final run.json. A stop
        requested before (while the data loaded) stops the run before training."""
        ctx, spec = self.ctx, self.spec
        with stop_requests():
            # the run's data are loaded and it has not trained (a wall-time planner's trainer never runs)
            fault_point("data", 0)
            if agree(requested() is not None, ctx):
                if ctx.is_main:
                    self.dir.update(status="interrupted")
                raise interrupted("before training")
            if ctx.is_main:
                claim_data_identity(self.dir.path.parent.parent, self.data)
            resumed = self.loop.resume()
            watchers = None
            if ctx.is_main:
                run_started(self.dir, spec, self.state, self.data, ctx, resumed)
                prefix = f"[{spec.task}/{spec.sampler.label}/seed{spec.seed}]"
                sampler_log = subscribe_writers(self.events, self.dir, self.state.sampler, prefix)
                if not resumed:
                    sampler_log.initial(self.nimg)
                watchers = Watchers(spec.watch, self.dir.path, spec.label, to_dict(spec.config), self.nimg)
                subscribe_watchers(self.events, watchers)
            try:
                if resumed and self.selection is not None and agree(self.selection.pending(), ctx):
                    self.loop.select()
                if resumed and self.loop.evaluations.pending():
                    self.loop.evaluate()
                self.loop.run()
            finally:
                if watchers is not None:
                    watchers.close()
            if ctx.is_main:
                return self.dir.update(
                    status="done",
                    kimg=self.nimg / 1000,
                    wall_time=round(self.state.wall_time, 2),
                    finished=now(),
                )
            return {}


def take_lease(run_dir: Path, ctx: DistContext) -> Lease | None:
    """The main rank takes the run's lease (None on the other ranks); every rank raises RunBusy if it is
    held by a live process."""
    lease, busy = None, None
    if ctx.is_main:
        lease = Lease(run_dir)
        try:
            lease.acquire()
        except RunBusy as err:
            lease, busy = None, err
        else:
            if lease.taken_over is not None:
                print(f"took over the stale lease of {lease.taken_over}", flush=True)
    if ctx.world_size > 1:
        flag = torch.tensor(float(busy is not None), device=ctx.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and busy is None:
            busy = RunBusy(run_dir, read_holder(run_dir))
    if busy is not None:
        raise busy
    return lease


def drop_repeated_rows(folder: RunDirectory) -> list[str]:
    """Drop the evaluation rows of a run that repeat an earlier row's key (``records.drop_duplicate_rows``:
    the first is kept; call while holding the run's lease); returns the line that says what was dropped (none
    when nothing was)."""
    dropped = drop_duplicate_rows(folder.records)
    if not dropped:
        return []
    lines = ", ".join(str(n) for n in dropped)
    return [
        f"repaired {folder.records}: dropped {len(dropped)} evaluation row(s) repeating an earlier row's "
        f"metric, evaluation point and protocol (line(s) {lines}; the first of each is kept)"
    ]


def repair_done_run(run_dir: Path) -> list[str]:
    """:func:`drop_repeated_rows` of a ``done`` run under its lease; none when another live process holds
    the run (it repairs the run itself when it finds it done)."""
    folder = RunDirectory(run_dir)
    if not folder.records.is_file():
        return []
    try:
        with Lease(run_dir):
            return drop_repeated_rows(folder)
    except RunBusy:
        return []


def stand_in_lines(data: TaskData, metrics: list[MetricSpec]) -> list[str]:
    """A ``note:`` line for stand-in data and one per substitute metric, naming what stands in for what;
    none when the run trains on the real data and scores with the real metrics."""
    lines = [f"note: stand-in data, not the real data set: {data.variant}"] if data.stand_in else []
    lines += [
        f"note: {m.label} stands in for {m.substitutes} (substitute metric; never beside published values)"
        for m in metrics
        if m.substitutes
    ]
    return lines


def train(cfg: DictConfig, run_dir: str | Path) -> dict[str, Any]:
    """Train, evaluate and record one run into ``run_dir`` under its lease, resuming from its newest
    checkpoint; raises RunBusy when another live process trains it."""
    run_dir = Path(run_dir)
    spec = run_spec(cfg)
    ctx = init_distributed(spec.device)
    lease = take_lease(run_dir, ctx)
    try:
        folder = RunDirectory(run_dir)
        if folder.status() == "done":  # finished by the previous holder
            for line in drop_repeated_rows(folder) if lease is not None else []:
                print(line, flush=True)
            return folder.info()
        folder.refuse_links()
        if not ctx.is_main:
            return Trainer(spec, run_dir, ctx).run()
        with run_log(run_dir) as log:
            for path in clean_temporary_files(run_dir):
                print(f"removed {path}, left by a writer that did not finish", flush=True)
            try:
                return Trainer(spec, run_dir, ctx).run()
            except LeaseLost:
                raise
            except BaseException as err:
                with suppress(Exception):  # the guard may refuse: the error itself still propagates
                    append_text(log, f"{err}\n" if isinstance(err, Interrupted) else traceback.format_exc())
                raise
    except (Interrupted, LeaseLost):
        raise
    except BaseException as err:
        if ctx.is_main:
            RunDirectory(run_dir).update(status="failed", error=f"{type(err).__name__}: {err}", failed=now())
        raise
    finally:
        if lease is not None:
            lease.release()
