"""The one place that builds a run's parts from its spec: task, loss weight, noise sampler and network.

Training, ``--dry-run``'s checks and planned cost, ``suite eval``, the post hoc profile, the benches and
the figures all build through these functions, so a run is checked by the same code that later trains it
(k-diffusion's ``make_*`` factories, shared by training and sampling, follow the same idea). The network is
the task's raw network for the budget's preset wrapped in EDM's preconditioning (``suite.run.diffusion``),
laid out channels-last when the budget asks for it and the network supports it; on the ``meta`` device nothing
is allocated, which is how the checks and the FLOP count build a 60M-parameter network in a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from suite.noise.sampler import NoiseSampler, build_sampler
from suite.noise.weighting import LossWeight, build_weight
from suite.run.diffusion import EDMDenoiser
from suite.run.spec import RunSpec
from suite.task import TASKS, Task


def build_task(spec: RunSpec) -> Task:
    """The task plugin, given its own config group."""
    return TASKS.get(spec.task)(spec.task_cfg)


def build_loss_weight(spec: RunSpec) -> LossWeight:
    """The task's fixed weight w(σ) of the x₀-space error."""
    return build_weight(spec.diffusion.loss_weight, spec.diffusion.sigma_data)


def build_noise_sampler(spec: RunSpec, weight: LossWeight) -> NoiseSampler:
    """The run's training-noise sampler π(σ) on the task's [σ_min, σ_max] (on the CPU)."""
    d = spec.diffusion
    return build_sampler(spec.sampler.name, d.sigma_min, d.sigma_max, weight, **spec.sampler.params)


def wants_channels_last(net: nn.Module, requested: bool) -> bool:
    """Whether to lay activations out channels-last: asked for by the budget and supported by the network."""
    return bool(requested) and bool(getattr(net, "channels_last", False))


def build_model(spec: RunSpec, task: Task, device: torch.device | str = "cpu") -> EDMDenoiser:
    """The preconditioned network D(x; σ) of the budget's preset on ``device``. Its weights are drawn from
    the global RNG on the CPU and then moved, so a seed gives the same network on every device; on the
    ``meta`` device they are only shaped."""
    if torch.device(device).type == "meta":
        with torch.device("meta"):
            net = task.build_network(task.network)
    else:
        net = task.build_network(task.network)
    layout = (
        torch.channels_last
        if wants_channels_last(net, spec.budget.channels_last)
        else torch.contiguous_format
    )
    return EDMDenoiser(net, spec.diffusion.sigma_data, layout).to(device, memory_format=layout)


@dataclass
class Parts:
    """What a run is built from, before any data is read or any optimiser exists."""

    task: Task
    weight: LossWeight
    sampler: NoiseSampler
    model: EDMDenoiser
    channels_last: bool  # the model's activations are laid out channels-last


def build_parts(
    spec: RunSpec, task: Task | None = None, device: torch.device | str = "cpu", meta: bool = False
) -> Parts:
    """Task, loss weight, sampler and network of ``spec``; the network is initialised from ``spec.seed``
    on ``device`` (or only shaped, on the meta device, when ``meta``); the sampler lives on ``device``."""
    task = build_task(spec) if task is None else task
    weight = build_loss_weight(spec)
    sampler = build_noise_sampler(spec, weight)
    if not meta:
        sampler.to(torch.device(device))
        torch.manual_seed(spec.seed)  # network initialisation
    model = build_model(spec, task, "meta" if meta else device)
    return Parts(task, weight, sampler, model, wants_channels_last(model.net, spec.budget.channels_last))
