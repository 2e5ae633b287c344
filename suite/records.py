"""Run records: the files of one run directory, written so that no crash can corrupt them.

A run directory holds
  config.yaml     the resolved config
  run.json        status (pending/running/interrupted/done/failed), provenance, wall time, last error
  stats.jsonl     one row per training tick (a loss that is not finite, or above ``DIVERGED_LOSS``, is a
                  divergence: the run fails there, and a ``done`` run whose stats hold one is never a result)
  sampler.jsonl   the sampler's density at every rebuild (once for fixed samplers)
  records.jsonl   tidy evaluation rows (one per run × evaluation point × metric × solver grid), one file
                  per run, in the schema of ``evaluation_row``; each row names its protocol: solver grid,
                  steps, NFE, generated samples, reference examples and the size of the reference split
                  they were drawn from (rows written before ``steps`` and ``reference_split`` existed are
                  read as the run's own protocol, see ``suite.report.results``)
  checkpoints/    see ``suite.run.checkpoint``; with best-validation selection also ``best-validation.pt``,
                  the best raw weights so far (``suite.run.selection``)
  snapshots/      the EMA network and sampler state at each evaluation point (``suite eval`` re-scores them)
JSON files are replaced atomically (write to a temporary file, fsync, rename), with the mode a plain
``open`` gives, 0666 less the process's umask (``mkstemp``'s own 0600 would hide them from colleagues on a
shared cluster; ``created_mode``). JSONL rows are appended
and fsynced; a kill mid-append can only tear the last line, which readers skip, and a resumed run
rewrites each JSONL file atomically without the torn line and the rows past its checkpoint, so no row
is ever written twice.

Every write through this module into a folder with a registered write guard (:func:`guard_writes`: the
run lease of ``suite.lease`` registers its ownership check for the run directory it holds) calls the guard
first, and again just before a replacing rename; a guard refuses the write by raising. After the write (the
append's fsync, the rename) the guard's fence is asked whether the write stands: a writer that lost the
folder before the write (its lease taken over while it was stopped between the guard and the write) undoes
it, an append by truncating the file back to its size before the append, a replace by putting back the
file it replaced (kept as a hard link ``.<name>.<random>.prev`` for the rename's duration), and then
raises. A write is undone only while the file is still as the writer left it: a later writer's change is
never undone. ``pause_before_write`` is the stop point between the guard and the write (None: no stop).
Links. The run's own files and folders (``OWN_FILES``, ``OWN_FOLDERS``) are never read or written through
a symbolic link: JSONL files are opened with ``O_NOFOLLOW``, an atomic replace renames over a link rather
than writing through it, and a launch refuses a run folder where any of them is a link
(:meth:`RunDirectory.refuse_links`), naming it, since a write or a clean-up there would land outside the
run folder.

Any bytes. A JSONL line is a record when it is UTF-8, parses as JSON (``json.loads``, so within Python's
4300-digit limit on integers and its recursion limit) and is an object. A last line that is not one is
taken as torn by a kill and dropped silently: readers skip it, a resume removes it, and so does the next
append when it lacks its newline (as a torn line does). Every other line that is not a record is skipped
with a warning on stderr naming the file and the line, once per line per read, and kept on disk (a
resumed run's rewrite keeps it), so that nothing is lost silently.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from suite.metrics import MetricSpec

SCHEMA_VERSION = 2
RUN_STATUSES = ("pending", "running", "interrupted", "done", "failed")
# A mean training loss per example above this is a divergence: a weighted loss is O(1) per dimension at the
# start of training and falls from there, and no task has 1e8 dimensions; a diverging run passes it within a
# few steps (ring2d at lr=2e3: 300 at the first step, 1e22 at the third) and overflows float32 soon after.
DIVERGED_LOSS = 1e12


def diverged(loss: object) -> bool:
    """Whether a mean training loss per example (a ``stats.jsonl`` row's ``loss``) says the run diverged:
    a number that is NaN, ±inf or above ``DIVERGED_LOSS`` (anything else, e.g. no loss, says nothing)."""
    if isinstance(loss, bool) or not isinstance(loss, (int, float)):
        return False
    return not math.isfinite(loss) or loss > DIVERGED_LOSS


TRACKED_PACKAGES = (
    "torch",
    "torchvision",
    "numpy",
    "scipy",
    "hydra-core",
    "pandas",
    "torch-fidelity",
    "submitit",
)
# What a run writes in its folder: never read or written through a link.
OWN_FILES = ("run.json", "config.yaml", "records.jsonl", "stats.jsonl", "sampler.jsonl")
OWN_FOLDERS = ("checkpoints", "snapshots", "samples", "tensorboard", "wandb")


EVALUATION_COLUMNS = (
    "schema_version", "task", "modality", "budget", "sampler", "seed", "nimg", "kimg", "metric",
    "metric_label", "paper_metric", "substitute_metric", "higher_is_better", "scale", "value", "extra",
    "stand_in_data", "data", "data_fingerprint", "solver", "grid", "steps", "nfe", "n_samples", "n_reference",
    "reference_split", "guidance", "importance_weighting", "comparison_hash", "config_hash", "eval_seconds",
    "wall_time",
)  # fmt: skip


# ``extra["weights"]`` of the final rows of a run that selects a checkpoint (``suite.run.selection``): the
# selected raw weights give the run's final values; the final EMA's values are kept beside them
SELECTED_WEIGHTS = "best-validation raw"
EMA_WEIGHTS = "final EMA"


def evaluation_row(*, nimg: int, spec: MetricSpec, result: dict[str, float], **fields: Any) -> dict[str, Any]:
    """One tidy evaluation row: the metric's spec and value, its extras (e.g. a spread over k-means seeds),
    and the run's identifying fields; every column of ``EVALUATION_COLUMNS`` must be given."""
    extra = {k: v for k, v in result.items() if k != "value"}
    row = {
        "schema_version": SCHEMA_VERSION,
        "nimg": nimg,
        "kimg": nimg / 1000,
        "metric": spec.name,
        "metric_label": spec.label,
        "paper_metric": spec.published is not None,
        "substitute_metric": spec.substitutes is not None,
        "higher_is_better": spec.higher_is_better,
        "scale": spec.scale,
        "value": float(result["value"]),
        "extra": extra,
        **fields,
    }
    missing = [c for c in EVALUATION_COLUMNS if c not in row]
    unknown = [c for c in row if c not in EVALUATION_COLUMNS]
    if missing or unknown:
        raise ValueError(f"evaluation row: missing columns {missing}, unknown columns {unknown}")
    return row


@dataclass(frozen=True)
class WriteGuard:
    """A folder's write guard: ``check`` raises to refuse a write before it; ``fence(ctime_ns)``, asked after
    a write whose file then had that change time (ns, the file system's clock), returns whether the write
    stands (False: the writer had lost the folder before it, and undoes it)."""

    check: Callable[[], None]
    fence: Callable[[int], bool] | None = None


_WRITE_GUARDS: dict[str, WriteGuard] = {}
# The stop point between a write's guard and the write (tests place a stop there); None: no stop.
pause_before_write: Callable[[Path], None] | None = None


def guard_writes(
    folder: str | os.PathLike, check: Callable[[], None], fence: Callable[[int], bool] | None = None
) -> None:
    """Call ``check`` before every write of this module under ``folder``, and ``fence`` after it, until
    :func:`unguard_writes` (see :class:`WriteGuard`)."""
    _WRITE_GUARDS[os.path.realpath(folder)] = WriteGuard(check, fence)


def unguard_writes(folder: str | os.PathLike) -> None:
    """Remove the write guard of ``folder``."""
    _WRITE_GUARDS.pop(os.path.realpath(folder), None)


def _guards(path: str | os.PathLike) -> list[WriteGuard]:
    if not _WRITE_GUARDS:
        return []
    target = os.path.realpath(path)
    return [guard for folder, guard in list(_WRITE_GUARDS.items()) if target.startswith(folder + os.sep)]


def check_write(path: str | os.PathLike) -> None:
    """Call the write guard of the folder holding ``path``, if one is registered (it raises to refuse)."""
    for guard in _guards(path):
        guard.check()


def _pause(path: Path) -> None:
    if pause_before_write is not None:
        pause_before_write(path)


def _fence_write(path: Path, ctime_ns: int, undo: Callable[[], None]) -> None:
    """After a write to ``path``: ``undo`` it when a guard's fence says it does not stand, then let the guard
    refuse (raise)."""
    guards = _guards(path)
    if any(guard.fence is not None and not guard.fence(ctime_ns) for guard in guards):
        undo()
    for guard in guards:
        guard.check()


class LinkedRunFile(ValueError):
    """One of a run folder's own files or folders is a symbolic link."""

    def __init__(self, path: str | os.PathLike) -> None:
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        super().__init__(
            f"{path} is a symbolic link{target}; the suite reads and writes a run folder's own files and "
            "folders (records, stats, checkpoints/, snapshots/) only as themselves, never through a link: "
            "replace the link with a copy of what it points to, or remove it, and re-run"
        )
        self.path = Path(path)


def refuse_link(path: str | os.PathLike) -> None:
    """Raise :class:`LinkedRunFile` when ``path`` is a symbolic link (dangling or not)."""
    if Path(path).is_symlink():
        raise LinkedRunFile(path)


def _open_own(path: Path, flags: int) -> int:
    """``os.open`` that never follows a link at ``path`` (``O_NOFOLLOW``); a link raises LinkedRunFile."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise LinkedRunFile(path) from None
        raise


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process's umask: read from /proc/self/status where Linux gives it (no change of process state),
    else by setting and restoring it."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def created_mode(base: int = 0o666) -> int:
    """The mode ``open`` (``base`` 0o666) or ``mkdir`` (0o777) gives a new file or folder: ``base`` less
    the umask. ``tempfile.mkstemp`` and ``mkdtemp`` create 0600 and 0700 instead; chmod their results to
    this before renaming them into place."""
    return base & ~current_umask()


NULL_FILE = "null-network.jsonl"  # a comparison folder's null-network rows (``suite eval --null``)
NULL_SAMPLER = "null (F ≡ 0)"  # their sampler label: the run's network with raw output F ≡ 0


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a torn one; a link
    at ``path`` is replaced, not written through. The file gets the mode a plain ``open`` gives it
    (``created_mode``)."""
    path = Path(path)
    check_write(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    fenced = bool(_guards(path))
    backup = Path(tmp).with_suffix(".prev") if fenced else None
    try:
        os.fchmod(fd, created_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            identity = os.fstat(handle.fileno()).st_ino
        check_write(path)
        _pause(path)
        if backup is not None:
            try:
                os.link(path, backup, follow_symlinks=False)
            except FileNotFoundError:
                backup = None
        os.replace(tmp, path)
        if fenced:
            _fence_write(
                path,
                os.stat(path, follow_symlinks=False).st_ctime_ns,
                lambda: _undo_replace(path, identity, backup),
            )
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    finally:
        if backup is not None:
            backup.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _undo_replace(path: Path, identity: int, backup: Path | None) -> None:
    """Put back the file a replace of ``path`` (by the file of inode ``identity``) replaced, while ``path`` is
    still that file."""
    with suppress(FileNotFoundError):
        if os.stat(path, follow_symlinks=False).st_ino != identity:
            return
        if backup is None:
            path.unlink()
        else:
            os.replace(backup, path)
        _fsync_dir(path.parent)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON."""
    write_atomic(path, (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode())


def read_json(path: str | os.PathLike) -> Any:
    """Parsed JSON of ``path``."""
    return json.loads(Path(path).read_text())


def parse_record(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """(the record, "") of one JSONL line, or (None, why it is not one)."""
    try:
        row = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as err:
        return None, f"invalid UTF-8 at byte {err.start}"
    except (ValueError, RecursionError) as err:
        return None, f"not JSON: {str(err).splitlines()[0][:100]}"
    if not isinstance(row, dict):
        return None, f"a JSON {type(row).__name__}, not an object"
    return row, ""


@dataclass(frozen=True)
class JsonlLine:
    """One non-empty line of a JSONL file: its 1-based number, bytes, and record (None if unreadable)."""

    number: int
    raw: bytes
    row: dict[str, Any] | None


@dataclass(frozen=True)
class JsonlContent:
    """What a JSONL file holds: its records, the numbers of the lines that are not records (other than a
    torn last one, which sets ``torn``), and every other non-empty line in order."""

    rows: list[dict[str, Any]]
    unreadable: list[int]
    torn: bool
    lines: list[JsonlLine]


def scan_jsonl(path: str | os.PathLike) -> JsonlContent:
    """Every line of a JSONL file (empty content if absent), without following a link (LinkedRunFile);
    each unreadable line other than a torn last one is reported on stderr (module docstring)."""
    path = Path(path)
    try:
        fd = _open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return JsonlContent([], [], False, [])
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    pieces = data.split(b"\n")
    last = max((i for i, raw in enumerate(pieces) if raw.strip()), default=-1)
    lines, unreadable, torn = [], [], False
    for i, raw in enumerate(pieces):
        if not raw.strip():
            continue
        row, why = parse_record(raw)
        if row is None and i == last:  # torn by a kill mid-append, or garbage where it would be
            torn = True
            continue
        if row is None:
            unreadable.append(i + 1)
            print(f"warning: {path} line {i + 1} is not a record ({why}); skipped", file=sys.stderr)
        lines.append(JsonlLine(i + 1, raw, row))
    rows = [line.row for line in lines if line.row is not None]
    return JsonlContent(rows, unreadable, torn, lines)


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All records of a JSONL file ([] if absent); see :func:`scan_jsonl`."""
    return scan_jsonl(path).rows


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Atomically replace a JSONL file with ``rows``."""
    text = "".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows)
    write_atomic(path, text.encode())


def append_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Append rows (one JSON object per line) and fsync, never through a link (``O_NOFOLLOW``). A last line
    without its newline is first dropped when it is torn (not a record), or ended when it is a record, so
    that the new rows never join it."""
    path = Path(path)
    check_write(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows).encode()
    _pause(path)
    fd = _open_own(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "r+b") as handle:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            start = handle.read().rfind(b"\n") + 1
            if parse_record(os.pread(fd, size - start, start))[0] is None:
                os.ftruncate(fd, start)
                size = start
            else:
                data = b"\n" + data
        handle.write(data)
        handle.flush()
        os.fsync(fd)
        written = os.fstat(fd)

        def undo() -> None:  # only while the file ends with this append
            if os.fstat(fd).st_size == written.st_size:
                os.ftruncate(fd, size)
                os.fsync(fd)

        _fence_write(path, written.st_ctime_ns, undo)


def append_text(path: str | os.PathLike, text: str) -> None:
    """Append ``text`` to a log file (no fsync: a log, not a record), never through a link."""
    path = Path(path)
    check_write(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "ab") as handle:
        handle.write(text.encode("utf-8", errors="replace"))


def _written_after(row: dict[str, Any] | None, max_nimg: int) -> bool:
    """Whether a record's ``nimg`` is a number past ``max_nimg`` (unreadable lines and records without a
    numeric ``nimg`` are not: they are kept as they are)."""
    nimg = None if row is None else row.get("nimg", 0)
    return isinstance(nimg, int | float) and not isinstance(nimg, bool) and nimg > max_nimg


def truncate_jsonl(path: str | os.PathLike, max_nimg: int) -> None:
    """Keep the rows up to the checkpoint a run resumes from (``nimg`` ≤ ``max_nimg``), dropping a torn
    last line and keeping unreadable lines as they are; the file is rewritten atomically only when
    something is dropped."""
    content = scan_jsonl(path)
    kept = [line for line in content.lines if not _written_after(line.row, max_nimg)]
    if content.torn or len(kept) != len(content.lines):
        write_atomic(path, b"".join(line.raw + b"\n" for line in kept))


# What makes an evaluation row one of a kind in a run: the metric, the evaluation point and the protocol it
# was scored with (solver grid and steps, samples, reference, guidance, and which weights: ``extra.weights``).
ROW_KEY = (
    "metric", "nimg", "solver", "grid", "steps", "nfe", "n_samples", "n_reference", "reference_split",
    "guidance", "importance_weighting",
)  # fmt: skip


def row_key(row: dict[str, Any]) -> str:
    """The key of an evaluation row (``ROW_KEY`` and ``extra.weights``): two rows of a run with one key
    record the same evaluation twice."""
    extra = row.get("extra")
    weights = extra.get("weights") if isinstance(extra, dict) else None
    return json.dumps([row.get(name) for name in ROW_KEY] + [weights], sort_keys=True, default=str)


def drop_duplicate_rows(path: str | os.PathLike) -> list[int]:
    """Keep the first row of each key (:func:`row_key`) in a records file, rewriting it atomically without
    the later ones (unreadable lines are kept as they are); returns the numbers of the dropped lines."""
    content = scan_jsonl(path)
    seen: set[str] = set()
    kept, dropped = [], []
    for line in content.lines:
        key = None if line.row is None else row_key(line.row)
        if key is not None and key in seen:
            dropped.append(line.number)
            continue
        if key is not None:
            seen.add(key)
        kept.append(line)
    if dropped:
        write_atomic(path, b"".join(line.raw + b"\n" for line in kept))
    return dropped


def now() -> str:
    """UTC time stamp, ISO 8601."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages whose behaviour enters the numbers."""
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def code_version() -> dict[str, Any]:
    """Git SHA of the suite's source and whether the tree had uncommitted changes; ``unknown`` when the suite
    is not the top level of its git work tree (an exported copy inside another repository would otherwise
    report that repository's commit)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""

    try:
        top = git("rev-parse", "--show-toplevel")
        if not top or Path(top).resolve() != root:
            return {"git_sha": "unknown", "git_dirty": False}
        sha = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.TimeoutExpired):
        sha, dirty = "", False
    return {"git_sha": sha or "unknown", "git_dirty": dirty}


def host_info() -> dict[str, Any]:
    """Host, Python and SLURM identifiers of the process writing the record."""
    info: dict[str, Any] = {"host": socket.gethostname(), "python": platform.python_version()}
    for key in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT"):
        if key in os.environ:
            info[key.lower()] = os.environ[key]
    return info


class RunDirectory:
    """The files of one run; ``run.json`` updates merge into the existing content."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    @property
    def run_json(self) -> Path:
        return self.path / "run.json"

    @property
    def records(self) -> Path:
        return self.path / "records.jsonl"

    @property
    def stats(self) -> Path:
        return self.path / "stats.jsonl"

    @property
    def sampler_log(self) -> Path:
        return self.path / "sampler.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def snapshots(self) -> Path:
        return self.path / "snapshots"

    def info(self) -> dict[str, Any]:
        """Content of run.json ({} before the first write, and for a damaged run.json, which is reported:
        the run is then treated as unrecorded, resumes from its checkpoints and records itself again)."""
        if not self.run_json.is_file():
            return {}
        try:
            info = read_json(self.run_json)
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or past Python's int-string limit
            info = None
        if not isinstance(info, dict):
            warnings.warn(
                f"{self.run_json} is not a JSON object; the run counts as unrecorded (re-run its launch "
                "command to resume it and record it again)",
                stacklevel=2,
            )
            return {}
        return info

    def status(self) -> str:
        """The run's status, 'pending' when it has no record yet."""
        return self.info().get("status", "pending")

    def update(self, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` into run.json atomically and return the new content."""
        if "status" in fields and fields["status"] not in RUN_STATUSES:
            raise ValueError(f"unknown run status {fields['status']!r}; valid: {', '.join(RUN_STATUSES)}")
        info = self.info() | fields | {"schema_version": SCHEMA_VERSION, "updated": now()}
        write_json(self.run_json, info)
        return info

    def refuse_links(self) -> None:
        """Raise :class:`LinkedRunFile` naming the first of the run's own files and folders that is a link:
        a write through it would land outside the run folder, a clean-up or prune would delete there."""
        for name in (*OWN_FILES, *OWN_FOLDERS):
            refuse_link(self.path / name)

    def rows(self) -> list[dict[str, Any]]:
        """The tidy evaluation rows of this run."""
        return read_jsonl(self.records)

    def truncate_to(self, nimg: int) -> None:
        """Forget every row written after ``nimg`` processed examples (on resume)."""
        for path in (self.records, self.stats, self.sampler_log):
            truncate_jsonl(path, nimg)
