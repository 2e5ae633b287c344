"""``suite bench train`` and ``suite bench sampler``: examples per second of a training step per
precision/compile variant, and each sampler's cost per step against that step (the module docstring of
``suite.measure.bench`` states what is timed and how)."""

from __future__ import annotations

import copy
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch import Tensor

from suite.config import group_options
from suite.measure.request import VARIANTS, BenchRequest, compose, device_of, parse_variants, steps_of
from suite.measure.timing import (
    MATMUL_SIZE,
    device_seconds_per_call,
    flops_per_example,
    matmul_tflops,
    peak_memory_mib,
    release,
    seconds_per_call,
    synchronize,
)
from suite.noise.sampler import NoiseSampler
from suite.run.assembly import build_loss_weight, build_noise_sampler, build_task
from suite.run.spec import RunSpec
from suite.run.training import Trainer

SAMPLER_BATCH = 512  # σ for a batch of 512: the batch the ≤ 1% overhead target is stated for


OVERHEAD_LIMIT_PCT = 1.0  # ... costs at most 1% of one training step


MIN_SAMPLER_STEPS = 200  # timed sampler steps at least (rounded up to whole refresh periods)


REBUILD_CALLS = 3


DEVICE_CALLS = 100  # sampler steps timed for their GPU time alone (CUDA)


# (warm-up calls, timed calls) of a training step, by device type
TRAIN_STEPS = {"cpu": (1, 3), "cuda": (10, 50)}


SAMPLER_TRAIN_STEPS = {"cpu": (1, 2), "cuda": (10, 30)}


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
