"""The run lease: at most one process trains a run directory, on local disks and on shared file systems.

``lease.json`` in the run directory names the process that trains the run: host (name and boot id),
pid, the process's start time in clock ticks (``/proc/<pid>/stat`` field 22, which tells a reused pid
apart), SLURM job id and restart count, when it took the lease and a heartbeat time stamp.

Taking the lease. The record is written to a temporary file of a unique name and hard-linked to
``lease.json``: link(2) fails with EEXIST when the name exists, atomically on local file systems and on
NFS alike, so of any number of simultaneous launchers exactly one gets the lease. When the reply of a
successful link is lost over NFS the call may still report an error; the temporary file's link count
(2) then tells that it succeeded (the NFS-safe exclusive create described under O_EXCL in open(2)).

A lease is stale, and is taken over, when
  * its host is this host (same name and boot id) and its process is gone: no ``/proc`` entry, a zombie,
    or another process under the pid;
  * its host has this name but another boot id: the machine restarted since;
  * it names the SLURM job this process runs in, with an earlier restart count: SLURM runs a job once
    at a time, so a requeued job's previous process is dead, whichever node it ran on;
  * its heartbeat is older than ``timeout`` seconds (another host, whose processes cannot be seen);
  * it cannot be parsed (our writers replace it atomically, so it was not written by a holder).
A takeover holds the break lock ``lease.json.break`` (created the same way, held for milliseconds):
under it the lease is read again and removed only if it is still the stale record, then the new
holder links its own. A break lock left by a process that died while holding it is removed once its
process is gone (this host) or after ``BREAK_TIMEOUT`` seconds.

The holder refreshes the heartbeat from a daemon thread every ``interval`` seconds (also during
evaluations, which have no training ticks), after checking that the lease still holds its token. A
holder that finds another record has lost its lease (it was judged stale); :meth:`Lease.heartbeat`,
called at every training tick, then raises :class:`LeaseLost`, so two processes never keep writing one
run. Only the holder writes in a run directory; the temporary files of ``suite.records.write_atomic``
found there when the lease is taken were left by a dead writer, and :func:`clean_temporary_files`
removes them.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LEASE_FILE = "lease.json"
BREAK_FILE = "lease.json.break"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_INTERVAL_S = 30.0
BREAK_TIMEOUT_S = 60.0
ACQUIRE_PATIENCE_S = 30.0
# The temporary files the lease holder's writers leave when killed, by folder of the run directory:
# ``suite.records.write_atomic`` names them ``.<name>.`` + tempfile.mkstemp's 8 characters of [a-z0-9_] +
# ``.tmp``, for the run's own files (``suite.records.OWN_FILES``), checkpoints and network snapshots.
_RANDOM = r"[a-z0-9_]{8}"
_TEMPORARY = {
    ".": re.compile(
        rf"\.(?:run\.json|config\.yaml|records\.jsonl|stats\.jsonl|sampler\.jsonl)\.{_RANDOM}\.tmp"
    ),
    "checkpoints": re.compile(rf"\.ckpt-\d{{12,}}\.pt\.{_RANDOM}\.tmp"),
    "snapshots": re.compile(rf"\.snapshot-\d{{12,}}\.pt\.{_RANDOM}\.tmp"),
}
# The lease's own (``_exclusive_create``, ``Lease.refresh``): ``.lease.json[.break].<uuid4 hex>.link``.
_LEASE_TEMPORARY = re.compile(r"\.lease\.json(?:\.break)?\.[0-9a-f]{32}\.link")


class RunBusy(Exception):
    """Another live process holds the run's lease."""

    def __init__(self, run_dir: Path, holder: Holder | None) -> None:
        who = holder.describe() if holder else "another process (its lease is being taken over)"
        super().__init__(f"{run_dir} is being trained by {who}")
        self.run_dir = run_dir
        self.holder = holder


class LeaseLost(Exception):
    """This process's lease was taken over (its heartbeat was judged stale); it must stop writing."""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks) of ``pid`` from /proc, None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _process_alive(pid: int, start_ticks: int | None) -> bool:
    """Whether ``pid`` on this host is the live process that started at ``start_ticks``."""
    if Path("/proc/self/stat").is_file():
        stat = _proc_stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            return False
        return start_ticks is None or stat[1] == start_ticks
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _iso(stamp: float) -> str:
    return _dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Holder:
    """The content of a lease file."""

    token: str
    host: str
    boot_id: str
    pid: int
    start_ticks: int | None
    slurm_job: str | None
    slurm_restart: int
    since: float
    heartbeat: float

    @classmethod
    def of_this_process(cls) -> Holder:
        stat = _proc_stat(os.getpid())
        job = os.environ.get("SLURM_JOB_ID")
        stamp = time.time()
        return cls(
            token=uuid.uuid4().hex,
            host=socket.gethostname(),
            boot_id=_boot_id(),
            pid=os.getpid(),
            start_ticks=stat[1] if stat else None,
            slurm_job=job,
            slurm_restart=int(os.environ.get("SLURM_RESTART_COUNT", "0")) if job else 0,
            since=stamp,
            heartbeat=stamp,
        )

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder recorded in ``text``; None when it is not a lease record."""
        try:
            raw = json.loads(text)
            return cls(
                token=str(raw["token"]),
                host=str(raw["host"]),
                boot_id=str(raw.get("boot_id", "")),
                pid=int(raw["pid"]),
                start_ticks=None if raw.get("start_ticks") is None else int(raw["start_ticks"]),
                slurm_job=None if raw.get("slurm_job") is None else str(raw["slurm_job"]),
                slurm_restart=int(raw.get("slurm_restart", 0)),
                since=float(raw["since"]),
                heartbeat=float(raw["heartbeat"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def to_bytes(self) -> bytes:
        record: dict[str, Any] = asdict(self) | {
            "since_utc": _iso(self.since),
            "heartbeat_utc": _iso(self.heartbeat),
        }
        return (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()

    def describe(self) -> str:
        """``host pid N since T`` plus the SLURM job and the heartbeat's age."""
        job = f", SLURM job {self.slurm_job}" if self.slurm_job else ""
        age = max(time.time() - self.heartbeat, 0.0)
        return f"{self.host} pid {self.pid}{job} since {_iso(self.since)} (heartbeat {age:.0f} s ago)"

    def stale(self, timeout: float, me: Holder | None = None) -> bool:
        """Whether the process this record names can no longer be training (see the module docstring)."""
        me = me or Holder.of_this_process()
        if self.host == me.host and (not self.boot_id or not me.boot_id or self.boot_id == me.boot_id):
            return not _process_alive(self.pid, self.start_ticks)
        if self.host == me.host:
            return True  # same machine, rebooted since the record was written
        if self.slurm_job is not None and self.slurm_job == me.slurm_job:
            return self.slurm_restart < me.slurm_restart
        return time.time() - self.heartbeat > timeout


def read_holder(run_dir: str | os.PathLike) -> Holder | None:
    """The recorded holder of a run's lease; None when there is no (readable) lease."""
    try:
        return Holder.parse((Path(run_dir) / LEASE_FILE).read_text())
    except OSError:
        return None


def _exclusive_create(path: Path, content: bytes) -> bool:
    """Create ``path`` with ``content`` unless it exists; True when this call created it (NFS-safe)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.link")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as err:
            if os.stat(tmp).st_nlink != 2:
                if err.errno == errno.EEXIST:
                    return False
                raise
        return True
    finally:
        tmp.unlink(missing_ok=True)


class Lease:
    """The lease of one run directory; ``with Lease(run_dir):`` holds it (or raises :class:`RunBusy`)."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        timeout: float = DEFAULT_TIMEOUT_S,
        interval: float = DEFAULT_INTERVAL_S,
    ) -> None:
        if not 0 < interval < timeout:
            raise ValueError(f"lease interval must be in (0, timeout={timeout}), got {interval}")
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LEASE_FILE
        self.break_path = self.run_dir / BREAK_FILE
        self.timeout = timeout
        self.interval = interval
        self.record: Holder | None = None
        self.taken_over: Holder | None = None
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- taking and giving back ----------------------------------------------------------------------
    def acquire(self, patience: float = ACQUIRE_PATIENCE_S) -> None:
        """Take the lease, taking over a stale one; raises :class:`RunBusy` naming a live holder."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        me = Holder.of_this_process()
        deadline = time.monotonic() + patience
        while True:
            if _exclusive_create(self.path, me.to_bytes()):
                self.record, self._lost = me, None
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._refresh_loop, name="lease-heartbeat", daemon=True
                )
                self._thread.start()
                return
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                continue
            holder = Holder.parse(text)
            if holder is not None and not holder.stale(self.timeout, me):
                raise RunBusy(self.run_dir, holder)
            if self._break(text):
                self.taken_over = holder
            elif time.monotonic() > deadline:
                raise RunBusy(self.run_dir, holder)
            else:
                time.sleep(0.05)

    def _break(self, stale_text: str) -> bool:
        """Remove the lease if it still reads ``stale_text``, under the break lock; False if it is held."""
        me = Holder.of_this_process()
        if not _exclusive_create(self.break_path, me.to_bytes()):
            self._clear_dead_break(me)
            return False
        try:
            with contextlib.suppress(FileNotFoundError):
                if self.path.read_text() == stale_text:
                    self.path.unlink()
        finally:
            self.break_path.unlink(missing_ok=True)
        return True

    def _clear_dead_break(self, me: Holder) -> None:
        try:
            text = self.break_path.read_text()
            age = time.time() - self.break_path.stat().st_mtime
        except FileNotFoundError:
            return
        breaker = Holder.parse(text)
        if breaker is None or breaker.stale(BREAK_TIMEOUT_S, me) or age > BREAK_TIMEOUT_S:
            self.break_path.unlink(missing_ok=True)

    def release(self) -> None:
        """Stop the heartbeat and remove the lease if it is still this process's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self.record is not None and self._owned():
                self.path.unlink(missing_ok=True)
            self.record = None

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- heartbeat -----------------------------------------------------------------------------------
    def _owned(self) -> bool:
        try:
            current = Holder.parse(self.path.read_text())
        except FileNotFoundError:
            return False
        return current is not None and self.record is not None and current.token == self.record.token

    def refresh(self) -> None:
        """Write a fresh heartbeat if the lease is still this process's; else mark it lost."""
        with self._lock:
            if self.record is None or self._lost:
                return
            if not self._owned():
                holder = read_holder(self.run_dir)
                self._lost = f"{self.path} now names {holder.describe() if holder else 'no holder'}"
                return
            self.record = Holder(**(asdict(self.record) | {"heartbeat": time.time()}))
            tmp = self.path.with_name(f".{self.path.name}.{self.record.token}.link")
            tmp.write_bytes(self.record.to_bytes())
            os.replace(tmp, self.path)

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.refresh()
            except OSError as err:  # a transient file-system error; the next beat tries again
                print(f"warning: could not refresh {self.path}: {err}", flush=True)

    def heartbeat(self) -> None:
        """Called at training ticks: raises :class:`LeaseLost` when another process took the lease over."""
        if self._lost:
            raise LeaseLost(f"{self._lost}; stopping so that only one process writes {self.run_dir}")


def clean_temporary_files(run_dir: str | os.PathLike) -> list[Path]:
    """Remove what dead writers left in a run directory (call while holding its lease).

    Removed: exactly the temporary files the holder's writers name (``_TEMPORARY``: those of
    ``suite.records.write_atomic`` for run.json, config.yaml and the JSONL files, for checkpoints in
    ``checkpoints/`` and snapshots in ``snapshots/``), and the lease's own temporary files
    (``.lease.json[.break].<hex>.link``) once older than ``BREAK_TIMEOUT_S`` (a launcher racing for the
    lease holds one for milliseconds). Nothing else is touched: no other name (``slurm.json``'s temporary
    files belong to the submitting process), no link, and nothing in a ``checkpoints/`` or ``snapshots/``
    that is a link (the launch then refuses it, ``suite.records.RunDirectory.refuse_links``).
    Returns the removed paths.
    """
    run_dir = Path(run_dir)
    removed = []
    for name, pattern in _TEMPORARY.items():
        folder = run_dir / name
        if (name != "." and folder.is_symlink()) or not folder.is_dir():
            continue
        for path in folder.iterdir():
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                if _LEASE_TEMPORARY.fullmatch(path.name) and name == ".":
                    if time.time() - path.stat().st_mtime < BREAK_TIMEOUT_S:
                        continue
                elif not pattern.fullmatch(path.name):
                    continue
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
    return removed
