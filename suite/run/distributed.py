"""torch.distributed set-up from torchrun's or SLURM's environment.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Inside a SLURM allocation with
several tasks (srun, or submitit's array tasks with ``tasks_per_node`` > 1) the same facts come from
SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the first host of SLURM_JOB_NODELIST. A single process
runs without a process group. The backend is NCCL on CUDA and gloo on the CPU.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import torch
import torch.distributed as dist

from suite.run.spec import DEVICES


@dataclass(frozen=True)
class DistContext:
    """Rank, world size and this process's device."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _slurm_master_addr() -> str:
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "localhost")
    try:
        out = subprocess.run(
            ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=30
        )
        first = out.stdout.split()
        return first[0] if first else "localhost"
    except (OSError, subprocess.TimeoutExpired):
        return "localhost"


def _environment() -> tuple[int, int, int]:
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
    if int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in os.environ:
        os.environ.setdefault("MASTER_ADDR", _slurm_master_addr())
        os.environ.setdefault("MASTER_PORT", str(29500 + int(os.environ.get("SLURM_JOB_ID", "0")) % 2000))
        return (
            int(os.environ["SLURM_PROCID"]),
            int(os.environ["SLURM_NTASKS"]),
            int(os.environ["SLURM_LOCALID"]),
        )
    return 0, 1, 0


def init_distributed(device: str = "auto") -> DistContext:
    """Join the process group if the environment describes several processes; pick the device."""
    rank, world_size, local_rank = _environment()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; valid: {', '.join(DEVICES)}")
    dev = torch.device(f"cuda:{local_rank}") if device == "cuda" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", rank=rank, world_size=world_size)
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, device=dev)


def barrier() -> None:
    """Wait for all ranks (no-op in a single process)."""
    if dist.is_initialized():
        dist.barrier()
