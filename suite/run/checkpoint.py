"""Atomic training checkpoints that load without unpickling code, and resume-by-rerunning (the EDM2 pattern).

A checkpoint ``checkpoints/ckpt-<nimg>.pt`` holds everything the loop needs to continue bit for bit:
network, EMA, optimiser and sampler state dicts, processed examples (which fix the data position and
every random draw, see ``suite.run.step``), wall time and the config hash. Every piece is a plain
container (dict, list, tuple) of tensors, strings, numbers, booleans and None: :func:`save_checkpoint`
refuses anything else, naming where it sits in the state, and checkpoints are read with
``torch.load(weights_only=True)``, which builds no other object, so loading a checkpoint cannot run
code. A checkpoint that holds other objects (a pickled instance, a function call) is refused with an error
naming the file and the class or function it refers to; it was not written by this suite.

A checkpoint is written to a temporary file, fsynced and renamed, so a kill at any moment leaves either
the previous or the new checkpoint, never a torn one; the temporary file of a killed writer is removed
when the run starts again (``suite.lease.clean_temporary_files``). On start the loop loads the newest
checkpoint that reads back: a truncated or otherwise unreadable one is skipped with a message naming
it, and the one before it is used. The two newest are kept. A ``checkpoints/`` folder that is a symbolic
link is refused, naming it (:class:`suite.records.LinkedRunFile`), before anything is written, listed or
pruned, and links inside it are not checkpoints: pruning never deletes what a link reaches.

Fault injection (``tests/integration/test_faults.py``): ``SUITE_FAULT=<point>@<nimg>`` makes the process
SIGKILL itself at ``point`` once ``nimg`` examples are processed, so that a test's kill lands exactly where it
means it to; ``SUITE_FAULT=<point>@<nimg>:<SIGNAL>`` sends it that signal instead (e.g. ``SIGTERM``), once.
Points: ``step`` (the training loop, after the step), ``checkpoint`` (``save_checkpoint``, after half of
the checkpoint is in its temporary file and before the rename), ``data`` (a run's data loaded, as its training
starts; nimg 0). Unset, nothing happens.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import signal
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

from suite.records import check_write, refuse_link, write_atomic

_NAME = re.compile(r"^ckpt-(\d+)\.pt$")
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")  # torch's refusal names the class or function after "GLOBAL "
KEEP = 2
FAULT_ENV = "SUITE_FAULT"
_signal_sent = False  # a fault signal is sent once per process
_ATOMS = (torch.Tensor, str, int, float, bool, type(None), torch.Size, torch.dtype, torch.device)


def fault_point(point: str, nimg: int, before_kill: bytes | None = None, path: Path | None = None) -> None:
    """SIGKILL this process if ``$SUITE_FAULT`` is ``<point>@<n>`` and ``nimg`` ≥ n, or send it the signal
    of ``<point>@<n>:<SIGNAL>`` the first time (module docstring); before a kill, write ``before_kill`` to a
    temporary file beside ``path``, as an interrupted writer leaves it."""
    global _signal_sent
    name, _, at = os.environ.get(FAULT_ENV, "").partition("@")
    at, _, signal_name = at.partition(":")
    if name != point or not at or nimg < int(at):
        return
    if signal_name:
        if signal_name not in signal.Signals.__members__:
            raise ValueError(
                f"{FAULT_ENV}: unknown signal {signal_name!r}; name one such as SIGTERM or SIGINT"
            )
        if not _signal_sent:
            _signal_sent = True
            os.kill(os.getpid(), signal.Signals[signal_name])
        return
    if before_kill is not None and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, _ = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.write(fd, before_kill)
    os.kill(os.getpid(), signal.SIGKILL)


class UnsafeCheckpoint(ValueError):
    """A checkpoint file that holds objects other than tensors and plain containers."""


def check_plain(value: Any, where: str = "state") -> None:
    """Raise TypeError naming the first piece of ``value`` that ``torch.load(weights_only=True)`` refuses."""
    if type(value) in _ATOMS or isinstance(value, torch.Tensor):
        return
    if type(value) in (list, tuple):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]")
        return
    if type(value) in (dict, OrderedDict):
        for key, item in value.items():
            if type(key) not in (str, int):
                raise TypeError(f"{where} has a key of type {type(key).__name__} ({key!r})")
            check_plain(item, f"{where}[{key!r}]")
        return
    raise TypeError(
        f"{where} is a {type(value).__module__}.{type(value).__qualname__} ({value!r:.80}); a checkpoint "
        "holds only tensors, str, int, float, bool, None and dict/list/tuple of them"
    )


def checkpoint_path(folder: str | os.PathLike, nimg: int) -> Path:
    """Path of the checkpoint taken after ``nimg`` processed examples."""
    return Path(folder) / f"ckpt-{nimg:012d}.pt"


def save_checkpoint(folder: str | os.PathLike, nimg: int, state: dict[str, Any]) -> Path:
    """Atomically write ``state`` as the checkpoint at ``nimg``, then prune to the newest ``KEEP``."""
    refuse_link(folder)
    state = state | {"nimg": int(nimg)}
    check_plain(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = checkpoint_path(folder, nimg)
    fault_point("checkpoint", nimg, buffer.getvalue()[: buffer.tell() // 2], path)
    write_atomic(path, buffer.getvalue())
    for old in list_checkpoints(folder)[:-KEEP]:
        check_write(old)  # a removal is a write: the run's lease guards it too
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(folder: str | os.PathLike) -> list[Path]:
    """Checkpoint files in ``folder``, oldest first; links are not listed, a linked ``folder`` is refused."""
    folder = Path(folder)
    refuse_link(folder)
    if not folder.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name)) and not p.is_symlink()
    ]
    return [p for _, p in sorted(found)]


def load_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Read one checkpoint with ``weights_only=True``.

    Raises :class:`UnsafeCheckpoint` (naming the file and the refused class or function) for a complete
    file that holds other objects, and OSError/RuntimeError/EOFError for a truncated or unreadable one.
    """
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise RuntimeError(f"{path} is not a complete checkpoint archive (truncated or not a checkpoint)")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        found = _GLOBAL.search(str(err))
        what = f"a pickled reference to {found.group(1)}" if found else "objects other than tensors"
        raise UnsafeCheckpoint(
            f"refusing checkpoint {path}: it holds {what}, which torch.load(weights_only=True) does not "
            "build; suite checkpoints hold only tensors and plain containers. Remove the file (the run "
            "then resumes from an earlier checkpoint, or starts over) if it is not yours to trust."
        ) from None
    if not isinstance(state, dict) or "nimg" not in state:
        raise RuntimeError(f"{path} does not hold a training state (no 'nimg')")
    return state


def load_latest_checkpoint(
    folder: str | os.PathLike, device: torch.device | str = "cpu"
) -> dict[str, Any] | None:
    """The newest checkpoint that loads (tensors on ``device``), or None when there is none.

    Unreadable checkpoints are skipped with a message; an unsafe one raises :class:`UnsafeCheckpoint`.
    """
    for path in reversed(list_checkpoints(folder)):
        try:
            return load_checkpoint(path, device)
        except (RuntimeError, EOFError, OSError) as err:
            print(f"skipping unreadable checkpoint {path}: {str(err).splitlines()[0]}", flush=True)
    return None
