"""The training loop of one run: one task, one sampler, one budget, one seed.

Budget and schedules are in processed examples (kimg, EDM's unit), so runs with other batch sizes or
GPU counts stay comparable. Every random draw of step k comes from a generator seeded by
(seed, processed examples): the global batch's data indices (the stream of per-epoch permutations of
the training set, position = processed examples), σ (the sampler's inverse CDF of uniforms), ε and
label dropout are drawn for the *global* batch on every rank and each rank keeps its slice; the
network's dropout uses the global RNG, reseeded from (seed, processed examples, rank). A resumed run
therefore continues the same random stream without saving RNG states, and a 2-process run draws exactly
what a 1-process run with the doubled batch draws (dropout aside).

Optimisation follows EDM: Adam (β = 0.9, 0.999, ε = 1e-8), learning rate ramped up linearly over
``lr_rampup_kimg``, EMA with a half-life in images (ramped by ``ema_rampup_ratio``), non-finite gradients
zeroed, optional gradient-norm clipping, bf16 autocast / channels_last / torch.compile on CUDA.
"""

from __future__ import annotations

import copy
import functools
import math
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from omegaconf import DictConfig, OmegaConf
from torch import Tensor, nn

from suite.checkpoint import load_latest_checkpoint, save_checkpoint
from suite.config import comparison_hash, config_hash, sampler_label, sampler_params
from suite.diffusion import EDMDenoiser, denoising_losses
from suite.distributed import DistContext, barrier, init_distributed
from suite.records import (
    SCHEMA_VERSION,
    RunDirectory,
    append_jsonl,
    code_version,
    host_info,
    now,
    package_versions,
    write_atomic,
)
from suite.sampler import NoiseSampler, build_sampler
from suite.solvers import SOLVERS, guided, karras_sigmas, nfe
from suite.task import TASKS, Task, TrainingData
from suite.weighting import build_weight

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR2)


class Interrupted(Exception):
    """The run checkpointed and stopped on SIGTERM/SIGUSR2; re-running the command resumes it."""


def step_seed(seed: int, nimg: int) -> int:
    """Seed of the step that starts at ``nimg`` processed examples."""
    return (seed * 1_000_003 + nimg) % (2**63 - 1)


def step_generator(seed: int, nimg: int, device: torch.device) -> torch.Generator:
    """The generator of the step that starts at ``nimg`` processed examples."""
    gen = torch.Generator(device=device)
    gen.manual_seed(step_seed(seed, nimg))
    return gen


@functools.lru_cache(maxsize=2)
def epoch_permutation(seed: int, n_data: int, epoch: int) -> Tensor:
    """The order of the data set in ``epoch`` (cached: a step reuses its epoch's permutation)."""
    return torch.randperm(n_data, generator=torch.Generator().manual_seed(seed * 7919 + epoch))


def batch_indices(seed: int, n_data: int, nimg: int, batch: int) -> Tensor:
    """Indices [nimg, nimg + batch) of the stream of per-epoch random permutations of the data set."""
    parts = []
    position, end = nimg, nimg + batch
    while position < end:
        epoch, offset = divmod(position, n_data)
        take = epoch_permutation(seed, n_data, epoch)[offset : offset + end - position]
        parts.append(take)
        position += take.numel()
    return torch.cat(parts)


def ema_beta(batch: int, nimg: int, halflife_kimg: float, rampup_ratio: float | None) -> float:
    """Per-step EMA decay for a half-life of ``halflife_kimg`` thousand images (EDM, Sec. C.2)."""
    halflife = halflife_kimg * 1000
    if rampup_ratio:
        halflife = min(halflife, nimg * rampup_ratio)
    return 0.5 ** (batch / max(halflife, 1e-8))


def evaluation_points(total_nimg: int, batch: int, points: int) -> list[int]:
    """Processed-example counts (multiples of the batch) at which to evaluate; the last is the end."""
    steps = math.ceil(total_nimg / batch)
    return sorted({math.ceil(steps * k / points) * batch for k in range(1, points + 1)})


class Trainer:
    """Holds the state of one run and advances it; ``run()`` trains, evaluates and records to the end."""

    def __init__(self, cfg: DictConfig, run_dir: Path, ctx: DistContext | None = None) -> None:
        self.cfg = cfg
        self.budget = cfg.budget
        self.ctx = ctx or init_distributed(cfg.device)
        self.dir = RunDirectory(run_dir)
        self.task: Task = TASKS.get(cfg.task.name)(cfg.task)
        self.data: TrainingData = self.task.load_data()
        device = self.ctx.device
        self.x = self.data.x.to(device)  # the small image sets live on the device for the whole run
        self.labels = None if self.data.labels is None else self.data.labels.to(device)
        self.weight = build_weight(cfg.task.loss_weight, float(cfg.task.sigma_data))
        self.sampler: NoiseSampler = build_sampler(
            cfg.sampler.name,
            float(cfg.task.sigma_min),
            float(cfg.task.sigma_max),
            self.weight,
            **sampler_params(cfg),
        )
        self.sampler.to(device)
        torch.manual_seed(int(cfg.seed))  # network initialisation
        net = self.task.build_network(self.budget.network)
        self.model = EDMDenoiser(net, float(cfg.task.sigma_data)).to(device)
        if self.budget.channels_last and device.type == "cuda":
            self.model = self.model.to(memory_format=torch.channels_last)
        self.ema = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=float(self.budget.lr), betas=(0.9, 0.999), eps=1e-8
        )
        self.ddp = (
            nn.parallel.DistributedDataParallel(
                self.model, device_ids=[device] if device.type == "cuda" else None
            )
            if self.ctx.world_size > 1
            else self.model
        )
        self.forward = torch.compile(self.ddp) if self.budget.compile and device.type == "cuda" else self.ddp
        self.batch = int(self.budget.batch)
        if self.batch % self.ctx.world_size:
            raise ValueError(f"budget.batch={self.batch} is not divisible by the {self.ctx.world_size} ranks")
        self.total_nimg = int(round(float(self.budget.kimg) * 1000))
        self.eval_at = evaluation_points(self.total_nimg, self.batch, int(self.budget.eval_points))
        self.nimg = 0
        self.wall_time = 0.0
        self._stop_signal: int | None = None
        self._rebuilds_logged = 0

    # -- state ---------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "ema": self.ema.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampler": self.sampler.state_dict(),
            "wall_time": self.wall_time,
            "config_hash": config_hash(self.cfg),
        }

    def resume(self) -> bool:
        """Load the newest checkpoint if there is one; drop records written after it."""
        state = load_latest_checkpoint(self.dir.checkpoints, self.ctx.device)
        if state is None:
            return False
        if state["config_hash"] != config_hash(self.cfg):
            raise ValueError(
                f"checkpoint in {self.dir.checkpoints} belongs to another config; use a new results dir"
            )
        self.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.load_state_dict(state["sampler"])
        self.nimg = int(state["nimg"])
        self.wall_time = float(state["wall_time"])
        self._rebuilds_logged = len(self.sampler.history)
        if self.ctx.is_main:
            self.dir.truncate_to(self.nimg)
        barrier()
        return True

    def checkpoint(self) -> None:
        if self.ctx.is_main:
            save_checkpoint(self.dir.checkpoints, self.nimg, self.state())
            self.dir.update(status="running", kimg=self.nimg / 1000, wall_time=self.wall_time)
        barrier()

    # -- one step ------------------------------------------------------------------------------------
    def train_step(self) -> Tensor:
        """One optimiser step on the global batch starting at ``self.nimg``; returns this rank's loss sum."""
        ctx, cfg = self.ctx, self.cfg
        gen = step_generator(int(cfg.seed), self.nimg, ctx.device)
        torch.manual_seed(step_seed(int(cfg.seed), self.nimg) + ctx.rank)  # the network's dropout masks
        per_rank = self.batch // ctx.world_size
        mine = slice(ctx.rank * per_rank, (ctx.rank + 1) * per_rank)
        index = batch_indices(int(cfg.seed), self.data.x.shape[0], self.nimg, self.batch)[mine]
        x0 = self.x[index.to(ctx.device)]
        sigma = self.sampler.sample(self.batch, gen, stratified=bool(self.budget.stratified))
        noise = torch.randn((self.batch, *x0.shape[1:]), generator=gen, device=ctx.device)[mine]
        sigma = sigma[mine]
        labels = None
        if self.task.num_classes:
            keep = torch.rand(self.batch, generator=gen, device=ctx.device)[mine] >= float(
                self.budget.label_dropout
            )
            onehot = nn.functional.one_hot(self.labels[index.to(ctx.device)], self.task.num_classes).float()
            labels = onehot * keep[:, None]
        if self.budget.channels_last and ctx.device.type == "cuda":
            x0, noise = (
                x0.contiguous(memory_format=torch.channels_last),
                noise.contiguous(memory_format=torch.channels_last),
            )
        autocast = torch.autocast(
            ctx.device.type, dtype=torch.bfloat16, enabled=self.budget.precision == "bf16"
        )
        with autocast:
            weighted, unweighted = denoising_losses(
                self.forward, x0, sigma, self.weight, noise, labels, self.sampler.importance_weight(sigma)
            )
        self.optimizer.zero_grad(set_to_none=True)
        (weighted.sum() / per_rank).backward()
        for p in self.model.parameters():
            if p.grad is not None:
                torch.nan_to_num_(p.grad, nan=0, posinf=0, neginf=0)
        if float(self.budget.grad_clip) > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), float(self.budget.grad_clip))
        ramp = min(1.0, self.nimg / max(float(self.budget.lr_rampup_kimg) * 1000, 1e-8))
        for group in self.optimizer.param_groups:
            group["lr"] = float(self.budget.lr) * ramp
        self.optimizer.step()
        self.sampler.observe(sigma, unweighted)
        self.nimg += self.batch
        beta = ema_beta(
            self.batch, self.nimg, float(self.budget.ema_halflife_kimg), self.budget.ema_rampup_ratio
        )
        with torch.no_grad():
            torch._foreach_lerp_(list(self.ema.parameters()), list(self.model.parameters()), 1 - beta)
        return weighted.detach().sum()

    # -- evaluation ----------------------------------------------------------------------------------
    def generate(self, n: int) -> Tensor:
        """n samples from the EMA model with the task's solver; the same latents at every evaluation."""
        cfg, ev = self.cfg, self.budget.eval
        gen = torch.Generator().manual_seed(int(ev.seed))
        sigmas = karras_sigmas(
            int(cfg.task.solver_steps), float(cfg.task.sigma_min), float(cfg.task.sigma_max)
        )
        solve = SOLVERS[cfg.task.solver]
        out = []
        for start in range(0, n, int(ev.batch_size)):
            m = min(int(ev.batch_size), n - start)
            latents = float(cfg.task.sigma_max) * torch.randn((m, *self.task.sample_shape), generator=gen)
            if self.task.num_classes:
                classes = torch.randint(self.task.num_classes, (m,), generator=gen)
                onehot = nn.functional.one_hot(classes, self.task.num_classes).float().to(self.ctx.device)
                denoise = guided(self.ema, onehot, float(ev.guidance), torch.zeros_like(onehot))
            else:

                def denoise(x: Tensor, s: Tensor) -> Tensor:
                    return self.ema(x, s, None)

            with torch.no_grad():
                out.append(solve(denoise, latents.to(self.ctx.device), sigmas).cpu())
        return torch.cat(out)

    def reference(self) -> Tensor:
        """The decoded training examples the metric compares against (a fixed random subset)."""
        n = min(int(self.budget.eval.reference), self.data.x.shape[0])
        pick = torch.randperm(self.data.x.shape[0], generator=torch.Generator().manual_seed(0))[:n]
        return self.task.decode(self.data.x[pick])

    def evaluate(self) -> list[dict[str, Any]]:
        """Generate, decode and score; returns the tidy rows of this evaluation point."""
        cfg, ev = self.cfg, self.budget.eval
        spec = self.task.metric(ev)
        t0 = time.perf_counter()
        samples = self.task.decode(self.generate(int(ev.samples)))
        value = self.task.evaluate(samples, self.reference(), ev)
        row = {
            "schema_version": SCHEMA_VERSION,
            "task": cfg.task.name,
            "modality": self.task.modality,
            "budget": cfg.budget.name,
            "sampler": sampler_label(cfg),
            "seed": int(cfg.seed),
            "nimg": self.nimg,
            "kimg": self.nimg / 1000,
            "metric": spec.name,
            "value": value,
            "higher_is_better": spec.higher_is_better,
            "substitute_metric": spec.substitute,
            "stand_in_data": self.data.stand_in,
            "data": self.data.variant,
            "solver": cfg.task.solver,
            "nfe": nfe(cfg.task.solver, int(cfg.task.solver_steps)),
            "n_samples": int(ev.samples),
            "n_reference": min(int(ev.reference), self.data.x.shape[0]),
            "guidance": float(ev.guidance),
            "importance_weighting": bool(self.sampler.hyperparameters().get("importance_correction", False)),
            "comparison_hash": comparison_hash(cfg),
            "config_hash": config_hash(cfg),
            "eval_seconds": round(time.perf_counter() - t0, 2),
            "wall_time": round(self.wall_time, 2),
        }
        return [row]

    # -- records -------------------------------------------------------------------------------------
    def log_sampler(self, initial: bool = False) -> None:
        """Append the sampler's density at the start of a run and after each new rebuild."""
        rows = [self._density_row({})] if initial else []
        new = self.sampler.history[self._rebuilds_logged :]
        if new:
            rows.append(self._density_row(new[-1]))
        self._rebuilds_logged = len(self.sampler.history)
        if rows:
            append_jsonl(self.dir.sampler_log, rows)

    def _density_row(self, rebuild: Mapping[str, Any]) -> dict[str, Any]:
        u = torch.linspace(
            math.log(self.sampler.sigma_min), math.log(self.sampler.sigma_max), 129, dtype=torch.float64
        )
        row = {
            "nimg": self.nimg,
            "kimg": self.nimg / 1000,
            "u": u.tolist(),
            "density": self.sampler.density_on(u).cpu().tolist(),
            **dict(rebuild),
        }
        if (p := self.sampler.profile()) is not None:
            row["profile"] = {k: v.cpu().tolist() for k, v in p.items()}
        return row

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._stop_signal = signum

    # -- the run -------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Train to the budget, evaluating and checkpointing on schedule; returns the final run.json."""
        ctx, cfg = self.ctx, self.cfg
        previous = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        try:
            resumed = self.resume()
            if ctx.is_main:
                write_atomic(self.dir.path / "config.yaml", OmegaConf.to_yaml(cfg).encode())
                self.dir.update(
                    status="running",
                    task=cfg.task.name,
                    sampler=sampler_label(cfg),
                    sampler_name=cfg.sampler.name,
                    seed=int(cfg.seed),
                    budget=cfg.budget.name,
                    config_hash=config_hash(cfg),
                    comparison_hash=comparison_hash(cfg),
                    sampler_hyperparameters=self.sampler.hyperparameters(),
                    data=self.data.variant,
                    stand_in_data=self.data.stand_in,
                    world_size=ctx.world_size,
                    device=torch.cuda.get_device_name(ctx.device) if ctx.device.type == "cuda" else "cpu",
                    packages=package_versions(),
                    **code_version(),
                    **host_info(),
                    started=self.dir.info().get("started", now()),
                    resumed_from_kimg=self.nimg / 1000 if resumed else None,
                    total_kimg=self.total_nimg / 1000,
                    error=None,
                )
                self.log_sampler(initial=not resumed)
            self._loop()
            if ctx.is_main:
                return self.dir.update(
                    status="done", kimg=self.nimg / 1000, wall_time=round(self.wall_time, 2), finished=now()
                )
            return {}
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _loop(self) -> None:
        ctx, budget = self.ctx, self.budget
        tick_nimg = int(float(budget.tick_kimg) * 1000)
        ckpt_nimg = int(float(budget.checkpoint_kimg) * 1000)
        last_tick, tick_start = self.nimg, time.perf_counter()
        loss_sum = torch.zeros((), device=ctx.device)
        while self.nimg < self.total_nimg:
            step_start = time.perf_counter()
            before = self.nimg
            loss_sum += self.train_step()
            self.wall_time += time.perf_counter() - step_start
            if ctx.is_main:
                self.log_sampler()
            ticked = self.nimg - last_tick >= tick_nimg or self.nimg >= self.total_nimg
            if ticked:
                self._tick(loss_sum, last_tick, tick_start)
                loss_sum.zero_()
                last_tick, tick_start = self.nimg, time.perf_counter()
            evaluate = any(before < point <= self.nimg for point in self.eval_at)
            if evaluate:
                if ctx.is_main:
                    append_jsonl(self.dir.records, self.evaluate())
                barrier()
            if evaluate or self.nimg // ckpt_nimg > before // ckpt_nimg:
                self.checkpoint()
            if self._stop_requested(ticked) and self.nimg < self.total_nimg:
                if not evaluate and self.nimg // ckpt_nimg == before // ckpt_nimg:
                    self.checkpoint()
                if ctx.is_main:
                    self.dir.update(status="interrupted", kimg=self.nimg / 1000)
                raise Interrupted(
                    f"stopped by signal {self._stop_signal} at kimg {self.nimg / 1000}; re-run to resume"
                )

    def _stop_requested(self, ticked: bool) -> bool:
        """Whether to checkpoint and stop now. With several ranks the flag is agreed on (MAX all-reduce) at
        each tick, so that every rank stops at the same step; a single process reacts at the next step."""
        if self.ctx.world_size == 1:
            return self._stop_signal is not None
        if not ticked:
            return False
        flag = torch.tensor(float(self._stop_signal is not None), device=self.ctx.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def _tick(self, loss_sum: Tensor, last_tick: int, tick_start: float) -> None:
        if dist.is_initialized():
            dist.all_reduce(loss_sum)
        processed = max(self.nimg - last_tick, 1)
        sec_per_kimg = (time.perf_counter() - tick_start) / processed * 1000
        remaining = (self.total_nimg - self.nimg) / 1000 * sec_per_kimg
        if self.ctx.is_main:
            row = {
                "nimg": self.nimg,
                "kimg": self.nimg / 1000,
                "loss": loss_sum.item() / processed,
                "sec_per_kimg": round(sec_per_kimg, 3),
                "wall_time": round(self.wall_time, 2),
                "lr": self.optimizer.param_groups[0]["lr"],
            }
            append_jsonl(self.dir.stats, [row])
            print(
                f"[{self.cfg.task.name}/{sampler_label(self.cfg)}/seed{self.cfg.seed}] "
                f"kimg {self.nimg / 1000:.1f}/{self.total_nimg / 1000:.1f}  loss {row['loss']:.4f}  "
                f"sec/kimg {sec_per_kimg:.2f}  ETA {time.strftime('%H:%M:%S', time.gmtime(remaining))}",
                flush=True,
            )


def train(cfg: DictConfig, run_dir: str | Path) -> dict[str, Any]:
    """Train, evaluate and record one run into ``run_dir``, resuming from its newest checkpoint."""
    run_dir = Path(run_dir)
    ctx = init_distributed(cfg.device)
    try:
        return Trainer(cfg, run_dir, ctx).run()
    except Interrupted:
        raise
    except BaseException as err:
        if ctx.is_main:
            RunDirectory(run_dir).update(status="failed", error=f"{type(err).__name__}: {err}", failed=now())
        raise
