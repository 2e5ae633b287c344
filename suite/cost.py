"""The planned cost of a run: processed examples, training FLOPs, and device hours at a stated rate.

FLOPs per training example are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one forward and
backward pass of the task's network at batch 1 (2 FLOPs per multiply-add), on PyTorch's ``meta`` device: the
shapes are real, nothing is computed, so a 60M-parameter network is counted in a second. The example batch
comes from the task's own example data (``Task.example_data``), so conditioning inputs have their real
shapes. Training FLOPs = examples × FLOPs per example; evaluation is not included.

The planning rate is a measured one: NVlabs/edm's own CIFAR-10 training loop (DDPM++, 127 GFLOP per
training image) ran at 1667 img/s with its fp16 option on one NVIDIA H200, about 212 TFLOP/s achieved.
Networks that use the device less well take longer; ``suite bench train`` measures the suite's own rate.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.flop_counter import FlopCounterMode

from suite.assembly import build_parts
from suite.spec import RunSpec
from suite.task import TASKS

PLANNING_TFLOPS = 212.0
PLANNING_RATE = "212 TFLOP/s (EDM's CIFAR-10 loop with --fp16 on one H200: 1667 img/s × 127 GFLOP)"


def flops_per_example(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training example of the run's network (meta device)."""
    task_cls = TASKS.get(spec.task)
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as tmp:
        example_cfg = OmegaConf.merge(spec.task_cfg, task_cls.example_data(Path(tmp), 2))
        batch = task_cls(example_cfg).load().train.batch(torch.arange(1), torch.device("cpu"))
    parts = build_parts(spec, meta=True)
    objective = parts.task.objective(parts.weight)
    meta = torch.device("meta")
    cond = {key: value.to(meta) for key, value in batch.cond.items()}
    with FlopCounterMode(display=False) as counter:
        x0 = objective.encode(parts.model, batch.x0.to(meta))
        noise = torch.empty((1, *parts.task.sample_shape), device=meta)
        sigma = torch.ones(1, device=meta)
        weighted, _ = objective.losses(parts.model, x0, sigma, noise, cond)
        weighted.sum().backward()
    return float(counter.get_total_flops())


def planned_cost(spec: RunSpec) -> dict[str, Any]:
    """Examples, FLOPs and device hours of one run at the planning rate."""
    examples = float(spec.budget.total_nimg)
    per_example = flops_per_example(spec)
    total = examples * per_example
    return {
        "examples": examples,
        "gflop_per_example": per_example / 1e9,
        "training_pflop": total / 1e15,
        "device_hours": total / (PLANNING_TFLOPS * 1e12) / 3600,
        "rate": PLANNING_RATE,
    }


def describe_cost(cost: dict[str, Any], runs: int) -> str:
    """The cost lines ``suite run --dry-run`` prints."""
    return (
        f"planned cost per run: {cost['examples']:,.0f} training examples × {cost['gflop_per_example']:.4g} "
        f"GFLOP (forward + backward) = {cost['training_pflop']:,.4g} PFLOP, {cost['device_hours']:,.3g} "
        f"device-hours at {cost['rate']}; {runs} run(s): {runs * cost['device_hours']:,.3g} device-hours "
        "(evaluation not included)"
    )
