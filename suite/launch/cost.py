"""The planned cost of a run: processed examples, training FLOPs, and device hours at a stated rate.

FLOPs per training example are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one forward and
backward pass of the task's network at batch 1 (2 FLOPs per multiply-add), on PyTorch's ``meta`` device: the
shapes are real, nothing is computed, so a 60M-parameter network is counted in a second. The example batch
comes from the task's own example data (``Task.example_data``), so conditioning inputs have their real
shapes. Training FLOPs = examples × FLOPs per example; evaluation is not included.

The planning rate of one H200 is a measured one, labelled with where it comes from, in this order:

1. the run's own network: the fastest variant of a committed ``suite bench train`` report
   (``results/gpu/*/bench/train-*.json``) whose network has the same FLOPs per example (within 1%; the same
   task preferred), e.g. bfashion's `short` U-Net at 38 TFLOP/s, CIFAR-10's DDPM++ at 242 TFLOP/s under
   bf16 and torch.compile;
2. else its modality (``Task.modality``): the fastest variant of the bench of a network of the same
   modality whose FLOPs per example are nearest on a log scale;
3. else NVlabs/edm's own CIFAR-10 training loop (DDPM++, 127 GFLOP per training image, 1667 img/s with its
   fp16 option on one NVIDIA H200, about 212 TFLOP/s achieved). For an image network that is its family's
   published rate; for another modality (DNA, text, points) no rate of its own has been measured, the label
   says so, and the hours are a lower bound (a small network uses the device less well), until ``suite
   bench train --task T`` on a GPU measures one.

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

from suite.run.assembly import build_parts
from suite.run.spec import RunSpec
from suite.task import TASKS, Batch

PLANNING_TFLOPS = 212.0
PLANNING_RATE = "212 TFLOP/s (EDM's CIFAR-10 loop with --fp16 on one H200: 1667 img/s × 127 GFLOP)"


BENCH_REPORTS = Path(__file__).resolve().parents[2] / "results"
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


_FLOPS: dict[str, float] = {}  # comparison hash → FLOPs per example


def flops_per_example(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training example of the run's network (meta device). The runs of a
    comparison share them (only the sampler and the seed differ, and neither enters the pass), so they are
    counted once per comparison hash in a process: a study's plan counts each comparison once."""
    if spec.comparison_hash not in _FLOPS:
        meta = torch.device("meta")
        batch = example_batch(spec)
        with FlopCounterMode(display=False) as counter:
            _forward_backward(build_parts(spec, meta=True), batch, meta)
        _FLOPS[spec.comparison_hash] = float(counter.get_total_flops())
    return _FLOPS[spec.comparison_hash]


def planning_rate(gflop_per_example: float, task: str) -> tuple[float, str]:
    """TFLOP/s of one H200 for ``task``'s network of ``gflop_per_example`` and where the figure comes from
    (module docstring): a committed bench of a network of the same FLOPs, else of the task's modality,
    else EDM's CIFAR-10 loop."""
    modality = TASKS.get(task).modality
    exact: list[tuple[bool, float, str]] = []
    near: list[tuple[float, float, str]] = []
    for path in sorted(BENCH_REPORTS.glob("gpu/*/bench/train-*.json")):
        report = json.loads(path.read_text())
        same_modality = report["task"] in TASKS.names() and TASKS.get(report["task"]).modality == modality
        for row in report.get("rows", []):
            gflop, tflops = row.get("gflop_per_example"), row.get("tflops")
            if not (gflop and tflops):
                continue
            source = (
                f"suite bench train of {report['task']} {report['budget']}, {row['variant']}, on one "
                f"{report['device_name']}, {path.relative_to(BENCH_REPORTS.parent)}"
            )
            if math.isclose(gflop, gflop_per_example, rel_tol=0.01):
                exact.append((report["task"] == task, tflops, f"{tflops:.3g} TFLOP/s (measured: {source})"))
            elif same_modality:
                distance = abs(math.log(gflop / gflop_per_example))
                bound = (
                    "; a smaller network, so a lower bound on its hours" if gflop_per_example < gflop else ""
                )
                label = (
                    f"{tflops:.3g} TFLOP/s (measured for another {modality} network, of {gflop:.3g} "
                    f"GFLOP/example against this one's {gflop_per_example:.3g}: {source}{bound})"
                )
                near.append((-distance, tflops, label))
    if exact:
        _, tflops, source = max(exact)
        return tflops, source
    if near:
        _, tflops, source = max(near)
        return tflops, source
    if modality == "image":
        return (
            PLANNING_TFLOPS,
            f"{PLANNING_RATE}; no bench of an image network, so a lower bound on its hours",
        )
    return PLANNING_TFLOPS, (
        f"{PLANNING_TFLOPS:.0f} TFLOP/s, the image rate of EDM's CIFAR-10 loop on one H200: no {modality} "
        f"network benched yet, so a lower bound on its hours (`suite bench train --task {task}` on a GPU "
        "measures one)"
    )


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
    """Hours, "0.52 h" or "3,100 h", with days beyond 48 h and years beyond two: "3,100 h (129 days)"."""
    text = f"{hours:,.0f} h" if hours >= 100 else f"{hours:.3g} h"
    if hours > 2 * 8766:
        return f"{text} ({hours / 8766:,.0f} years)"
    return f"{text} ({hours / 24:,.3g} days)" if hours > 48 else text


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
