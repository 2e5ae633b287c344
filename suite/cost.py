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
from omegaconf import DictConfig, OmegaConf
from torch.utils.flop_counter import FlopCounterMode

from suite.diffusion import EDMDenoiser
from suite.task import TASKS
from suite.weighting import build_weight

PLANNING_TFLOPS = 212.0
PLANNING_RATE = "212 TFLOP/s (EDM's CIFAR-10 loop with --fp16 on one H200: 1667 img/s × 127 GFLOP)"


def flops_per_example(cfg: DictConfig) -> float:
    """Forward + backward FLOPs of one training example of the run's network (meta device)."""
    task_cls = TASKS.get(cfg.task.name)
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as tmp:
        example_cfg = OmegaConf.merge(cfg.task, task_cls.example_data(Path(tmp), 2))
        example = task_cls(example_cfg)
        batch = example.load().train.batch(torch.arange(1), torch.device("cpu"))
    task = task_cls(cfg.task)
    with torch.device("meta"):
        net = task.build_network(task.network_preset(str(cfg.budget.size)))
    model = EDMDenoiser(net, float(cfg.task.sigma_data))
    objective = task.objective(build_weight(cfg.task.loss_weight, float(cfg.task.sigma_data)))
    meta = torch.device("meta")
    cond = {key: value.to(meta) for key, value in batch.cond.items()}
    with FlopCounterMode(display=False) as counter:
        x0 = objective.encode(model, batch.x0.to(meta))
        noise = torch.empty((1, *task.sample_shape), device=meta)
        sigma = torch.ones(1, device=meta)
        weighted, _ = objective.losses(model, x0, sigma, noise, cond)
        weighted.sum().backward()
    return float(counter.get_total_flops())


def planned_cost(cfg: DictConfig) -> dict[str, Any]:
    """Examples, FLOPs and device hours of one run at the planning rate."""
    examples = float(cfg.budget.kimg) * 1000
    per_example = flops_per_example(cfg)
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
