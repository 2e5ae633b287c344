"""Timing and memory primitives of the benchmarks: wall time per call (``time.perf_counter``; CUDA
events between synchronisations on the GPU), GPU time of a call queued behind a busy-wait kernel, the
device's dense matmul rate, model FLOPs per example (``torch.utils.flop_counter.FlopCounterMode``, 2 FLOPs
per multiply-add) and peak memory (``torch.cuda.max_memory_allocated``; ``getrusage`` on the CPU)."""

from __future__ import annotations

import gc
import math
import resource
import time
from collections.abc import Callable
from typing import Any

import torch

from suite.run.training import Trainer

BUSY_CYCLES = 4_000_000  # torch.cuda._sleep before each of them: ~2 ms at ~2 GHz


MATMUL_SIZE = {"cpu": 1024, "cuda": 8192}


CPU_MATMUL_SECONDS = 0.5


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
