"""The planned cost of a run: processed examples, training FLOPs, and device hours at a stated rate.

FLOPs per training example are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one forward and
backward pass of the task's network at batch 1 (2 FLOPs per multiply-add), on PyTorch's ``meta`` device: the
shapes are real, nothing is computed, so a 60M-parameter network is counted in a second. The example batch
comes from the task's own example data (``Task.example_data``), so conditioning inputs have their real
shapes. Training FLOPs = examples × FLOPs per example; evaluation is not included.

The planning rate of one H200 is a measured one, for the run's own network where a bench measured it:
the fastest variant of a committed ``suite bench train`` report (``results/gpu/*/bench/train-*.json``) whose
network has the same FLOPs per example (within 1%; the same task preferred), e.g. bfashion's `short` U-Net at
38 TFLOP/s, CIFAR-10's DDPM++ at 242 TFLOP/s under bf16 and torch.compile. Without one, NVlabs/edm's own
CIFAR-10 training loop stands in (DDPM++, 127 GFLOP per training image, 1667 img/s with its fp16 option on
one NVIDIA H200, about 212 TFLOP/s achieved): smaller networks use the device less well, so their hours are
then a lower bound. Each rate is printed with its source.

On this machine, ``measured_here`` times the run's network directly: forward and backward passes of batches
of 1, 2, 4, … examples until one takes ``MEASURE_S`` (a small network's rate depends on its batch), without
data loading, the optimiser or evaluations.
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.flop_counter import FlopCounterMode

from suite.assembly import build_parts
from suite.spec import RunSpec
from suite.task import TASKS, Batch

PLANNING_TFLOPS = 212.0
PLANNING_RATE = "212 TFLOP/s (EDM's CIFAR-10 loop with --fp16 on one H200: 1667 img/s × 127 GFLOP)"


BENCH_REPORTS = Path(__file__).resolve().parent.parent / "results"
MEASURE_S = 0.5
WARN_HOURS = 1.0  # a local plan longer than this on this machine is said in a warning line


@functools.lru_cache(maxsize=4)
def _example_batch(task: str, task_yaml: str) -> Any:
    """One training example of the task's own example data (``Task.example_data``), on the CPU; cached, as
    the cost and the measurement of a dry-run both read it."""
    task_cls = TASKS.get(task)
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as tmp:
        example_cfg = OmegaConf.merge(OmegaConf.create(task_yaml), task_cls.example_data(Path(tmp), 2))
        return task_cls(example_cfg).load().train.batch(torch.arange(1), torch.device("cpu"))


def example_batch(spec: RunSpec) -> Any:
    """``_example_batch`` of the run's task config."""
    return _example_batch(spec.task, OmegaConf.to_yaml(spec.task_cfg))


def _forward_backward(parts: Any, batch: Any, device: torch.device) -> None:
    """One forward and backward pass of the run's objective on ``batch`` at σ = 1."""
    objective = parts.task.objective(parts.weight)
    cond = {key: value.to(device) for key, value in batch.cond.items()}
    x0 = objective.encode(parts.model, batch.x0.to(device))
    n = x0.shape[0]
    noise = torch.empty((n, *parts.task.sample_shape), device=device).normal_()
    weighted, _ = objective.losses(parts.model, x0, torch.ones(n, device=device), noise, cond)
    weighted.sum().backward()


def flops_per_example(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training example of the run's network (meta device)."""
    meta = torch.device("meta")
    batch = example_batch(spec)
    with FlopCounterMode(display=False) as counter:
        _forward_backward(build_parts(spec, meta=True), batch, meta)
    return float(counter.get_total_flops())


def planning_rate(gflop_per_example: float, task: str) -> tuple[float, str]:
    """TFLOP/s of one H200 for a network of ``gflop_per_example`` and where the figure comes from (module
    docstring): a committed bench of a network of the same FLOPs, else EDM's CIFAR-10 loop."""
    found: list[tuple[bool, float, str]] = []
    for path in sorted(BENCH_REPORTS.glob("gpu/*/bench/train-*.json")):
        report = json.loads(path.read_text())
        for row in report.get("rows", []):
            gflop, tflops = row.get("gflop_per_example"), row.get("tflops")
            if gflop and tflops and math.isclose(gflop, gflop_per_example, rel_tol=0.01):
                source = (
                    f"{tflops:.3g} TFLOP/s (measured: suite bench train of {report['task']} "
                    f"{report['budget']}, {row['variant']}, on one {report['device_name']}, "
                    f"{path.relative_to(BENCH_REPORTS.parent)})"
                )
                found.append((report.get("task") == task, tflops, source))
    if not found:
        return PLANNING_TFLOPS, f"{PLANNING_RATE}; no bench of this network, so a lower bound on its hours"
    _, tflops, source = max(found)
    return tflops, source


def planned_cost(spec: RunSpec) -> dict[str, Any]:
    """Examples, FLOPs and device hours of one run at the planning rate of its network (``planning_rate``)."""
    examples = float(spec.budget.total_nimg)
    per_example = flops_per_example(spec)
    total = examples * per_example
    tflops, rate = planning_rate(per_example / 1e9, spec.task)
    return {
        "examples": examples,
        "gflop_per_example": per_example / 1e9,
        "training_pflop": total / 1e15,
        "device_hours": total / (tflops * 1e12) / 3600,
        "rate": rate,
    }


def measured_here(spec: RunSpec) -> dict[str, Any]:
    """Examples per second of the run's network on the device a local launch would train on, and the hours
    of one run at that rate (module docstring): after an untimed pass of one example, timed passes of 1, 2,
    4, … copies of it until one takes ``MEASURE_S`` or the batch reaches ``budget.batch``; the rate is the
    last pass's."""
    device = torch.device("cuda" if spec.device != "cpu" and torch.cuda.is_available() else "cpu")
    parts = build_parts(spec, device=device)
    one = example_batch(spec)

    def timed(n: int) -> float:
        batch = Batch(
            one.x0.repeat(n, *[1] * (one.x0.dim() - 1)),
            {k: v.repeat(n, *[1] * (v.dim() - 1)) for k, v in one.cond.items()},
        )
        start = time.perf_counter()
        _forward_backward(parts, batch, device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    timed(1)  # allocations and lazy initialisation
    n, seconds = 1, timed(1)
    while seconds < MEASURE_S and n < spec.budget.batch:
        n = min(2 * n, spec.budget.batch)
        seconds = timed(n)
    rate = n / seconds
    threads = f"cpu, {torch.get_num_threads()} threads"
    return {
        "examples_per_s": rate,
        "hours": float(spec.budget.total_nimg) / rate / 3600,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else threads,
        "source": f"measured now: one forward + backward pass of {n} example(s) of this network; data "
        "loading, optimiser steps and evaluations not included",
    }


def _hours(hours: float) -> str:
    """ "0.52 h", "3.1 days" beyond 48 h, "12 years" beyond two."""
    if hours > 2 * 8766:
        return f"{hours / 8766:,.0f} years"
    return f"{hours / 24:,.3g} days" if hours > 48 else f"{hours:,.3g} h"


def describe_cost(cost: dict[str, Any], runs: int, here: dict[str, Any] | None = None) -> list[str]:
    """The cost lines ``suite run --dry-run`` prints: the planned training cost per run and for ``runs``
    runs at the planning rate, then (``here``, a ``measured_here``) the wall time on this machine, with a
    ``warning:`` line when the runs one after another take longer than ``WARN_HOURS``."""
    lines = [
        f"planned cost per run: {cost['examples']:,.0f} training examples × {cost['gflop_per_example']:.4g} "
        f"GFLOP (forward + backward) = {cost['training_pflop']:,.4g} PFLOP, {cost['device_hours']:,.3g} "
        f"device-hours at {cost['rate']}; {runs} run(s): {runs * cost['device_hours']:,.3g} device-hours "
        "(evaluation not included)"
    ]
    return lines + ([] if here is None else describe_here(here, runs))


def describe_here(here: dict[str, Any], runs: int) -> list[str]:
    """The planned wall time of ``runs`` runs on this machine (a ``measured_here``), and a ``warning:`` line
    when they take longer than ``WARN_HOURS`` one after another."""
    total = runs * here["hours"]
    lines = [
        f"planned wall time on this machine ({here['device']}): {_hours(here['hours'])} per run at "
        f"{here['examples_per_s']:,.4g} examples/s, {_hours(total)} for {runs} run(s) one after another "
        f"({here['source']})"
    ]
    if total > WARN_HOURS:
        lines.append(
            f"warning: these {runs} run(s) would take {_hours(total)} here; a smaller budget "
            "(demo, smoke) or --launcher slurm on GPUs is the usual way"
        )
    return lines
