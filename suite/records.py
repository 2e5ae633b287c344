"""Run records: the files of one run directory, written so that no crash can corrupt them.

A run directory holds
  config.yaml     the resolved config
  run.json        status (pending/running/interrupted/done/failed), provenance, wall time, last error
  stats.jsonl     one row per training tick
  sampler.jsonl   the sampler's density at every rebuild (once for fixed samplers)
  records.jsonl   tidy evaluation rows (one per run × evaluation point × metric × solver grid), one file
                  per run, in the schema of ``evaluation_row``
  checkpoints/    see ``suite.checkpoint``
  snapshots/      the EMA network and sampler state at each evaluation point (``suite eval`` re-scores them)
JSON files are replaced atomically (write to a temporary file, fsync, rename). JSONL rows are appended
and fsynced; a kill mid-append can only tear the last line, which readers skip, and a resumed run
rewrites each JSONL file atomically without the torn line and the rows past its checkpoint, so no row
is ever written twice.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from suite.task import MetricSpec

SCHEMA_VERSION = 2
RUN_STATUSES = ("pending", "running", "interrupted", "done", "failed")
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


EVALUATION_COLUMNS = (
    "schema_version", "task", "modality", "budget", "sampler", "seed", "nimg", "kimg",
    "metric", "metric_label", "paper_metric", "substitute_metric", "higher_is_better", "value", "extra",
    "stand_in_data", "data", "data_fingerprint", "solver", "grid", "nfe", "n_samples", "n_reference",
    "guidance", "importance_weighting", "comparison_hash", "config_hash", "eval_seconds", "wall_time",
)  # fmt: skip


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
        "value": float(result["value"]),
        "extra": extra,
        **fields,
    }
    missing = [c for c in EVALUATION_COLUMNS if c not in row]
    unknown = [c for c in row if c not in EVALUATION_COLUMNS]
    if missing or unknown:
        raise ValueError(f"evaluation row: missing columns {missing}, unknown columns {unknown}")
    return row


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    _fsync_dir(path.parent)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON."""
    write_atomic(path, (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode())


def read_json(path: str | os.PathLike) -> Any:
    """Parsed JSON of ``path``."""
    return json.loads(Path(path).read_text())


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All rows of a JSONL file ([] if absent); a torn last line (a kill mid-append) is skipped."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Atomically replace a JSONL file with ``rows``."""
    text = "".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows)
    write_atomic(path, text.encode())


def append_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Append rows (one JSON object per line) and fsync."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write("".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows))
        handle.flush()
        os.fsync(handle.fileno())


def truncate_jsonl(path: str | os.PathLike, max_nimg: int) -> None:
    """Keep the rows up to the checkpoint a run resumes from (``nimg`` ≤ ``max_nimg``), dropping a torn
    last line; the file is rewritten atomically only when something is dropped."""
    path = Path(path)
    if not path.is_file():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [row for row in read_jsonl(path) if row.get("nimg", 0) <= max_nimg]
    if len(kept) != len(lines):
        write_jsonl(path, kept)


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
        except (json.JSONDecodeError, UnicodeDecodeError):
            info = None
        if not isinstance(info, dict):
            warnings.warn(f"{self.run_json} is not a JSON object; the run counts as unrecorded", stacklevel=2)
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

    def rows(self) -> list[dict[str, Any]]:
        """The tidy evaluation rows of this run."""
        return read_jsonl(self.records)

    def truncate_to(self, nimg: int) -> None:
        """Forget every row written after ``nimg`` processed examples (on resume)."""
        for path in (self.records, self.stats, self.sampler_log):
            truncate_jsonl(path, nimg)
