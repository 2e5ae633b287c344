"""The training loop of one run: one task, one sampler, one budget, one seed.

A step: draw the global batch's data indices, σ, ε and condition dropout from the step's generator
(``suite.stream``), let the task augment the batch, evaluate the task's objective (``suite.objectives``)
under the budget's precision, step Adam (EDM: β = 0.9, 0.999, ε = 1e-8, linear learning-rate warm-up,
non-finite gradients zeroed in three operations (``zero_nonfinite_``), optional gradient-norm clipping;
fused), hand σ and the observed x₀-space errors to the noise sampler (``observe_draws``: no value is read
back from the device inside a step), and update the EMA (one ``torch._foreach_lerp_``). Around the steps: a
stats row every tick, an evaluation (``suite.evaluation``) with a network snapshot at each evaluation point,
checkpoints (``suite.state``), and a clean stop with a checkpoint on SIGTERM, SIGUSR2 or SIGINT
(``suite.stopping``). Records and provenance are ``suite.provenance``'s.

Ticks lie on a fixed grid of processed examples: a stats row is written after the first step whose
``nimg`` reaches each multiple of ``tick_kimg`` (and after the last step), and the loss summed since the
previous tick travels in the checkpoint, so a resumed run writes the same rows as an uninterrupted one
(timings aside).

The records always agree with what a run restored. Resuming from a checkpoint at ``nimg`` drops every row
written after it; starting with no checkpoint that loads (none written yet, or every one damaged) drops
every row of the earlier attempt, since the run starts over. An evaluation point's checkpoint is written
before its evaluation, so a kill or a stop during an evaluation (which can take many minutes) loses no
training; a run resumed at an evaluation point whose rows are not all recorded drops the partial rows and
evaluates that point again first.

A run is trained under its lease (``suite.lease``): the main process takes it before it loads any data,
removes the temporary files dead writers left in the run directory, and refreshes the heartbeat while it
trains; every write into the run directory asks the lease first, so a process whose lease was taken over
raises :class:`suite.lease.LeaseLost` at its next write instead of writing. A launch that finds the lease
held by a live process raises :class:`suite.lease.RunBusy` on every rank without writing anything.
"""

from __future__ import annotations

import time
import traceback
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist
from omegaconf import DictConfig
from torch import Tensor, nn

from suite.assembly import build_task
from suite.checkpoint import fault_point
from suite.config import to_dict
from suite.distributed import DistContext, barrier, init_distributed
from suite.evaluation import Evaluator, save_snapshot
from suite.lease import Lease, LeaseLost, RunBusy, clean_temporary_files, read_holder
from suite.metrics import MetricSpec
from suite.provenance import claim_data_identity, density_row, run_started
from suite.records import RunDirectory, append_jsonl, append_text, now, truncate_jsonl
from suite.schedule import ema_beta, evaluation_points, learning_rate
from suite.spec import RunSpec, run_spec
from suite.state import TrainingState
from suite.stopping import Interrupted, interrupted, requested, stop_requests
from suite.stream import batch_indices, step_generator, step_seed
from suite.task import Task, TaskData, augment_share
from suite.watch import Watchers, evaluation_line, format_eta, run_log, save_preview


class Trainer:
    """One run's task, data, training state and evaluator; ``run()`` trains, evaluates and records."""

    def __init__(self, spec: RunSpec, run_dir: Path, ctx: DistContext | None = None) -> None:
        self.spec = spec
        self.budget = spec.budget
        self.ctx = ctx or init_distributed(spec.device)
        self.dir = RunDirectory(run_dir)
        self.task: Task = build_task(spec)
        self.data: TaskData = self.task.load()
        fault_point("data", 0)
        self.state = TrainingState(spec, self.task, self.ctx)
        self.objective = self.task.objective(self.state.weight)
        self.evaluator = Evaluator(spec, self.task, self.data, self.ctx.device) if self.ctx.is_main else None
        if self.evaluator is not None:
            for line in stand_in_lines(self.data, [m.spec for m in self.evaluator.metrics]):
                print(line, flush=True)  # on the launch's terminal and in log.txt, before any number
        self.batch = self.budget.batch
        if self.batch % self.ctx.world_size:
            raise ValueError(f"budget.batch={self.batch} is not divisible by the {self.ctx.world_size} ranks")
        self.total_nimg = self.budget.total_nimg
        self.eval_at = evaluation_points(
            self.total_nimg, self.batch, self.budget.eval_points, self.budget.eval_spacing
        )
        self._rebuilds_logged = 0
        self._loss_sum = torch.zeros((), device=self.ctx.device)
        self.watchers: Watchers | None = None  # the main rank's live loggers, opened by run()
        self._eval_seconds: list[float] = []  # wall seconds of each evaluation point this process scored
        self.compile_seconds: float | None = None  # the first compiled step's time, once taken
        self.compile_warning: str | None = None
        self._tick_compile_seconds = 0.0  # compile time inside the current tick, reported apart

    @property
    def nimg(self) -> int:
        return self.state.nimg

    # -- one step ------------------------------------------------------------------------------------
    def train_step(self) -> Tensor:
        """One optimiser step on the global batch starting at ``nimg``; returns this rank's loss sum. The
        first step of a compiled network compiles it: its time is kept in ``compile_seconds`` (and left out
        of the run's wall time and sec/kimg); a compile that fails leaves one warning line in
        ``compile_warning`` and the step is taken again, eager. A compile fails in the forward or the
        backward, before the optimiser or the sampler has changed anything, so the retried step is the
        step an eager run takes."""
        state = self.state
        if not state.compiled or self.compile_seconds is not None:
            return self._step()
        start = time.perf_counter()
        try:
            loss = self._step()
        except Exception as err:  # the compiler's failure, of any type; an eager failure re-raises below
            reason = (str(err).strip().splitlines() or [""])[0][:300]
            self.compile_warning = f"torch.compile failed ({type(err).__name__}: {reason}); training eager"
            if self.ctx.is_main:
                print(f"warning: {self.compile_warning}", flush=True)
            state.fall_back_to_eager()
            state.optimizer.zero_grad(set_to_none=True)
            self.compile_seconds = time.perf_counter() - start
            return self._step()
        self.compile_seconds = time.perf_counter() - start
        if self.ctx.is_main:
            print(
                f"compiled the training step in {self.compile_seconds:.1f} s "
                f"(inductor cache {state.compile_cache})",
                flush=True,
            )
        return loss

    def compile_record(self) -> dict[str, Any]:
        """What run.json keeps about compilation in this launch."""
        state = self.state
        record: dict[str, Any] = {
            "requested": {None: "auto", True: "true", False: "false"}[self.budget.compile],
            "compiled": state.compiled,
            "cuda_graphs": state.cuda_graphs,
        }
        if self.compile_seconds is not None:
            record["seconds"] = round(self.compile_seconds, 2)
            record["cache"] = state.compile_cache
        if self.compile_warning is not None:
            record["warning"] = self.compile_warning
        return record

    def _step(self) -> Tensor:
        ctx, spec, state = self.ctx, self.spec, self.state
        seed, nimg = spec.seed, state.nimg
        gen = step_generator(seed, nimg, ctx.device)
        torch.manual_seed(step_seed(seed, nimg) + ctx.rank)  # the network's dropout masks
        per_rank = self.batch // ctx.world_size
        mine = slice(ctx.rank * per_rank, (ctx.rank + 1) * per_rank)
        index = batch_indices(seed, len(self.data.train), nimg, self.batch)[mine]
        batch = self.data.train.training_batch(index, ctx.device, gen, mine, self.batch)
        sigma = state.sampler.sample(self.batch, gen, stratified=self.budget.stratified)
        noise = torch.randn((self.batch, *self.task.sample_shape), generator=gen, device=ctx.device)[mine]
        sigma = sigma[mine]
        cond = batch.cond
        dropout = spec.diffusion.cond_dropout
        if cond and dropout > 0:
            keep = torch.rand(self.batch, generator=gen, device=ctx.device)[mine] >= dropout
            cond = self.task.drop_condition(cond, keep)
        x0, cond = augment_share(self.task, batch.x0, cond, gen, mine, self.batch)
        if state.channels_last and x0.ndim == 4:
            x0 = x0.contiguous(memory_format=torch.channels_last)
            noise = noise.contiguous(memory_format=torch.channels_last)
        autocast = torch.autocast(
            ctx.device.type, dtype=torch.bfloat16, enabled=self.budget.precision == "bf16"
        )
        if state.cuda_graphs:  # the previous step's graph outputs are no longer read
            torch.compiler.cudagraph_mark_step_begin()
        with autocast:
            x0 = self.objective.encode(state.model, x0)
            weighted, observed = self.objective.losses(
                state.forward, x0, sigma, noise, cond, state.sampler.importance_weight(sigma)
            )
        state.optimizer.zero_grad(set_to_none=True)
        (weighted.sum() / per_rank).backward()
        zero_nonfinite_([p.grad for p in state.model.parameters() if p.grad is not None])
        if self.budget.grad_clip > 0:
            nn.utils.clip_grad_norm_(state.model.parameters(), self.budget.grad_clip)
        for group in state.optimizer.param_groups:
            group["lr"] = learning_rate(self.budget.lr, nimg, self.budget.lr_rampup_kimg)
        state.optimizer.step()
        state.sampler.observe_draws(sigma, observed)
        state.nimg += self.batch
        beta = ema_beta(self.batch, state.nimg, self.budget.ema_halflife_kimg, self.budget.ema_rampup_ratio)
        with torch.no_grad():
            torch._foreach_lerp_(list(state.ema.parameters()), list(state.model.parameters()), 1 - beta)
        return weighted.detach().sum()

    # -- evaluation points, checkpoints and logs -----------------------------------------------------
    def evaluate(self) -> None:
        """Score the EMA network, append the rows, and keep a snapshot of it for ``suite eval``. A stop
        request abandons the evaluation (no row, no snapshot) and stops the run; the point's checkpoint was
        written before it, and the re-run evaluates the point again."""
        abandoned = False
        if self.ctx.is_main and self.evaluator is not None:
            state, spec = self.state, self.spec
            importance = bool(state.sampler.hyperparameters().get("importance_correction", False))
            print(
                f"[{spec.task}/{spec.sampler.label}/seed{spec.seed}] evaluating at kimg {state.nimg / 1000:g}"
            )
            started = time.perf_counter()
            try:
                rows = self.evaluator.evaluate(
                    state.ema,
                    state.nimg,
                    state.wall_time,
                    importance,
                    final=state.nimg >= self.total_nimg,
                    sampler=state.sampler,
                )
            except Interrupted:
                abandoned = True
            else:
                self._eval_seconds.append(time.perf_counter() - started)
                digest = rows[0]["config_hash"]
                save_snapshot(self.dir.snapshots, state.nimg, state.ema, state.sampler, digest)
                append_jsonl(self.dir.records, rows)
                prefix = f"[{spec.task}/{spec.sampler.label}/seed{spec.seed}]"
                for row in rows:
                    print(f"{prefix} {evaluation_line(row)}", flush=True)
                save_preview(self.dir.path / "samples", state.nimg, self.evaluator.preview)
                if self.watchers is not None:
                    self.watchers.log(state.nimg, {f"eval/{row['metric']}": row["value"] for row in rows})
        if self._agree(abandoned):
            self._interrupt(f"during the evaluation at kimg {self.nimg / 1000}, which is abandoned")

    def checkpoint(self) -> None:
        """Save the state, with the loss summed since the last tick over all ranks (kept by the main rank)."""
        if dist.is_initialized():
            dist.all_reduce(self._loss_sum)
            if not self.ctx.is_main:
                self._loss_sum.zero_()
        self.state.tick_loss_sum = self._loss_sum.item()
        if self.ctx.is_main:
            self.state.save(self.dir.checkpoints)
            self.dir.update(status="running", kimg=self.nimg / 1000, wall_time=self.state.wall_time)
        barrier()

    def resume(self) -> bool:
        """Load the newest checkpoint that loads and keep the records it restored: the rows up to its
        ``nimg``; with none restored, no row of an earlier attempt is kept (the run starts over)."""
        resumed = self.state.resume(self.dir.checkpoints)
        if resumed:
            self._loss_sum.fill_(self.state.tick_loss_sum if self.ctx.is_main else 0.0)
            self._rebuilds_logged = len(self.state.sampler.history)
        if self.ctx.is_main:
            if resumed:
                self.dir.truncate_to(self.nimg)
            else:
                for path in (self.dir.records, self.dir.stats, self.dir.sampler_log):
                    path.unlink(missing_ok=True)
        barrier()
        return resumed

    def evaluation_pending(self) -> bool:
        """Whether ``nimg`` is an evaluation point without all its rows (a kill or stop during its evaluation,
        which comes after its checkpoint); the rows it has are dropped, to be written again."""
        pending = False
        if self.ctx.is_main and self.evaluator is not None and self.nimg in self.eval_at:
            wanted = {metric.spec.name for metric in self.evaluator.metrics}
            recorded = {row.get("metric") for row in self.dir.rows() if row.get("nimg") == self.nimg}
            pending = not wanted <= recorded
            if pending:
                truncate_jsonl(self.dir.records, self.nimg - 1)
        return self._agree(pending)

    def log_sampler(self, initial: bool = False) -> None:
        """Append the sampler's density at the start of a run and after each new rebuild."""
        sampler = self.state.sampler
        rows = [density_row(sampler, self.nimg, {})] if initial else []
        new = sampler.history[self._rebuilds_logged :]
        if new:
            rows.append(density_row(sampler, self.nimg, new[-1]))
        self._rebuilds_logged = len(sampler.history)
        if rows:
            append_jsonl(self.dir.sampler_log, rows)

    def _agree(self, flag: bool) -> bool:
        """Whether ``flag`` holds on any rank (a MAX all-reduce, which also synchronises the ranks)."""
        if self.ctx.world_size == 1:
            return flag
        value = torch.tensor(float(flag), device=self.ctx.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def _interrupt(self, where: str) -> NoReturn:
        if self.ctx.is_main:
            self.dir.update(status="interrupted", kimg=self.nimg / 1000)
        raise interrupted(where)

    # -- the run -------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Train to the budget, evaluating and checkpointing on schedule; returns the final run.json. A stop
        requested before (while the data loaded) stops the run before training."""
        ctx = self.ctx
        with stop_requests():
            if self._agree(requested() is not None):
                if ctx.is_main:
                    self.dir.update(status="interrupted")
                raise interrupted("before training")
            if ctx.is_main:
                claim_data_identity(self.dir.path.parent.parent, self.data)
            resumed = self.resume()
            if ctx.is_main:
                run_started(self.dir, self.spec, self.state, self.data, ctx, resumed)
                self.log_sampler(initial=not resumed)
                self.watchers = Watchers(
                    self.spec.watch, self.dir.path, self.spec.label, to_dict(self.spec.config), self.nimg
                )
            try:
                if resumed and self.evaluation_pending():
                    self.evaluate()
                self._loop()
            finally:
                if self.watchers is not None:
                    self.watchers.close()
            if ctx.is_main:
                return self.dir.update(
                    status="done",
                    kimg=self.nimg / 1000,
                    wall_time=round(self.state.wall_time, 2),
                    finished=now(),
                )
            return {}

    def _loop(self) -> None:
        ctx, budget, state = self.ctx, self.budget, self.state
        tick_nimg, ckpt_nimg = budget.tick_nimg, budget.checkpoint_nimg
        tick_start = time.perf_counter()
        if ctx.is_main:
            self.dir.update(compile=self.compile_record())
        while self.nimg < self.total_nimg:
            step_start = time.perf_counter()
            before = self.nimg
            compiling = state.compiled and self.compile_seconds is None
            self._loss_sum += self.train_step()
            step_seconds = time.perf_counter() - step_start
            if compiling:  # compile time is recorded apart: out of the wall time and the tick's sec/kimg
                step_seconds -= self.compile_seconds
                tick_start += self.compile_seconds
                self._tick_compile_seconds = self.compile_seconds
                if ctx.is_main:
                    self.dir.update(compile=self.compile_record())
            state.wall_time += max(step_seconds, 0.0)
            fault_point("step", self.nimg)
            if ctx.is_main:
                self.log_sampler()
            ticked = self.nimg // tick_nimg > before // tick_nimg or self.nimg >= self.total_nimg
            if ticked:
                self._tick(state.tick_start_nimg, tick_start)
                self._loss_sum.zero_()
                state.tick_start_nimg, tick_start = self.nimg, time.perf_counter()
            evaluate = self.nimg in self.eval_at  # evaluation points are multiples of the batch
            checkpointed = evaluate or self.nimg // ckpt_nimg > before // ckpt_nimg
            if checkpointed:  # before the evaluation: a stop or kill during it loses no training
                self.checkpoint()
            if evaluate:
                self.evaluate()
            if self._stop_requested(ticked) and self.nimg < self.total_nimg:
                if not checkpointed:
                    self.checkpoint()
                self._interrupt(f"at kimg {self.nimg / 1000}")

    def _stop_requested(self, ticked: bool) -> bool:
        """Whether to checkpoint and stop now. With several ranks the flag is agreed on (MAX all-reduce) at
        each tick, so that every rank stops at the same step; a single process reacts at the next step."""
        if self.ctx.world_size > 1 and not ticked:
            return False
        return self._agree(requested() is not None)

    def _tick(self, last_tick: int, tick_start: float) -> None:
        loss_sum = self._loss_sum
        if dist.is_initialized():
            dist.all_reduce(loss_sum)
        processed = max(self.nimg - last_tick, 1)
        sec_per_kimg = (time.perf_counter() - tick_start) / processed * 1000  # compile time excluded
        remaining = (self.total_nimg - self.nimg) / 1000 * sec_per_kimg
        evaluations = sum(point > self.nimg for point in self.eval_at)
        if evaluations and self._eval_seconds:  # the mean of this process's evaluations so far
            remaining += evaluations * sum(self._eval_seconds) / len(self._eval_seconds)
        counted = "" if not evaluations else f" incl. {evaluations} evaluation(s)"
        if evaluations and not self._eval_seconds:
            counted = f" + {evaluations} evaluation(s), timed at the first"
        compiled = self._tick_compile_seconds
        if self.ctx.is_main:
            row = {
                "nimg": self.nimg,
                "kimg": self.nimg / 1000,
                "loss": loss_sum.item() / processed,
                "sec_per_kimg": round(sec_per_kimg, 3),
                "wall_time": round(self.state.wall_time, 2),
                "lr": self.state.optimizer.param_groups[0]["lr"],
            }
            if compiled:
                row["compile_s"] = round(compiled, 2)
            append_jsonl(self.dir.stats, [row])
            if self.watchers is not None:
                self.watchers.log(self.nimg, {"train/loss": row["loss"], "train/sec_per_kimg": sec_per_kimg})
            print(
                f"[{self.spec.task}/{self.spec.sampler.label}/seed{self.spec.seed}] "
                f"kimg {self.nimg / 1000:.1f}/{self.total_nimg / 1000:.1f}  loss {row['loss']:.4f}  "
                f"sec/kimg {sec_per_kimg:.2f}  ETA {format_eta(remaining)}{counted}"
                + (f"  (compile {compiled:.1f} s apart)" if compiled else ""),
                flush=True,
            )
        self._tick_compile_seconds = 0.0


def zero_nonfinite_(grads: list[Tensor]) -> None:
    """Set the NaN and ±inf entries of every tensor of ``grads`` to zero, in place, as three operations
    however many tensors there are (one per tensor launches a kernel each, which costs small networks more
    than the cleaning itself): concatenated into one flat buffer, cleaned there, copied back at once."""
    if not grads:
        return
    # each gradient in its memory order (autograd lays them out densely, as their parameters): 1-D views
    views = [g.permute(sorted(range(g.ndim), key=lambda d: -g.stride(d))).view(-1) for g in grads]
    flat = torch.cat(views)
    torch.nan_to_num_(flat, nan=0.0, posinf=0.0, neginf=0.0)
    torch._foreach_copy_(views, list(flat.split([v.numel() for v in views])))


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
