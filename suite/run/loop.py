"""The schedule of one run's steps and its stop protocol, reported as events (``suite.run.events``).

Ticks lie on a fixed grid of processed examples: a tick is emitted after the first step whose ``nimg``
reaches each multiple of ``tick_kimg`` (and after the last step), and the loss summed since the previous tick
travels in the checkpoint, so a resumed run ticks as an uninterrupted one did (timings aside). A checkpoint
(``suite.run.state``) is written at each multiple of ``checkpoint_kimg`` and at each evaluation point
(``suite.run.schedule.evaluation_points``), before the evaluation, so that a kill or a stop during an
evaluation (which can take many minutes) loses no training. A run with best-validation selection
(``suite.run.selection``) checkpoints at each of its points too, checks there (before an evaluation at
the same point, so that the final one sees every check), and checkpoints again with the check recorded; a
stop during a check abandons it, and the re-run checks that point again.

The records always agree with what a run restored. Resuming from a checkpoint at ``nimg`` drops every row
written after it; starting with no checkpoint that loads drops every row of the earlier attempt, since the
run starts over. A run resumed at an evaluation point whose rows are not all recorded drops the partial rows
and evaluates that point again first.

A mean loss that is NaN, ±inf or above ``suite.records.DIVERGED_LOSS``, read at each tick and each
checkpoint (so before each evaluation), ends the run with :class:`Diverged` before anything after it is
recorded (no stats row, checkpoint or evaluation): the run fails, naming the tick and the likely cause. So
does a metric value that is not finite at an evaluation point when the network's loss, probed there, has
diverged (the last step's update can break the network after its loss was read).

Stop requests (``suite.stopping``) are read after every step: the run checkpoints, its status becomes
"interrupted" and :class:`suite.stopping.Interrupted` is raised. With several ranks the request is agreed on
(a MAX all-reduce) at each tick, so that every rank stops at the same step. A request during an evaluation
abandons it (no row, no snapshot) and stops the run; the re-run evaluates the point again.
"""

from __future__ import annotations

import math
import time
from typing import Any, NoReturn

import torch
import torch.distributed as dist

from suite.records import DIVERGED_LOSS, RunDirectory, append_jsonl, diverged, truncate_jsonl
from suite.run.checkpoint import fault_point
from suite.run.distributed import DistContext, barrier
from suite.run.evaluation import Evaluator, InvalidMetricValue, save_snapshot
from suite.run.events import Checkpointed, Compiled, Evaluated, Evaluating, Events, Stepped, Ticked
from suite.run.schedule import evaluation_points
from suite.run.selection import Selection
from suite.run.spec import BudgetSpec
from suite.run.state import TrainingState
from suite.run.step import CompiledStep
from suite.stopping import Interrupted, interrupted, requested
from suite.watch import save_preview


class Loop:
    """Steps to the budget, checkpointing, evaluating and ticking on schedule; emits what it does."""

    def __init__(
        self,
        step: CompiledStep,
        budget: BudgetSpec,
        folder: RunDirectory,
        evaluator: Evaluator | None,
        events: Events,
        ctx: DistContext,
        selection: Selection | None = None,
    ) -> None:
        self.step, self.state, self.budget, self.dir = step, step.state, budget, folder
        self.events, self.ctx, self.selection = events, ctx, selection
        self.total_nimg = budget.total_nimg
        self.evaluations = Evaluations(self.state, budget, folder, evaluator, events, ctx, selection)
        self.loss_sum = torch.zeros((), device=ctx.device)  # this rank's loss since the last tick
        self.tick_compile_seconds = 0.0  # compile time inside the current tick, reported apart

    def resume(self) -> bool:
        """Load the newest checkpoint that loads and keep the records it restored: the rows up to its
        ``nimg``; with none restored, no row of an earlier attempt is kept (the run starts over)."""
        resumed = self.state.resume(self.dir.checkpoints)
        if resumed:
            self.loss_sum.fill_(self.state.tick_loss_sum if self.ctx.is_main else 0.0)
        if self.ctx.is_main:
            if resumed:
                self.dir.truncate_to(self.state.nimg)
            else:
                for path in (self.dir.records, self.dir.stats, self.dir.sampler_log):
                    path.unlink(missing_ok=True)
            if self.selection is not None:  # the best file as the restored state holds it
                self.selection.publish()
        barrier()
        return resumed

    def run(self) -> None:
        """Train from ``nimg`` to the budget's end."""
        state, tick_nimg, ckpt_nimg = self.state, self.budget.tick_nimg, self.budget.checkpoint_nimg
        tick_start = time.perf_counter()
        self.events.emit(Compiled(self.step.record()))
        while state.nimg < self.total_nimg:
            step_start, before, compiling = time.perf_counter(), state.nimg, self.step.compiling
            self.loss_sum += self.step()
            step_seconds = time.perf_counter() - step_start
            if compiling:  # compile time is recorded apart: out of the wall time and the tick's sec/kimg
                step_seconds -= self.step.seconds
                tick_start += self.step.seconds
                self.tick_compile_seconds = self.step.seconds
                self.events.emit(Compiled(self.step.record()))
            state.wall_time += max(step_seconds, 0.0)
            fault_point("step", state.nimg)
            self.events.emit(Stepped(state.nimg))
            ticked = state.nimg // tick_nimg > before // tick_nimg or state.nimg >= self.total_nimg
            if ticked:
                self._tick(tick_start)
                state.tick_start_nimg, tick_start = state.nimg, time.perf_counter()
            evaluate = state.nimg in self.evaluations.points  # evaluation points are multiples of the batch
            select = self.selection is not None and state.nimg in self.selection.points
            checkpointed = evaluate or select or state.nimg // ckpt_nimg > before // ckpt_nimg
            if checkpointed:  # before the evaluation: a stop or kill during it loses no training
                self.checkpoint()
            if select:
                self.select()
            if evaluate:
                self.evaluate()
            if self._stop_requested(ticked) and state.nimg < self.total_nimg:
                if not checkpointed:
                    self.checkpoint()
                self.interrupt(f"at kimg {state.nimg / 1000}")

    def select(self) -> None:
        """Check the raw weights on the validation split at ``nimg`` and checkpoint again with the check
        recorded; a stop request during the check abandons it and stops the run."""
        assert self.selection is not None
        abandoned, checked = False, False
        try:
            checked = self.selection.check()
        except Interrupted:
            abandoned = True
        if agree(abandoned, self.ctx):
            self.interrupt(
                f"during the validation check at kimg {self.state.nimg / 1000}, which is abandoned"
            )
        if agree(checked, self.ctx):
            self.checkpoint()

    def evaluate(self) -> None:
        """Evaluate at ``nimg``; a stop request during it abandons it and stops the run. A metric that is not
        a finite number there is a divergence (:class:`Diverged`) when the network's loss says so
        (``Step.probe_loss``); otherwise its own error."""
        try:
            abandoned = self.evaluations.evaluate()
        except InvalidMetricValue as err:  # a diverged network, or something else (a damaged cache)
            loss = self.step.step.probe_loss()
            if not diverged(loss):
                raise
            where = f"{err}; the network's loss is {loss:.4g} per example at kimg {self.state.nimg / 1000:g}"
            raise Diverged(where, self.budget) from err
        if abandoned:
            self.interrupt(f"during the evaluation at kimg {self.state.nimg / 1000}, which is abandoned")

    def checkpoint(self) -> None:
        """Save the state, with the loss summed since the last tick over all ranks (kept by the main rank)."""
        if dist.is_initialized():
            dist.all_reduce(self.loss_sum)
        total = self.loss_sum.item()  # the same on every rank, so every rank stops on a divergence
        self.check_loss(total / max(self.state.nimg - self.state.tick_start_nimg, 1))
        if not self.ctx.is_main:
            self.loss_sum.zero_()
        self.state.tick_loss_sum = total if self.ctx.is_main else 0.0
        if self.ctx.is_main:
            self.state.save(self.dir.checkpoints)
        self.events.emit(Checkpointed(self.state.nimg, self.state.wall_time))
        barrier()

    def check_loss(self, loss: float) -> None:
        """Raise :class:`Diverged` when the mean loss per example since the last tick is NaN, ±inf or above
        ``suite.records.DIVERGED_LOSS``."""
        if diverged(loss):
            nimg = self.state.nimg
            tick = math.ceil(nimg / self.budget.tick_nimg)
            bound = f"above {DIVERGED_LOSS:g} is divergence"
            raise Diverged(f"loss is {loss:.4g} at tick {tick} (kimg {nimg / 1000:g}; {bound})", self.budget)

    def interrupt(self, where: str) -> NoReturn:
        if self.ctx.is_main:
            self.dir.update(status="interrupted", kimg=self.state.nimg / 1000)
        raise interrupted(where)

    def _stop_requested(self, ticked: bool) -> bool:
        if self.ctx.world_size > 1 and not ticked:
            return False
        return agree(requested() is not None, self.ctx)

    def _tick(self, tick_start: float) -> None:
        state, nimg = self.state, self.state.nimg
        if dist.is_initialized():
            dist.all_reduce(self.loss_sum)
        processed = max(nimg - state.tick_start_nimg, 1)
        sec_per_kimg = (time.perf_counter() - tick_start) / processed * 1000  # compile time excluded
        eta = (self.total_nimg - nimg) / 1000 * sec_per_kimg
        seconds = self.evaluations.seconds
        left = sum(point > nimg for point in self.evaluations.points)
        if left and seconds:  # the mean of this process's evaluations so far
            eta += left * sum(seconds) / len(seconds)
        loss, lr = self.loss_sum.item() / processed, state.optimizer.param_groups[0]["lr"]
        self.check_loss(loss)  # the same value on every rank (all-reduced), so every rank stops
        compiled, self.tick_compile_seconds = self.tick_compile_seconds, 0.0
        total, wall = self.total_nimg, state.wall_time
        timed = bool(seconds)
        self.events.emit(Ticked(nimg, total, loss, sec_per_kimg, wall, lr, compiled, eta, left, timed))
        self.loss_sum.zero_()


LARGE_LR = 0.1  # the suite's budgets train at 1e-4 to 1e-2


class Diverged(RuntimeError):
    """Training diverged: the mean loss since the last tick is NaN, ±inf or above
    ``suite.records.DIVERGED_LOSS``, or a metric of the trained network is not a finite number. The run fails
    (``suite.run.training``) with where it happened and the likely cause named; it is never scored."""

    def __init__(self, what: str, budget: BudgetSpec) -> None:
        if budget.lr > LARGE_LR:
            cause = f"budget.lr={budget.lr:g} is large (the suite's budgets train at 1e-4 to 1e-2)"
        elif budget.grad_clip == 0:
            cause = "the gradient is unclipped (budget.grad_clip=0); set budget.grad_clip=1, lower budget.lr"
        else:
            cause = f"lower budget.lr (now {budget.lr:g}) or budget.grad_clip (now {budget.grad_clip:g})"
        super().__init__(f"{what}: the run diverged; {cause}")


class Evaluations:
    """The evaluations at the run's evaluation points, scored by the main rank: rows, snapshot and preview."""

    def __init__(
        self,
        state: TrainingState,
        budget: BudgetSpec,
        folder: RunDirectory,
        evaluator: Evaluator | None,
        events: Events,
        ctx: DistContext,
        selection: Selection | None = None,
    ) -> None:
        self.state, self.dir, self.evaluator, self.events, self.ctx = state, folder, evaluator, events, ctx
        self.selection = selection
        self.total_nimg = budget.total_nimg
        self.points = evaluation_points(
            self.total_nimg, budget.batch, budget.eval_points, budget.eval_spacing
        )
        self.seconds: list[float] = []  # wall seconds of each evaluation this process scored

    def pending(self) -> bool:
        """Whether ``nimg`` is an evaluation point without all its rows; the rows it has are dropped."""
        nimg, pending = self.state.nimg, False
        if self.ctx.is_main and self.evaluator is not None and nimg in self.points:
            wanted = {metric.spec.name for metric in self.evaluator.metrics}
            recorded = {row.get("metric") for row in self.dir.rows() if row.get("nimg") == nimg}
            pending = not wanted <= recorded
            if pending:
                truncate_jsonl(self.dir.records, nimg - 1)
        return agree(pending, self.ctx)

    def evaluate(self) -> bool:
        """Score the EMA network at ``nimg``, append the rows, and keep a snapshot of it for ``suite eval``;
        at the final point of a run with selection, the best raw weights too (``Selection.final_rows``);
        returns whether a stop request abandoned the evaluation on any rank (then no row, no snapshot)."""
        state, abandoned = self.state, False
        if self.ctx.is_main and self.evaluator is not None:
            importance = bool(state.sampler.hyperparameters().get("importance_correction", False))
            self.events.emit(Evaluating(state.nimg))
            started = time.perf_counter()
            try:
                final = state.nimg >= self.total_nimg
                evaluator = self.evaluator

                def score(model: torch.nn.Module) -> list[dict[str, Any]]:
                    return evaluator.evaluate(
                        model, state.nimg, state.wall_time, importance, final=final, sampler=state.sampler
                    )

                rows = score(state.ema)
                if final and self.selection is not None:
                    rows = self.selection.final_rows(rows, score)
            except Interrupted:
                abandoned = True
            else:
                self.seconds.append(time.perf_counter() - started)
                digest = rows[0]["config_hash"]
                save_snapshot(self.dir.snapshots, state.nimg, state.ema, state.sampler, digest)
                append_jsonl(self.dir.records, rows)
                save_preview(self.dir.path / "samples", state.nimg, self.evaluator.preview)
                self.events.emit(Evaluated(state.nimg, rows))
        return agree(abandoned, self.ctx)


def agree(flag: bool, ctx: DistContext) -> bool:
    """Whether ``flag`` holds on any rank (a MAX all-reduce, which also synchronises the ranks)."""
    if ctx.world_size == 1:
        return flag
    value = torch.tensor(float(flag), device=ctx.device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())
