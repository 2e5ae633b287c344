"""Worker of the DDP test: trains a few steps as one rank and saves its state (module-level, for spawn)."""

import os
from pathlib import Path

import torch

from suite.config import compose_run
from suite.run.spec import run_spec
from suite.run.training import Trainer


def train_steps(rank: int, world: int, port: int, overrides: list[str], steps: int, out: str) -> None:
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    cfg = compose_run("bfashion", "infonoise", "smoke", overrides + ["device=cpu"])
    trainer = Trainer(run_spec(cfg), Path(out) / f"rank{rank}")
    for _ in range(steps):
        trainer.train_step()
    torch.save(
        {"model": trainer.state.model.state_dict(), "sampler": trainer.state.sampler.state_dict()},
        Path(out) / f"state{rank}.pt",
    )
    if world > 1:
        torch.distributed.destroy_process_group()
