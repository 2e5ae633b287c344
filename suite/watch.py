"""Watching a run: progress bars, the ETA, the evaluation line, ``log.txt``, saved samples, and the opt-in
TensorBoard and W&B loggers.

Progress bars (tqdm) go to stderr and are drawn only where someone watches: when stderr is a terminal and
the process is not a SLURM job (``$SLURM_JOB_ID`` unset), so that job logs stay readable;
``SUITE_PROGRESS=1`` draws them anywhere, ``SUITE_PROGRESS=0`` nowhere.

The ETA is (kimg left) × (seconds per kimg of the last tick), written ``HH:MM:SS`` under a day and
``Dd HH:MM:SS`` from a day on (a 33-hour remainder is ``1d 09:00:00``).

``log.txt`` in a run folder holds what the run printed (stdout and stderr of the process that trains it),
appended across resumes, each attempt opened by a line with its time, host and pid. Every append asks the
run's write guard first (``suite.records.check_write``: the lease), like every file of a run folder; a
refused append stops the copy to the log (the run's next own write raises). Progress-bar redraws (text
holding a carriage return) go to the terminal only.

At every evaluation point the first :data:`PREVIEW` generated samples are saved in the run folder's
``samples/``: an image task's uint8 images as one PNG grid (``samples-<nimg>.png``, 8 per row, laid out by
torchvision's ``make_grid``), a sequence or text task's decoded strings as ``samples-<nimg>.txt``.
``suite samples RUN [--kimg K] --out DIR`` writes the same from a saved network snapshot without the trainer.

``watch: [tensorboard, wandb]`` (a run config key that enters no hash: watching does not change the
numbers) logs each tick's loss and seconds per kimg and each evaluation's value, at step = processed
examples. TensorBoard event files go to the run folder's ``tensorboard/``; a run that restarts (from its
checkpoint or from scratch) first rewrites the event files there without the events past its restored
point (``prune_events``), as its records drop the rows past it, so no step is in the raw files twice;
W&B writes to the run folder's ``wandb/``, honours
``WANDB_MODE=offline`` (then ``wandb sync`` uploads later), and its run id is derived from the run folder,
so every requeue of a run continues one W&B run. Neither package is needed unless asked for.
"""

from __future__ import annotations

import io
import os
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

from suite.config import stable_hash
from suite.outputs import claim
from suite.records import append_text, check_write, now, write_atomic

WATCHERS = ("tensorboard", "wandb")
WATCH_INSTALL = "pip install -r requirements-watch.txt"
PREVIEW = 64
T = TypeVar("T")


def progress_enabled() -> bool:
    """Whether to draw progress bars (module docstring)."""
    asked = os.environ.get("SUITE_PROGRESS", "")
    if asked in ("0", "1"):
        return asked == "1"
    return sys.stderr.isatty() and "SLURM_JOB_ID" not in os.environ


def progress(items: Iterable[T], total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    """``items`` with a tqdm bar on stderr when :func:`progress_enabled`, else ``items`` as they are."""
    if not progress_enabled():
        yield from items
        return
    from tqdm import tqdm

    with tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, leave=False) as bar:
        yield from bar


def format_eta(seconds: float) -> str:
    """``HH:MM:SS`` below a day, ``Dd HH:MM:SS`` from a day on."""
    whole = max(0, int(round(seconds)))
    days, rest = divmod(whole, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}d {clock}" if days else clock


def evaluation_line(row: Mapping[str, Any]) -> str:
    """One line for an evaluation row: point, metric, value and its protocol (with the weights of a final
    row of a run that selects a checkpoint), and how long it took."""
    extra = row.get("extra")
    weights = extra.get("weights") if isinstance(extra, Mapping) else None
    return (
        f"eval kimg {row['kimg']:g}  {row['metric']} {row['value']:.6g}  ({row['n_samples']} samples, "
        f"{row['n_reference']} references, grid {row['grid']} {row['steps']} steps, NFE {row['nfe']}, "
        + (f"{weights} weights, " if weights else "")
        + f"{row['eval_seconds']:.1f} s)"
    )


# -- log.txt -------------------------------------------------------------------------------------------


class _Tee(io.TextIOBase):
    """A text stream that writes to ``terminal`` and appends to ``log`` (module docstring)."""

    def __init__(self, terminal: TextIO, log: Path) -> None:
        self.terminal, self.log, self.logging = terminal, log, True

    def write(self, text: str) -> int:
        written = self.terminal.write(text)
        if self.logging and text and "\r" not in text:
            try:
                append_text(self.log, text)
            except Exception:  # the guard refused (lease lost) or the disk failed: the terminal still gets it
                self.logging = False
        return written

    def flush(self) -> None:
        self.terminal.flush()

    def isatty(self) -> bool:
        return self.terminal.isatty()

    def fileno(self) -> int:
        return self.terminal.fileno()


@contextmanager
def run_log(run_dir: str | os.PathLike) -> Iterator[Path]:
    """Copy this process's stdout and stderr into ``run_dir/log.txt`` inside the block."""
    path = Path(run_dir) / "log.txt"
    append_text(path, f"== {now()} {socket.gethostname()} pid {os.getpid()}\n")
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, path), _Tee(err, path)
    try:
        yield path
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


# -- samples -------------------------------------------------------------------------------------------


def _is_image_batch(decoded: Any) -> bool:
    import torch

    return isinstance(decoded, torch.Tensor) and decoded.dtype == torch.uint8 and decoded.ndim == 4


def samples_path(folder: str | os.PathLike, nimg: int, decoded: Any) -> Path:
    """Where the samples of the evaluation point ``nimg`` go: ``.png`` for images, else ``.txt``."""
    return Path(folder) / f"samples-{nimg:012d}.{'png' if _is_image_batch(decoded) else 'txt'}"


def encode_samples(decoded: Any) -> bytes:
    """A PNG grid of uint8 images [N, C, H, W] (C = 1 or 3); strings one per ``# sample k`` block; any other
    tensor (points, say) one sample per line, its values flattened (``%.6g``)."""
    import torch

    if isinstance(decoded, list) and all(isinstance(s, str) for s in decoded):
        return "".join(f"# sample {k}\n{text}\n" for k, text in enumerate(decoded)).encode()
    if isinstance(decoded, torch.Tensor) and not _is_image_batch(decoded) and decoded.ndim >= 1:
        rows = decoded.detach().cpu().double().reshape(len(decoded), -1).tolist()
        return "".join(" ".join(f"{v:.6g}" for v in row) + "\n" for row in rows).encode()
    if _is_image_batch(decoded):
        from PIL import Image
        from torchvision.utils import make_grid

        grid = make_grid(decoded.cpu(), nrow=8, padding=2)
        buffer = io.BytesIO()
        Image.fromarray(grid.permute(1, 2, 0).numpy()).save(buffer, format="PNG")
        return buffer.getvalue()
    kind = type(decoded).__name__
    shape = f" of shape {tuple(decoded.shape)} and dtype {decoded.dtype}" if hasattr(decoded, "shape") else ""
    raise ValueError(
        f"cannot save decoded samples of type {kind}{shape}: a task's decode must give uint8 images "
        "[N, C, H, W], a list of strings or a tensor of samples"
    )


def save_samples(folder: str | os.PathLike, nimg: int, decoded: Any) -> Path:
    """Write decoded samples of the point ``nimg`` into ``folder`` (atomically)."""
    path = samples_path(folder, nimg, decoded)
    claim(path)
    write_atomic(path, encode_samples(decoded))
    return path


def save_preview(folder: str | os.PathLike, nimg: int, decoded: Any) -> Path | None:
    """:func:`save_samples` for a run's evaluation point: samples that cannot be encoded (a plugin's decode
    of another form) or written (a full disk, a file-size limit) leave one warning line naming the point and
    why, and the run goes on (its records are written already); None then."""
    try:
        return save_samples(folder, nimg, decoded)
    except (ValueError, OSError) as err:
        why = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
        print(f"warning: samples at kimg {nimg / 1000:g} not saved in {folder}: {why}", flush=True)
        return None


# -- TensorBoard and W&B -------------------------------------------------------------------------------


def check_watchers(names: Iterable[str]) -> None:
    """Import each asked-for logger's package, or raise naming what to install."""
    for name in names:
        try:
            if name == "tensorboard":
                import tensorboard  # noqa: F401
            else:
                import wandb  # noqa: F401
        except ImportError as err:
            raise ValueError(
                f"watch: {name} asked for, but its package is not installed ({err}); install it with "
                f"`{WATCH_INSTALL}` or drop {name} from watch"
            ) from None


def wandb_run_id(run_dir: str | os.PathLike) -> str:
    """A W&B run id derived from the run folder's resolved path: the same for every requeue of the run."""

    return f"suite-{stable_hash(os.path.realpath(run_dir), length=16)}"


def prune_events(folder: Path, nimg: int) -> None:
    """Rewrite each TensorBoard event file in ``folder`` (atomically) without its events past step ``nimg``:
    those of an earlier attempt, which the restarted run logs again."""
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.summary.writer.record_writer import RecordWriter

    for path in sorted(folder.glob("events.out.tfevents.*")):
        records = list(RawEventFileLoader(str(path)).Load())
        kept = [record for record in records if Event.FromString(record).step <= nimg]
        if len(kept) < len(records):
            buffer = io.BytesIO()
            writer = RecordWriter(buffer)
            for record in kept:
                writer.write(record)
            write_atomic(path, buffer.getvalue())


class Watchers:
    """The asked-for loggers of one run (none: every call does nothing)."""

    def __init__(
        self, names: Iterable[str], run_dir: str | os.PathLike, label: str, config: dict[str, Any], nimg: int
    ) -> None:
        """Open the loggers ``names`` of the run in ``run_dir`` that restored ``nimg`` examples."""
        names = list(names)
        check_watchers(names)
        self.run_dir = Path(run_dir)
        self.tensorboard: Any = None
        self.wandb: Any = None
        if "tensorboard" in names:
            from torch.utils.tensorboard import SummaryWriter

            check_write(self.run_dir / "tensorboard")
            prune_events(self.run_dir / "tensorboard", nimg)
            self.tensorboard = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=nimg + 1)
        if "wandb" in names:
            import wandb

            check_write(self.run_dir / "wandb")
            self.wandb = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "infonoise-suite"),
                id=wandb_run_id(self.run_dir),
                name=label,
                resume="allow",
                dir=str(self.run_dir),
                config=config,
                settings=wandb.Settings(console="off"),  # the run's output is in log.txt
            )

    def log(self, nimg: int, values: Mapping[str, float]) -> None:
        """Log scalars at step ``nimg`` (after the run folder's write guard agrees)."""
        if self.tensorboard is None and self.wandb is None:
            return
        check_write(self.run_dir / "log.txt")
        if self.tensorboard is not None:
            for name, value in values.items():
                self.tensorboard.add_scalar(name, value, nimg)
            self.tensorboard.flush()
        if self.wandb is not None:
            self.wandb.log(dict(values), step=nimg)

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
        if self.wandb is not None:
            self.wandb.finish()
