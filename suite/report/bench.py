"""``suite bench train|sampler|eval|sweep``: the runner's speed, measured side by side in one run.

* ``train``: examples per second of ``Trainer.train_step`` (data indexing, σ draw, forward, backward,
  Adam, sampler observation, EMA) for each precision/compile variant the runner supports: ``fp32``,
  ``bf16`` (autocast; torch's CPU autocast runs it too) and ``bf16+compile`` (torch.compile, which
  ``budget.compile: auto`` applies on CUDA only, so it is skipped on the CPU). Model FLOPs per example are
  counted with ``torch.utils.flop_counter.FlopCounterMode`` over one step (forward and backward of the
  network; 2 FLOPs per multiply-add) and set against the device's dense square-matmul rate in bf16 and fp32,
  measured in the same run. Peak memory: ``torch.cuda.max_memory_allocated`` on CUDA, the process's peak
  resident set size (``getrusage``, cumulative over the run) on the CPU.
* ``sampler``: every configured sampler's cost per training step: drawing σ for the global batch (with
  its importance weight), observing the batch's losses as the training step does (``observe_draws``: no
  host read) and the amortised rebuild, against one training step of the task's network at the same batch
  (default 512; the target is at most 1%), measured in the same run. Adaptive samplers are first driven
  through their warm-up; the timed loop is then a whole number of refresh periods, so it holds exactly one
  rebuild per ``refresh_every`` steps. The observed
  losses are a synthetic MMSE-like curve of the drawn σ, computed beforehand on a copy of the sampler
  fed the same generator stream, so the timed loop holds sampler work only. This wall time includes the
  kernel launches; on CUDA the GPU time of draw + observe is measured too, each step queued behind a
  busy-wait kernel so that its kernels run back to back (the cost inside a GPU-bound training loop, whose
  launches overlap the previous work), plus the amortised rebuild (which synchronises).
* ``eval``: samples per second of the EMA model with the task's solver at its NFE, and the time of each
  of the task's metrics on those samples against the cached reference (after a warm-up call that loads
  the featuriser). Then the precision check: each metric on the same network's samples generated in fp32
  from three latent seeds and in bf16 (autocast around the network) from the first; the bf16 − fp32
  difference on the same latents is set against the fp32 values' seed-to-seed standard deviation, and
  ``budget.eval.precision`` stays fp32 unless the difference lies inside it.
* ``sweep``: for each K of ``--runs`` (1 included, the baseline), K processes on one device, each as
  ``suite run --runs-per-gpu K`` starts them (``spawn``, ``OMP_NUM_THREADS`` = cores // K), each building
  the task's trainer as ``train`` does and, after warm-up, timing ``--steps`` training steps and then the
  generation of ``--samples`` samples as ``eval`` does, the K processes starting each phase together (a
  barrier). Aggregate rates are K × the work of one process over the wall time from the first process's
  start to the last one's end (``time.monotonic``, one clock for all processes); the ratio column divides
  them by the single run's. Peak memory is summed over the processes: ``torch.cuda.max_memory_allocated``
  of each on CUDA (the CUDA context each process holds comes on top), each one's peak resident set size
  on the CPU. The processes import ``$SUITE_PLUGINS`` first, as SLURM jobs do. Printed as a markdown
  table.

CUDA work is timed with CUDA events between synchronisations, CPU work with ``time.perf_counter``; every
figure is the mean over the timed calls after untimed warm-up calls. ``--out`` writes the report as JSON.
"""

from __future__ import annotations

import copy
import gc
import json
import math
import multiprocessing
import resource
import shlex
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch import Tensor

from suite.config import compose_run, group_options
from suite.noise.sampler import NoiseSampler
from suite.records import host_info, now, package_versions
from suite.run.assembly import build_loss_weight, build_noise_sampler, build_task
from suite.run.solvers import nfe
from suite.run.spec import RunSpec, run_spec
from suite.run.training import Trainer

# name -> (budget.precision, budget.compile)
VARIANTS: dict[str, tuple[str, bool]] = {
    "fp32": ("fp32", False),
    "bf16": ("bf16", False),
    "bf16+compile": ("bf16", True),
}
SAMPLER_BATCH = 512  # σ for a batch of 512: the batch the ≤ 1% overhead target is stated for
OVERHEAD_LIMIT_PCT = 1.0  # ... costs at most 1% of one training step
MIN_SAMPLER_STEPS = 200  # timed sampler steps at least (rounded up to whole refresh periods)
REBUILD_CALLS = 3
DEVICE_CALLS = 100  # sampler steps timed for their GPU time alone (CUDA)
BUSY_CYCLES = 4_000_000  # torch.cuda._sleep before each of them: ~2 ms at ~2 GHz
# (warm-up calls, timed calls) of a training step, by device type
TRAIN_STEPS = {"cpu": (1, 3), "cuda": (10, 50)}
SAMPLER_TRAIN_STEPS = {"cpu": (1, 2), "cuda": (10, 30)}
CPU_EVAL_SAMPLES = 8  # generated samples on the CPU unless --samples says otherwise
PRECISION_SEEDS = 3  # fp32 generation seeds whose spread the bf16 − fp32 difference is set against
MATMUL_SIZE = {"cpu": 1024, "cuda": 8192}
CPU_MATMUL_SECONDS = 0.5


# -- measuring ---------------------------------------------------------------------------------------
def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn: Callable[[int], object], calls: int, device: torch.device) -> float:
    """Mean seconds of ``fn(i)`` over ``calls`` back-to-back calls (CUDA: events between synchronisations)."""
    if calls < 1:
        raise ValueError(f"need at least one timed call, got {calls}")
    if device.type == "cuda":
        synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(calls):
            fn(i)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000 / calls
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - t0) / calls


def device_seconds_per_call(fn: Callable[[int], object], calls: int, device: torch.device) -> dict[str, Any]:
    """GPU time of ``fn(i)``'s kernels per call, each call queued behind a busy-wait kernel so that its
    kernels run back to back: the work's cost inside a GPU-bound loop, where launches overlap earlier work.

    Valid when every call is queued faster than the busy-wait runs (``valid``). CUDA only.
    """
    synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(BUSY_CYCLES)
    end.record()
    end.synchronize()
    busy_s = start.elapsed_time(end) / 1000
    pairs, host = [], 0.0
    for i in range(calls):
        torch.cuda._sleep(BUSY_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        fn(i)
        end.record()
        host = max(host, time.perf_counter() - t0)
        pairs.append((start, end))
    synchronize(device)
    seconds = sum(s.elapsed_time(e) for s, e in pairs) / 1000 / calls
    return {"seconds": seconds, "calls": calls, "busy_s": busy_s, "max_host_s": host, "valid": host < busy_s}


def matmul_tflops(dtype: torch.dtype, device: torch.device) -> float:
    """Dense square-matmul rate (TFLOP/s, 2n³ per product) of ``dtype`` on ``device``, measured now.

    CUDA: n = 8192, 3 untimed and 10 timed products. CPU: n = 1024, as many products as fill ~0.5 s.
    """
    n = MATMUL_SIZE[device.type]
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=gen, device=device).to(dtype)
    b = torch.randn(n, n, generator=gen, device=device).to(dtype)
    if device.type == "cuda":
        warm, calls = 3, 10
    else:
        t0 = time.perf_counter()
        torch.mm(a, b)
        warm, calls = 0, max(2, math.ceil(CPU_MATMUL_SECONDS / max(time.perf_counter() - t0, 1e-6)))
    for _ in range(warm):
        torch.mm(a, b)
    seconds = seconds_per_call(lambda _: torch.mm(a, b), calls, device)
    return 2 * n**3 / seconds / 1e12


def flops_per_example(trainer: Trainer) -> float:
    """Model FLOPs of one training step (forward and backward, FlopCounterMode) per example.

    Counted through the uncompiled network, whatever the variant: compilation changes no FLOP count.
    """
    from torch.utils.flop_counter import FlopCounterMode

    state = trainer.state
    compiled, state.forward = state.forward, state.model
    try:
        with FlopCounterMode(display=False) as counter:
            trainer.train_step()
    finally:
        state.forward = compiled
    return counter.get_total_flops() / trainer.batch


def peak_memory_mib(device: torch.device) -> float:
    """Peak CUDA memory allocated since the last reset, or the process's peak RSS on the CPU (MiB)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def release(device: torch.device) -> None:
    """Free what the previous measurement left behind."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


@dataclass(frozen=True)
class BenchRequest:
    """What ``suite bench train|sampler|eval|sweep`` measures: the kind, the task and budget with their
    overrides, the device, and the options of that kind (None: its default)."""

    what: str  # train, sampler, eval or sweep
    task: str
    budget: str
    device: str  # auto, cpu or cuda
    overrides: tuple[str, ...] = ()
    batch: int | None = None
    steps: int | None = None
    variants: str | None = None
    runs: str | None = None
    samples: int | None = None
    out: str | None = None


# -- configs -----------------------------------------------------------------------------------------
def compose(request: BenchRequest, sampler: str = "edm", extra: list[str] | None = None) -> RunSpec:
    """The run spec of the bench: task, sampler, budget, the command's overrides, device and ``extra``."""
    return run_spec(
        compose_run(
            request.task,
            sampler,
            request.budget,
            [*request.overrides, f"device={request.device}", *(extra or [])],
        )
    )


def device_of(request: BenchRequest) -> torch.device:
    """The device ``--device`` resolves to (auto: CUDA when available)."""
    if request.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"unknown device {request.device!r}; valid: auto, cpu, cuda")
    if request.device == "cpu" or (request.device == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def steps_of(
    request: BenchRequest, defaults: dict[str, tuple[int, int]], device: torch.device
) -> tuple[int, int]:
    """(warm-up, timed) calls: the device's defaults, the timed count replaced by ``--steps``."""
    warm, timed = defaults[device.type]
    return warm, int(request.steps) if request.steps else timed


def time_train_step(trainer: Trainer, warm: int, timed: int) -> tuple[float, float]:
    """(seconds of the first step, mean seconds per step over ``timed`` steps after ``warm`` more)."""
    device = trainer.ctx.device
    t0 = time.perf_counter()
    trainer.train_step()
    synchronize(device)
    first = time.perf_counter() - t0
    for _ in range(max(warm - 1, 0)):
        trainer.train_step()
    return first, seconds_per_call(lambda _: trainer.train_step(), timed, device)


def network_summary(trainer: Trainer) -> dict[str, Any]:
    """Parameter count and shape settings of the trained network."""
    preset = trainer.task.network
    return {
        "parameters": sum(p.numel() for p in trainer.state.model.parameters()),
        "network": OmegaConf.to_container(preset, resolve=True)
        if OmegaConf.is_config(preset)
        else dict(preset),
        "channels_last": trainer.state.channels_last,
        "sample_shape": list(trainer.task.sample_shape),
    }


# -- train -------------------------------------------------------------------------------------------
def parse_variants(spec: str | None) -> list[str]:
    """``--variants`` as a list of known variant names (default: all)."""
    names = list(VARIANTS) if not spec else [v.strip() for v in spec.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; valid variants: {', '.join(VARIANTS)}")
    return names


def bench_train(request: BenchRequest) -> dict[str, Any]:
    """Throughput, FLOPs, achieved rate and peak memory of a training step per precision/compile variant."""
    variants = parse_variants(request.variants)
    device = device_of(request)
    batch = int(request.batch or compose(request).budget.batch)
    warm, timed = steps_of(request, TRAIN_STEPS, device)
    peak = {"bf16": matmul_tflops(torch.bfloat16, device), "fp32": matmul_tflops(torch.float32, device)}
    rows: list[dict[str, Any]] = []
    notes = [
        f"matmul peak measured now: bf16 {peak['bf16']:.3g} TFLOP/s, fp32 {peak['fp32']:.3g} TFLOP/s "
        f"(n = {MATMUL_SIZE[device.type]}; CUDA TF32 matmul "
        f"{'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}, cuDNN TF32 "
        f"{'on' if torch.backends.cudnn.allow_tf32 else 'off'})",
        "FLOPs: FlopCounterMode over one step's forward + backward, 2 per multiply-add",
    ]
    if device.type == "cpu":
        notes.append("bf16 runs under torch's CPU autocast; peak memory on the CPU is the process's peak RSS")
    flops: float | None = None
    extra: dict[str, Any] = {}
    for name in variants:
        precision, compiled = VARIANTS[name]
        if compiled and device.type != "cuda":
            rows.append(
                {
                    "variant": name,
                    "skipped": "torch.compile: budgets compile on CUDA only unless compile=true "
                    "(on the CPU inductor builds a C++ kernel per fused op: minutes)",
                }
            )
            continue
        release(device)
        spec = compose(
            request,
            extra=[
                f"budget.batch={batch}",
                f"budget.precision={precision}",
                f"budget.compile={str(compiled).lower()}",
            ],
        )
        with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
            trainer = Trainer(spec, Path(tmp))
            try:
                first, seconds = time_train_step(trainer, warm, timed)
            except Exception as err:  # torch.compile needs a working compiler tool chain; keep the rest
                if not compiled:
                    raise
                rows.append({"variant": name, "skipped": f"failed: {type(err).__name__}: {err}"})
                continue
            memory = peak_memory_mib(device)
            if flops is None:
                flops = flops_per_example(trainer)
                extra = network_summary(trainer) | {"data": trainer.data.variant}
            del trainer
        rate = batch / seconds
        achieved = flops * rate / 1e12
        rows.append(
            {
                "variant": name,
                "precision": precision,
                "compile": compiled,
                "examples_per_s": rate,
                "step_ms": seconds * 1e3,
                "first_step_s": first,
                "gflop_per_example": flops / 1e9,
                "tflops": achieved,
                "pct_of_bf16_matmul": 100 * achieved / peak["bf16"],
                "pct_of_fp32_matmul": 100 * achieved / peak["fp32"],
                "peak_memory_mib": memory,
            }
        )
    release(device)
    columns = [
        ("variant", "variant"),
        ("examples_per_s", "ex/s"),
        ("step_ms", "ms/step"),
        ("first_step_s", "1st step s"),
        ("gflop_per_example", "GFLOP/ex"),
        ("tflops", "TFLOP/s"),
        ("pct_of_bf16_matmul", "% bf16 mm"),
        ("pct_of_fp32_matmul", "% fp32 mm"),
        ("peak_memory_mib", "peak MiB"),
    ]
    return {
        "batch": batch,
        "warmup_steps": warm,
        "timed_steps": timed,
        "matmul_tflops": peak,
        "rows": rows,
        "columns": columns,
        "notes": notes,
        **extra,
    }


# -- sampler -----------------------------------------------------------------------------------------
def synthetic_loss(sigma: Tensor, dims: int, sigma_data: float, gen: torch.Generator) -> Tensor:
    """An MMSE-like per-sample x₀ loss d·σ²σ_d²/(σ² + σ_d²) with log-normal scatter (sd 0.3)."""
    s2 = sigma.to(torch.float64).square()
    scatter = (0.3 * torch.randn(sigma.shape, generator=gen, device=sigma.device, dtype=torch.float64)).exp()
    return (dims * s2 * sigma_data**2 / (s2 + sigma_data**2) * scatter).to(sigma.dtype)


def sampler_cost(spec: RunSpec, batch: int, device: torch.device, min_steps: int) -> dict[str, Any]:
    """Seconds per training step of one sampler: draw (+ importance weight), and draw + observe + rebuilds."""
    sigma_data = spec.diffusion.sigma_data
    sampler = build_noise_sampler(spec, build_loss_weight(spec))
    sampler.to(device)
    dims = math.prod(build_task(spec).sample_shape)
    stratified = spec.budget.stratified
    warmup = int(getattr(sampler, "warmup_steps", 0))
    every = int(getattr(sampler, "refresh_every", 1))
    steps = every * max(2, math.ceil(min_steps / every))
    noise = torch.Generator(device=device).manual_seed(1)

    def draw(s: NoiseSampler, gen: torch.Generator) -> Tensor:
        sigma = s.sample(batch, gen, stratified=stratified)
        s.importance_weight(sigma)
        return sigma

    gen = torch.Generator(device=device).manual_seed(0)
    for _ in range(warmup):  # past the first rebuild: the steady state
        sigma = draw(sampler, gen)
        sampler.observe_draws(sigma, synthetic_loss(sigma, dims, sigma_data, noise))
    probe, gen = copy.deepcopy(sampler), torch.Generator(device=device).manual_seed(1)
    losses = []
    for _ in range(steps):  # the losses of the draws the timed loop will make
        sigma = draw(probe, gen)
        losses.append(synthetic_loss(sigma, dims, sigma_data, noise))
        probe.observe_draws(sigma, losses[-1])
    del probe

    gen = torch.Generator(device=device).manual_seed(1)
    draw_s = seconds_per_call(lambda _: draw(sampler, gen), steps, device)
    device_time = None
    if device.type == "cuda" and hasattr(torch.cuda, "_sleep"):  # a copy in the same state, within a period
        twin, gen = copy.deepcopy(sampler), torch.Generator(device=device).manual_seed(1)
        calls = max(1, min(DEVICE_CALLS, every - 1)) if sampler.adaptive else DEVICE_CALLS
        device_time = device_seconds_per_call(
            lambda i: twin.observe_draws(draw(twin, gen), losses[i]), calls, device
        )
        del twin
    gen = torch.Generator(device=device).manual_seed(1)
    rebuilds_before = len(getattr(sampler, "history", []))
    step_s = seconds_per_call(lambda i: sampler.observe_draws(draw(sampler, gen), losses[i]), steps, device)
    rebuilds = len(getattr(sampler, "history", [])) - rebuilds_before
    rebuild_s = 0.0
    if sampler.adaptive:
        rebuild_s = seconds_per_call(lambda _: sampler.rebuild(), REBUILD_CALLS, device)
    row = {
        "sampler": spec.sampler.name,
        "adaptive": bool(sampler.adaptive),
        "timed_steps": steps,
        "rebuilds_timed": rebuilds,
        "warmup_steps": warmup,
        "refresh_every": every if sampler.adaptive else None,
        "draw_us": draw_s * 1e6,
        "step_us": step_s * 1e6,
        "rebuild_ms": rebuild_s * 1e3,
        "amortised_rebuild_us": rebuild_s / every * 1e6,
    }
    if device_time is not None:
        row["device_step_us"] = (device_time["seconds"] + rebuild_s / every) * 1e6
        row["device_time"] = device_time
    return row


def bench_sampler(request: BenchRequest) -> dict[str, Any]:
    """Every sampler's cost per training step as a percentage of the task's training step, in one run."""
    device = device_of(request)
    batch = int(request.batch or SAMPLER_BATCH)
    warm, timed = steps_of(request, SAMPLER_TRAIN_STEPS, device)
    spec = compose(request, extra=[f"budget.batch={batch}"])
    release(device)
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        trainer = Trainer(spec, Path(tmp))
        _, train_s = time_train_step(trainer, warm, timed)
        extra = network_summary(trainer) | {"data": trainer.data.variant}
        del trainer
    release(device)
    rows = []
    for name in group_options("sampler"):
        row = sampler_cost(
            compose(request, name, [f"budget.batch={batch}"]), batch, device, MIN_SAMPLER_STEPS
        )
        row["pct_of_train_step"] = 100 * row["step_us"] / 1e6 / train_s
        if "device_step_us" in row:
            row["device_pct_of_train_step"] = 100 * row["device_step_us"] / 1e6 / train_s
        rows.append(row)
    worst = max(row["pct_of_train_step"] for row in rows)
    on_device = [row["device_pct_of_train_step"] for row in rows if "device_pct_of_train_step" in row]
    worst_device = max(on_device) if on_device else None
    valid = all(row["device_time"]["valid"] for row in rows if "device_time" in row)
    if worst <= OVERHEAD_LIMIT_PCT:
        verdict = "PASS"
    elif worst_device is not None and worst_device <= OVERHEAD_LIMIT_PCT and valid:
        verdict = "PASS on GPU time only"
    else:
        verdict = "FAIL"
    notes = [
        f"training step: {train_s * 1e3:.3g} ms at batch {batch} ({spec.budget.precision}, "
        f"{extra['parameters']:,} parameters, {timed} timed steps)",
        "draw+observe+rebuild = wall time per step of drawing σ for the batch (+ importance weight), "
        "observing its losses and the rebuilds, over whole refresh periods after the warm-up (launch "
        "overhead included); amortised = one direct rebuild / refresh_every",
        f"{verdict}: largest overhead {worst:.3g}% of a training step (limit {OVERHEAD_LIMIT_PCT:g}%)",
    ]
    columns = [
        ("sampler", "sampler"),
        ("draw_us", "draw µs"),
        ("step_us", "draw+observe+rebuild µs"),
        ("rebuild_ms", "rebuild ms"),
        ("amortised_rebuild_us", "amortised µs"),
        ("rebuilds_timed", "rebuilds"),
        ("pct_of_train_step", "% of train step"),
    ]
    if worst_device is not None:
        notes.insert(
            2,
            "GPU µs = GPU time of draw+observe, its kernels queued behind a busy GPU (the cost "
            "inside a GPU-bound training loop, launches hidden), + the amortised rebuild",
        )
        notes[-1] += f"; {worst_device:.3g}% on GPU time{'' if valid else ' (NOT VALID: launches too slow)'}"
        columns += [("device_step_us", "GPU µs"), ("device_pct_of_train_step", "GPU % of step")]
    return {
        "batch": batch,
        "train_step_ms": train_s * 1e3,
        "train_timed_steps": timed,
        "precision": spec.budget.precision,
        "overhead_limit_pct": OVERHEAD_LIMIT_PCT,
        "max_pct_of_train_step": worst,
        "max_device_pct_of_train_step": worst_device,
        "verdict": verdict,
        "rows": rows,
        "columns": columns,
        "notes": notes,
        **extra,
    }


# -- eval --------------------------------------------------------------------------------------------
def bench_eval(request: BenchRequest) -> dict[str, Any]:
    """Samples per second at the task's NFE (EMA model, task solver) and the time of each of its metrics."""
    from suite.metrics import EvalInputs
    from suite.run.evaluation import Evaluator

    device = device_of(request)
    spec = compose(request, extra=[f"budget.eval.batch_size={request.batch}"] if request.batch else [])
    ev = spec.budget.eval
    n = int(request.samples or (ev.samples if device.type == "cuda" else min(ev.samples, CPU_EVAL_SAMPLES)))
    if n < 2:
        raise ValueError(f"--samples must be at least 2 (a covariance needs 2 samples), got {n}")
    calls = nfe(spec.diffusion.solver, spec.diffusion.solver_steps)
    release(device)
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        trainer = Trainer(spec, Path(tmp))
        evaluator = Evaluator(spec, trainer.task, trainer.data, device)
        sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
        model = trainer.state.ema
        evaluator.generate(model, 2, sigmas, float(ev.guidance))  # warm-up
        synchronize(device)
        t0 = time.perf_counter()
        x, matched = evaluator.generate(model, n, sigmas, float(ev.guidance))
        synchronize(device)
        generate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        inputs = EvalInputs(
            generated=trainer.task.decode_generated(x, model, {} if matched is None else matched.cond),
            reference=evaluator.reference(),
            matched=None if matched is None else trainer.task.decode_reference(matched),
        )
        decode_s = time.perf_counter() - t0
        rows = [
            {
                "what": "generate",
                "seconds": generate_s,
                "rate": n / generate_s,
                "unit": "samples/s",
                "nfe": calls,
                "n": n,
            }
        ]
        for metric in evaluator.metrics:
            metric(inputs)  # warm-up: loads weights, caches the reference features
            t0 = time.perf_counter()
            value = metric(inputs)["value"]
            seconds = time.perf_counter() - t0
            rows.append(
                {
                    "what": metric.spec.name,
                    "seconds": seconds,
                    "rate": n / seconds,
                    "unit": "samples/s",
                    "n": n,
                    "value": value,
                }
            )
        precision = compare_precision(evaluator, trainer.task, model, n, sigmas, float(ev.guidance))
        for row in precision:
            name = row["metric"]
            rows.append({"what": f"{name} fp32 (seed {ev.seed})", "n": n, "value": row["fp32"]})
            rows.append({"what": f"{name} bf16 (seed {ev.seed})", "n": n, "value": row["bf16"]})
            rows.append({"what": f"{name} bf16 − fp32", "n": n, "value": row["difference"]})
            spread = f"{name} fp32 sd over {PRECISION_SEEDS} seeds"
            rows.append({"what": spread, "n": n, "value": row["fp32_sd"]})
        parts: dict[str, Callable[[], dict[str, float]]] = {}
        for metric in evaluator.metrics:
            for label, part in metric.bench_parts().items():
                parts.setdefault(label, part)
        for label, part in parts.items():
            timed = part()
            rows.append(
                {
                    "what": label,
                    "seconds": timed["seconds"],
                    "rate": timed["n"] / timed["seconds"],
                    "unit": "samples/s",
                    "n": int(timed["n"]),
                    "value": timed["value"],
                }
            )
        extra = network_summary(trainer) | {
            "data": trainer.data.variant,
            "decode_s": decode_s,
            "n_reference": evaluator.n_reference,
        }
        del trainer, evaluator
    release(device)
    notes = [
        f"generate: the EMA network with the task's solver from σ_max, {ev.precision}, in chunks of "
        "eval.batch_size",
        "metric rows: one call on the decoded samples against the cached reference (second call, after "
        "a warm-up that loads the featuriser and caches the reference features)",
    ]
    columns = [
        ("what", "what"),
        ("seconds", "s"),
        ("rate", "rate"),
        ("unit", "unit"),
        ("nfe", "NFE"),
        ("n", "samples"),
        ("value", "value"),
    ]
    for row in precision:
        verdict = "inside" if row["inside_spread"] else "outside"
        keep = "bf16 may be the default" if row["inside_spread"] else "fp32 stays the default"
        notes.append(
            f"{row['metric']}: bf16 generation (autocast around the network) − fp32 on the same latents = "
            f"{row['difference']:.4g}, {verdict} the fp32 seed-to-seed sd {row['fp32_sd']:.4g} "
            f"({PRECISION_SEEDS} latent seeds): {keep}"
        )
    return {"rows": rows, "columns": columns, "notes": notes, "precision": precision, **extra}


def compare_precision(
    evaluator: Any, task: Any, model: torch.nn.Module, n: int, sigmas: Tensor, guidance: float
) -> list[dict[str, Any]]:
    """Each metric on ``n`` samples of the same network generated in fp32 from ``PRECISION_SEEDS`` latent
    seeds and in bf16 from the first: the bf16 − fp32 difference at the same latents, against the sample
    standard deviation of the fp32 values over the seeds (inside the spread when |difference| ≤ sd), and
    the largest difference between the two precisions' samples in model space."""
    from suite.metrics import EvalInputs

    first = evaluator.spec.budget.eval.seed
    reference = evaluator.reference()

    def scores(seed: int, precision: str) -> tuple[dict[str, float], Tensor]:
        x, matched = evaluator.generate(model, n, sigmas, guidance, seed=seed, precision=precision)
        inputs = EvalInputs(
            generated=task.decode(x, model),
            reference=reference,
            matched=None if matched is None else task.decode_reference(matched),
        )
        return {metric.spec.name: float(metric(inputs)["value"]) for metric in evaluator.metrics}, x

    (fp32, x32), *others = [scores(first + k, "fp32") for k in range(PRECISION_SEEDS)]
    bf16, x16 = scores(first, "bf16")
    apart = (x16.float() - x32.float()).abs().max().item()  # in model space, before any decoding
    fp32 = [fp32, *(values for values, _ in others)]
    rows = []
    for name, value in bf16.items():
        values = [seed_scores[name] for seed_scores in fp32]
        sd = statistics.stdev(values)
        difference = value - values[0]
        rows.append(
            {
                "metric": name,
                "fp32": values[0],
                "bf16": value,
                "difference": difference,
                "fp32_seeds": values,
                "fp32_sd": sd,
                "inside_spread": abs(difference) <= sd,
                "samples_max_abs_difference": apart,
            }
        )
    return rows


# -- sweep -------------------------------------------------------------------------------------------
def parse_runs(spec: str) -> list[int]:
    """``--runs`` as a list of distinct positive counts that includes 1 (the baseline)."""
    try:
        counts = [int(k) for k in spec.split(",") if k.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts) or 1 not in counts:
        raise ValueError(
            f"--runs {spec!r}: give a comma list of distinct positive numbers of concurrent runs that "
            "includes 1, the baseline (e.g. 1,2,4,8)"
        )
    return counts


def sweep_worker(request: BenchRequest, start: Barrier, report: Connection) -> None:
    """One of K concurrent processes of ``suite bench sweep``: build the trainer, warm up, then (each phase
    begun with the others at ``start``, a barrier) time the training steps and the generation; sends the
    phases' monotonic start and end times and this process's peak memory."""
    from suite.registry import import_plugins

    import_plugins()
    device = device_of(request)
    spec = compose(request, extra=[f"budget.batch={request.batch}"] if request.batch else [])
    warm, timed = steps_of(request, TRAIN_STEPS, device)
    n = int(request.samples or (spec.budget.eval.samples if device.type == "cuda" else CPU_EVAL_SAMPLES))
    guidance = spec.budget.eval.guidance
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        trainer = Trainer(spec, Path(tmp))
        evaluator = trainer.evaluator
        assert evaluator is not None  # the single process is the main rank
        sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
        for _ in range(warm):
            trainer.train_step()
        evaluator.generate(trainer.state.ema, 2, sigmas, guidance)
        synchronize(device)
        start.wait()
        train_from = time.monotonic()
        for _ in range(timed):
            trainer.train_step()
        synchronize(device)
        train_to = time.monotonic()
        start.wait()
        generate_from = time.monotonic()
        evaluator.generate(trainer.state.ema, n, sigmas, guidance)
        synchronize(device)
        generate_to = time.monotonic()
        report.send(
            {
                "train": (train_from, train_to),
                "generate": (generate_from, generate_to),
                "steps": timed,
                "batch": trainer.batch,
                "samples": n,
                "peak_memory_mib": peak_memory_mib(device),
                "threads": torch.get_num_threads(),
            }
        )
    report.close()


def concurrent_runs(request: BenchRequest, count: int) -> list[dict[str, Any]]:
    """The reports of ``count`` concurrent :func:`sweep_worker` processes; raises if one of them failed."""
    from suite.launch.runner import child_environment, usable_cores

    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(count)
    workers = []
    for _ in range(count):
        reader, writer = spawn.Pipe(duplex=False)
        process = spawn.Process(target=sweep_worker, args=(request, start, writer))
        with child_environment(OMP_NUM_THREADS=str(max(1, usable_cores() // count))):
            process.start()
        writer.close()
        workers.append((process, reader))
    reports: list[dict[str, Any]] = []
    failed = []
    for process, reader in workers:
        while process.exitcode is None and not reader.poll():
            wait([process.sentinel, reader], timeout=1.0)
            if any(p.exitcode not in (None, 0) for p, _ in workers):
                start.abort()  # the others would wait for it at the barrier
        if reader.poll():
            reports.append(reader.recv())
        process.join()
        if process.exitcode != 0:
            failed.append(process.exitcode)
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {count} sweep processes failed (exit status {failed}); their tracebacks "
            "are printed above"
        )
    return reports


def bench_sweep(request: BenchRequest) -> dict[str, Any]:
    """Aggregate training examples/s, generated samples/s and peak memory of K concurrent runs, per K."""
    counts = parse_runs(request.runs)
    device = device_of(request)
    rows = []
    work: dict[str, Any] = {}
    for count in sorted(counts):
        reports = concurrent_runs(request, count)
        work = {key: reports[0][key] for key in ("steps", "batch", "samples")}
        train_s = max(r["train"][1] for r in reports) - min(r["train"][0] for r in reports)
        generate_s = max(r["generate"][1] for r in reports) - min(r["generate"][0] for r in reports)
        rows.append(
            {
                "runs": count,
                "threads_per_run": reports[0]["threads"],
                "train_examples_per_s": sum(r["steps"] * r["batch"] for r in reports) / train_s,
                "train_s": train_s,
                "samples_per_s": sum(r["samples"] for r in reports) / generate_s,
                "generate_s": generate_s,
                "peak_memory_mib": sum(r["peak_memory_mib"] for r in reports),
            }
        )
    base = rows[0]
    for row in rows:
        row["train_ratio"] = row["train_examples_per_s"] / base["train_examples_per_s"]
        row["samples_ratio"] = row["samples_per_s"] / base["samples_per_s"]
        row["memory_ratio"] = row["peak_memory_mib"] / base["peak_memory_mib"]
    memory = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "peak RSS"
    notes = [
        f"each run: {work['steps']} timed training steps at batch {work['batch']}, then {work['samples']} "
        "generated samples (the task's solver and NFE), after warm-up; each phase started together",
        "aggregate rate = K × one run's work / wall time from the first start to the last end; ratio = "
        "against 1 run",
        f"peak MiB = sum over the K processes of each one's {memory}",
    ]
    columns = [
        ("runs", "runs"),
        ("threads_per_run", "threads/run"),
        ("train_examples_per_s", "train ex/s"),
        ("train_ratio", "× 1 run"),
        ("samples_per_s", "samples/s"),
        ("samples_ratio", "× 1 run"),
        ("peak_memory_mib", "peak MiB"),
        ("memory_ratio", "× 1 run"),
    ]
    return {
        "runs": sorted(counts),
        "batch": work["batch"],
        "timed_steps": work["steps"],
        "samples": work["samples"],
        "rows": rows,
        "columns": columns,
        "notes": notes,
    }


# -- output ------------------------------------------------------------------------------------------
def command_line(request: BenchRequest) -> str:
    """The ``suite bench`` command that reproduces this measurement, rebuilt from its arguments."""
    parts = [
        "suite",
        "bench",
        request.what,
        "--task",
        request.task,
        "--budget",
        request.budget,
        "--device",
        request.device,
    ]
    for option in ("batch", "steps", "samples", "variants", "runs", "out"):
        value = getattr(request, option, None)
        if value is not None:
            parts += [f"--{option}", str(value)]
    return shlex.join([*parts, *request.overrides])


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_table(report: dict[str, Any]) -> str:
    """The report's rows as an aligned text table (skipped rows say why), then its notes."""
    columns = report["columns"]
    lines = [[title for _, title in columns]]
    skipped = []
    for row in report["rows"]:
        if "skipped" in row:
            skipped.append(f"{row.get('variant', row.get('sampler'))}: skipped, {row['skipped']}")
            continue
        lines.append([_cell(row.get(key)) for key, _ in columns])
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    text = ["  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)) for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text + skipped + [f"# {note}" for note in report["notes"]])


def format_markdown(report: dict[str, Any]) -> str:
    """The report's rows as a markdown table, then its notes."""
    columns = report["columns"]
    lines = ["| " + " | ".join(title for _, title in columns) + " |", "|" + "---:|" * len(columns)]
    for row in report["rows"]:
        lines.append("| " + " | ".join(_cell(row.get(key)) for key, _ in columns) + " |")
    return "\n".join(lines + [""] + [f"- {note}" for note in report["notes"]])


def measure(request: BenchRequest) -> int:
    """``suite bench train|sampler|eval|sweep``: measure, print the table and, with ``--out``, write the
    JSON."""
    bench = {"train": bench_train, "sampler": bench_sampler, "eval": bench_eval, "sweep": bench_sweep}[
        request.what
    ]
    device = device_of(request)
    report = bench(request)
    header = {
        "bench": request.what,
        "task": request.task,
        "budget": request.budget,
        "overrides": list(request.overrides),
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch_threads": torch.get_num_threads(),
        "date": now(),
        "command": command_line(request),
        "packages": package_versions(),
        "torch_cuda": torch.version.cuda,
        **host_info(),
    }
    report = header | report
    overrides = [" ".join(request.overrides)] if request.overrides else []
    parts = [f"suite bench {request.what}", f"task {request.task}", f"budget {request.budget}"]
    print(" · ".join([*parts, header["device_name"], *overrides]))
    print((format_markdown if request.what == "sweep" else format_table)(report), flush=True)
    if request.out:
        out = Path(request.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        report.pop("columns")
        out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {out}")
    return 0
