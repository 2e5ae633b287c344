"""Atomic training checkpoints and resume-by-rerunning (the EDM2 pattern).

A checkpoint ``checkpoints/ckpt-<nimg>.pt`` holds everything the loop needs to continue bit for bit:
network, EMA, optimiser, sampler state, processed examples (which fix the data position and every random
draw, see ``suite.training``) and wall time. It is written to a temporary file, fsynced and renamed,
so a kill at any moment leaves either the previous or the new checkpoint, never a torn one. On start the
loop loads the newest checkpoint that reads back; the two newest are kept.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import torch

from suite.records import write_atomic

_NAME = re.compile(r"^ckpt-(\d+)\.pt$")
KEEP = 2


def checkpoint_path(folder: str | os.PathLike, nimg: int) -> Path:
    """Path of the checkpoint taken after ``nimg`` processed examples."""
    return Path(folder) / f"ckpt-{nimg:012d}.pt"


def save_checkpoint(folder: str | os.PathLike, nimg: int, state: dict[str, Any]) -> Path:
    """Atomically write ``state`` as the checkpoint at ``nimg``, then prune to the newest ``KEEP``."""
    buffer = io.BytesIO()
    torch.save(state | {"nimg": nimg}, buffer)
    path = checkpoint_path(folder, nimg)
    write_atomic(path, buffer.getvalue())
    for old in list_checkpoints(folder)[:-KEEP]:
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(folder: str | os.PathLike) -> list[Path]:
    """Checkpoint files in ``folder``, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def load_latest_checkpoint(
    folder: str | os.PathLike, device: torch.device | str = "cpu"
) -> dict[str, Any] | None:
    """The newest checkpoint that loads (tensors on ``device``), or None when there is none."""
    for path in reversed(list_checkpoints(folder)):
        try:
            return torch.load(path, map_location=device, weights_only=False)
        except (RuntimeError, EOFError, OSError) as err:
            print(f"skipping unreadable checkpoint {path}: {err}")
    return None
