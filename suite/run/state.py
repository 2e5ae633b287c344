"""The training state of one run: network, EMA, optimiser and noise sampler, with checkpoint and resume.

The state is built from the run's spec and its task through ``suite.run.assembly`` (the raw network of the
task's preset for the budget's size, wrapped in EDM's preconditioning; the task's loss weight). A
checkpoint holds everything the loop needs to continue bit for bit (see ``suite.stream`` for why no RNG
state is needed); resuming is re-running the same command (the EDM2 pattern).

Memory format and compilation are network capabilities: the budget's ``channels_last`` and ``compile``
are requests, honoured when the raw network declares ``channels_last = True`` / ``compilable = True``.
``channels_last`` applies on any device (it is a layout, so the CPU contract test exercises it);
``torch.compile`` only on CUDA.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from suite.noise.sampler import NoiseSampler
from suite.noise.weighting import LossWeight
from suite.paths import inductor_dir
from suite.run.assembly import build_parts
from suite.run.checkpoint import load_latest_checkpoint, save_checkpoint
from suite.run.distributed import DistContext
from suite.run.spec import RunSpec
from suite.task import Task

ADAM_BETAS = (0.9, 0.999)  # EDM's and MDLM's Adam (no weight decay), the optimiser of every run
ADAM_EPS = 1e-8


class TrainingState:
    """Network (preconditioned), EMA copy, Adam and the noise sampler of one run, on the run's device."""

    def __init__(self, spec: RunSpec, task: Task, ctx: DistContext) -> None:
        self.spec = spec
        self.ctx = ctx
        device = ctx.device
        parts = build_parts(spec, task, device)
        self.weight: LossWeight = parts.weight
        self.sampler: NoiseSampler = parts.sampler
        self.model = parts.model
        self.channels_last = parts.channels_last
        self.ema = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=spec.budget.lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=True
        )
        ddp = (
            nn.parallel.DistributedDataParallel(
                self.model, device_ids=[device] if device.type == "cuda" else None
            )
            if ctx.world_size > 1
            else self.model
        )
        self.eager_forward: nn.Module = ddp
        compilable = getattr(self.model.net, "compilable", False)
        self.compiled = compilable and spec.budget.compiles(device.type)
        self.cuda_graphs = self.compiled and spec.budget.cuda_graphs and device.type == "cuda"
        self.forward: nn.Module = ddp
        self.compile_cache: str | None = None
        if self.compiled:
            self.compile_cache = str(use_compile_cache())
            mode = "reduce-overhead" if self.cuda_graphs else None
            self.forward = torch.compile(ddp, dynamic=False, mode=mode)
        self.nimg = 0
        self.wall_time = 0.0
        self.tick_start_nimg = 0  # where the current stats tick began
        self.tick_loss_sum = 0.0  # the loss summed over the examples since then (set when saving)
        # best-validation selection (``suite.run.selection``): its checks and best raw weights, checkpointed
        self.selection: dict[str, Any] | None = None

    def fall_back_to_eager(self) -> None:
        """Train the eager network from now on (the compiled one failed to compile)."""
        self.forward, self.compiled, self.cuda_graphs = self.eager_forward, False, False

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "ema": self.ema.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampler": self.sampler.state_dict(),
            "wall_time": self.wall_time,
            "tick": {"start_nimg": self.tick_start_nimg, "loss_sum": self.tick_loss_sum},
            "config_hash": self.spec.config_hash,
        } | ({} if self.selection is None else {"selection": self.selection})

    def save(self, folder: Path) -> None:
        """Checkpoint at the current ``nimg`` (atomic; the newest two are kept)."""
        save_checkpoint(folder, self.nimg, self.state_dict())

    def resume(self, folder: Path) -> bool:
        """Load the newest readable checkpoint of ``folder``; False when there is none."""
        state = load_latest_checkpoint(folder, self.ctx.device)
        if state is None:
            return False
        if state["config_hash"] != self.spec.config_hash:
            raise ValueError(f"checkpoint in {folder} belongs to another config; use a new results dir")
        self.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.load_state_dict(state["sampler"])
        self.nimg = int(state["nimg"])
        self.wall_time = float(state["wall_time"])
        self.tick_start_nimg = int(state["tick"]["start_nimg"])
        self.tick_loss_sum = float(state["tick"]["loss_sum"])
        self.selection = state.get("selection")
        return True


def use_compile_cache() -> Path:
    """The folder of inductor's caches: ``$TORCHINDUCTOR_CACHE_DIR`` when set, else it is set to
    ``$SUITE_CACHE/inductor`` (the FX-graph, AOTAutograd and kernel caches all live under it)."""
    if not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_dir())
    return Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
