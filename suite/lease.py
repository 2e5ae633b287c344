"""The run lease: one process, and only it, writes a run directory, on local disks and on shared file systems.

``lease.json`` in the run directory names the process that holds the run: host (its name, which
``SUITE_HOSTNAME`` overrides, and boot id), pid, the process's start time in clock ticks (``/proc/<pid>/stat``
field 22, which tells a reused pid apart), SLURM job id and restart count, and when it took the lease. The
heartbeat is the file's modification time.

Taking the lease. The record is written to a temporary file of a unique name and hard-linked to
``lease.json``: link(2) fails with EEXIST when the name exists, atomically on local file systems and on
NFS alike, so of any number of simultaneous launchers exactly one gets the lease. When the reply of a
successful link is lost over NFS the call may still report an error; the temporary file's link count
(2) then tells that it succeeded (the NFS-safe exclusive create described under O_EXCL in open(2)). The
holder keeps that file open after removing the temporary name: the open descriptor is its hold on the
lease's inode.

The heartbeat. Every ``interval`` seconds (a twentieth of the stale limit) a daemon thread sets the
modification time of the holder's open file to now (futimens(2)). It never writes ``lease.json`` by name,
so it cannot overwrite or re-create a lease that another process took over: once ``lease.json`` is
another inode, or none, touching the holder's own inode changes nothing anyone reads. The time stamp is
the file system's clock (the kernel's, or the NFS server's), never the holder's.

Judging a lease (``judge``). The age of a heartbeat is read on the file system's clock as well: a
launcher reads the modification time of the candidate file it has just written, so no host's wall
clock enters. A lease is stale, and is taken over, when
  * it cannot be parsed (our writers create it whole, so no holder wrote it);
  * its host is this host (same name and boot id) and its process is gone: no ``/proc`` entry, a
    zombie, or another process under the pid; a record without a start time cannot tell a reused pid
    apart (pid 1 is always alive), so it is stale also when its heartbeat is older than the stale limit;
  * its host has this name but another boot id: the machine restarted since;
  * it names the SLURM job this process runs in, with an earlier restart count: SLURM runs a job once
    at a time, so a requeued job's previous process is dead, whichever node it ran on;
  * another host holds it and its heartbeat is older than the stale limit, ``timeout`` (600 s;
    ``SUITE_LEASE_TIMEOUT`` sets it in seconds, e.g. for tests).
A heartbeat more than ``SKEW_MARGIN_S`` ahead of the file system's clock was not stamped by a heartbeat
(which stamps that clock's now) but by a clock set wrong or by hand, so its age is unknown: the launcher
prints the skew and watches the file on its own monotonic clock. If the file changes, its holder is
alive; if it stays unchanged for one stale limit, it is stale. So no time stamp blocks a run for longer.
A take-over holds the break lock ``lease.json.break`` (created the same way, held for milliseconds):
under it ``lease.json`` is looked at again and removed only if it is still the same file with the same
heartbeat, then the new holder links its own. A break lock left by a process that died while holding
it is removed once its process is gone (this host) or after ``BREAK_TIMEOUT_S`` seconds.
``suite lease break RUN_DIR`` (:func:`break_lease`) removes the lease of a run folder (one holding
``run.json`` or ``config.yaml``) after printing its holder: a stale one at once, one judged live or of
unknown age only with ``--force``.

The write guard. While a process holds a lease, every write into its run directory through
``suite.records`` (evaluation records, stats, sampler log, ``run.json``, ``config.yaml``, checkpoints,
snapshots) first calls :meth:`Lease.check`: one stat(2) that compares ``lease.json`` with the holder's
inode. A holder whose lease was taken over (it was stopped or stalled past the stale limit, or the lease
was broken by hand) raises :class:`LeaseLost` at its next write, having written nothing since the
take-over.

The fence. A process stopped between that stat and the write it guards makes the write when it resumes,
so each write is checked again after it (:meth:`Lease.fence`). The fencing token is the lease file's
inode, which a holder never gets back once it is taken over: if ``lease.json`` is still that inode after
the write, the holder held the lease when it wrote. If not, the take-over's time is the change time of
the holder's old lease inode (the unlink that removed it from ``lease.json``; the heartbeat stops stamping
it once the lease is lost), and the write's the change time of the written file, both on the file
system's clock: a write after the take-over is undone (``suite.records``: an append truncated away, a
replaced file put back) and the holder raises :class:`LeaseLost`; a write before it stands, as any write
before a take-over does. What the fence leaves: a write undone only while the file is as the holder left
it, so a new holder that wrote the same file between the stale write and its undo keeps both (a ``done``
run's duplicate evaluation rows are dropped on the next launch, ``suite.launch.local``); a take-over
and a write within one tick of the file system's clock count as the write first. On NFS the stat sees
the client's cached directory entry, which can lag a take-over by the attribute cache's lifetime.

Only the holder writes in a run directory; the temporary files of ``suite.records.write_atomic`` found
there when the lease is taken were left by a dead writer, and :func:`clean_temporary_files` removes them.
"""

from __future__ import annotations

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

from suite.records import guard_writes, unguard_writes

LEASE_FILE = "lease.json"
BREAK_FILE = "lease.json.break"
DEFAULT_TIMEOUT_S = 600.0
TIMEOUT_ENV = "SUITE_LEASE_TIMEOUT"
HOSTNAME_ENV = "SUITE_HOSTNAME"
BEATS_PER_TIMEOUT = 20
SKEW_MARGIN_S = 5.0
BREAK_TIMEOUT_S = 60.0
ACQUIRE_PATIENCE_S = 30.0
FS_CLOCK = "the clock of its file system"
# The temporary files the lease holder's writers leave when killed, by folder of the run directory:
# ``suite.records.write_atomic`` names them ``.<name>.`` + tempfile.mkstemp's 8 characters of [a-z0-9_] +
# ``.tmp`` (and ``.prev`` for the hard link to the file a replace replaces, held for the rename's duration),
# for the run's own files (``suite.records.OWN_FILES``), checkpoints and network snapshots.
_RANDOM = r"[a-z0-9_]{8}"
_TEMPORARY = {
    ".": re.compile(
        rf"\.(?:run\.json|config\.yaml|records\.jsonl|stats\.jsonl|sampler\.jsonl)\.{_RANDOM}\.(?:tmp|prev)"
    ),
    "checkpoints": re.compile(rf"\.ckpt-\d{{12,}}\.pt\.{_RANDOM}\.(?:tmp|prev)"),
    "snapshots": re.compile(rf"\.snapshot-\d{{12,}}\.pt\.{_RANDOM}\.(?:tmp|prev)"),
}
# The lease's own (``_exclusive_create``, ``Lease.refresh``): ``.lease.json[.break].<uuid4 hex>.link``.
_LEASE_TEMPORARY = re.compile(r"\.lease\.json(?:\.break)?\.[0-9a-f]{32}\.link")


class RunBusy(Exception):
    """Another live process holds the run's lease."""

    def __init__(self, run_dir: Path, holder: Holder | None, heartbeat: str = "") -> None:
        who = holder.describe() if holder else "another process (its lease is being taken over)"
        self.who = f"{who} ({heartbeat})" if heartbeat else who
        super().__init__(f"{run_dir} is being trained by {self.who}")
        self.run_dir = run_dir
        self.holder = holder


class LeaseLost(Exception):
    """This process's lease was taken over or broken; it must not write in the run directory again.
    ``now`` says what ``lease.json`` holds now."""

    def __init__(self, message: str, now: str) -> None:
        super().__init__(message)
        self.now = now


def stale_limit() -> float:
    """The stale limit in seconds: ``$SUITE_LEASE_TIMEOUT``, else ``DEFAULT_TIMEOUT_S``."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(
            f"{TIMEOUT_ENV}={raw!r}: must be a positive number of seconds (default {DEFAULT_TIMEOUT_S:g})"
        )
    return value


def host_name() -> str:
    """This host's name in leases: ``$SUITE_HOSTNAME``, else the system's host name."""
    return os.environ.get(HOSTNAME_ENV) or socket.gethostname()


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


def _span(seconds: float) -> str:
    """A duration in the largest unit that gives at least 2 of it."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


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

    @classmethod
    def of_this_process(cls) -> Holder:
        stat = _proc_stat(os.getpid())
        job = os.environ.get("SLURM_JOB_ID")
        return cls(
            token=uuid.uuid4().hex,
            host=host_name(),
            boot_id=_boot_id(),
            pid=os.getpid(),
            start_ticks=stat[1] if stat else None,
            slurm_job=job,
            slurm_restart=int(os.environ.get("SLURM_RESTART_COUNT", "0")) if job else 0,
            since=time.time(),
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
            )
        except (ValueError, KeyError, TypeError):
            return None

    def to_bytes(self) -> bytes:
        record: dict[str, Any] = asdict(self) | {"since_utc": _iso(self.since)}
        return (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()

    def describe(self) -> str:
        """``host pid N since T``, with the SLURM job."""
        job = f", SLURM job {self.slurm_job}" if self.slurm_job else ""
        return f"{self.host} pid {self.pid}{job} since {_iso(self.since)}"


@dataclass(frozen=True)
class LeaseFile:
    """A lease file as one look saw it: its text, its record (None: not a lease record), which file it
    was (device and inode) and its heartbeat (modification time, ns)."""

    text: str
    holder: Holder | None
    identity: tuple[int, int]
    mtime_ns: int

    @property
    def heartbeat(self) -> float:
        return self.mtime_ns / 1e9

    def same_file(self, other: LeaseFile, same_heartbeat: bool = True) -> bool:
        """Whether ``other`` is a look at this file with this content (and this heartbeat)."""
        return (
            self.identity == other.identity
            and self.text == other.text
            and (not same_heartbeat or self.mtime_ns == other.mtime_ns)
        )

    def note(self, clock: float, clock_name: str) -> str:
        """``heartbeat N s ago``, or how far ahead of ``clock`` (called ``clock_name``) it is."""
        age = clock - self.heartbeat
        if age < -SKEW_MARGIN_S:
            return f"heartbeat {_span(-age)} ahead of {clock_name}: clock skew"
        return f"heartbeat {_span(max(age, 0.0))} ago"

    def describe(self, clock: float, clock_name: str) -> str:
        """The holder and its heartbeat."""
        who = self.holder.describe() if self.holder else f"an unreadable record {self.text[:60]!r}"
        return f"{who} ({self.note(clock, clock_name)})"


def _look(path: Path) -> LeaseFile | None:
    """The lease file at ``path`` (content and attributes read through one descriptor); None if absent."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    text = b"".join(chunks).decode(errors="replace")
    return LeaseFile(text, Holder.parse(text), (st.st_dev, st.st_ino), st.st_mtime_ns)


def read_lease(run_dir: str | os.PathLike) -> LeaseFile | None:
    """A run's lease file as it is now; None when there is none."""
    return _look(Path(run_dir) / LEASE_FILE)


def read_holder(run_dir: str | os.PathLike) -> Holder | None:
    """The recorded holder of a run's lease; None when there is no (readable) lease."""
    try:
        seen = read_lease(run_dir)
    except OSError:
        return None
    return seen.holder if seen else None


def judge(seen: LeaseFile, me: Holder, timeout: float, clock: float) -> bool | None:
    """Whether the lease ``seen`` is live (True), stale (False) or of unknown age (None: its heartbeat is
    ahead of ``clock`` by more than ``SKEW_MARGIN_S``), as ``me`` sees it; see the module docstring."""
    holder = seen.holder
    if holder is None:
        return False
    age = clock - seen.heartbeat
    recent = None if age < -SKEW_MARGIN_S else age <= timeout
    if holder.host == me.host:
        if holder.boot_id and me.boot_id and holder.boot_id != me.boot_id:
            return False  # same machine, rebooted since the record was written
        if not _process_alive(holder.pid, holder.start_ticks):
            return False
        return True if holder.start_ticks is not None else recent
    if holder.slurm_job is not None and holder.slurm_job == me.slurm_job:
        return holder.slurm_restart >= me.slurm_restart
    return recent


def _link_candidate(path: Path, content: bytes) -> tuple[int | None, float]:
    """Try to create ``path`` with ``content`` (NFS-safe, see the module docstring). Returns an open
    descriptor of the created file (None when ``path`` existed) and the file system's clock: the
    modification time of the candidate file just written."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.link")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    linked = False
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        clock = os.fstat(fd).st_mtime
        try:
            os.link(tmp, path)
            linked = True
        except FileExistsError:
            pass
        except OSError as err:
            linked = os.fstat(fd).st_nlink == 2
            if not linked and err.errno != errno.EEXIST:
                raise
    finally:
        tmp.unlink(missing_ok=True)
        if not linked:
            os.close(fd)
    return (fd if linked else None), clock


class Lease:
    """The lease of one run directory; ``with Lease(run_dir):`` holds it (or raises :class:`RunBusy`).

    ``timeout`` is the stale limit (default :func:`stale_limit`), ``interval`` the heartbeat period
    (default a twentieth of it)."""

    def __init__(
        self, run_dir: str | os.PathLike, timeout: float | None = None, interval: float | None = None
    ) -> None:
        timeout = stale_limit() if timeout is None else timeout
        interval = timeout / BEATS_PER_TIMEOUT if interval is None else interval
        if not 0 < interval < timeout:
            raise ValueError(f"lease interval must be in (0, timeout={timeout}), got {interval}")
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LEASE_FILE
        self.break_path = self.run_dir / BREAK_FILE
        self.timeout = timeout
        self.interval = interval
        self.record: Holder | None = None
        self.taken_over: str | None = None  # the stale holder this lease replaced, described
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._lost: str | None = None  # why the lease is lost, once it is
        self._lost_now = ""  # what lease.json held then
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- taking and giving back ----------------------------------------------------------------------
    def acquire(self, patience: float = ACQUIRE_PATIENCE_S) -> None:
        """Take the lease, taking over a stale one; raises :class:`RunBusy` naming a live holder.

        ``patience`` bounds the wait for another launcher's take-over; a heartbeat ahead of the clock is
        watched for up to one stale limit (module docstring)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        me = Holder.of_this_process()
        content = me.to_bytes()
        deadline = time.monotonic() + patience
        watched: tuple[LeaseFile, float] | None = None  # a lease of unknown age, and since when
        while True:
            fd, clock = _link_candidate(self.path, content)
            if fd is not None:
                self._hold(me, fd)
                return
            seen = read_lease(self.run_dir)
            if seen is None:
                continue
            live = judge(seen, me, self.timeout, clock)
            if live is None:
                if watched is None:
                    print(
                        f"{self.path}: {seen.describe(clock, FS_CLOCK)}; it counts as live while it "
                        f"changes: watching it for up to {self.timeout:g} s",
                        flush=True,
                    )
                if watched is None or not watched[0].same_file(seen):
                    watched = (seen, time.monotonic())
                if time.monotonic() - watched[1] <= self.timeout:
                    time.sleep(min(self.interval, 1.0))
                    continue
                live = False
            if live:
                raise RunBusy(self.run_dir, seen.holder, seen.note(clock, FS_CLOCK))
            removed = self._remove(seen)
            if removed:
                self.taken_over = seen.describe(clock, FS_CLOCK)
            elif removed is None and time.monotonic() > deadline:
                raise RunBusy(self.run_dir, seen.holder, seen.note(clock, FS_CLOCK))
            elif removed is None:
                time.sleep(0.05)

    def _hold(self, me: Holder, fd: int) -> None:
        st = os.fstat(fd)
        self.record, self._fd, self._identity, self._lost = me, fd, (st.st_dev, st.st_ino), None
        guard_writes(self.run_dir, self.check, self.fence)
        self._stop.clear()
        self._thread = threading.Thread(target=self._refresh_loop, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def _remove(self, seen: LeaseFile, same_heartbeat: bool = True) -> bool | None:
        """Under the break lock, remove ``lease.json`` if it is still the file ``seen`` (with the same
        heartbeat when ``same_heartbeat``): True when removed, False when it had changed, None when
        another process holds the break lock."""
        me = Holder.of_this_process()
        fd, clock = _link_candidate(self.break_path, me.to_bytes())
        if fd is None:
            self._clear_dead_break(me, clock)
            return None
        try:
            current = read_lease(self.run_dir)
            if current is None or not current.same_file(seen, same_heartbeat):
                return False
            self.path.unlink()
            return True
        finally:
            os.close(fd)
            self.break_path.unlink(missing_ok=True)

    def _clear_dead_break(self, me: Holder, clock: float) -> None:
        breaker = _look(self.break_path)
        if breaker is None:
            return
        if (
            judge(breaker, me, BREAK_TIMEOUT_S, clock) is not True
            or clock - breaker.heartbeat > BREAK_TIMEOUT_S
        ):
            self.break_path.unlink(missing_ok=True)

    def release(self) -> None:
        """Stop the heartbeat and remove the lease if it is still this process's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._fd is None:
                return
            try:
                if self._lost is None and self._mine():
                    self.path.unlink(missing_ok=True)
            finally:
                unguard_writes(self.run_dir)
                os.close(self._fd)
                self._fd, self.record = None, None

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- heartbeat and guard ---------------------------------------------------------------------------
    def _mine(self) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (st.st_dev, st.st_ino) == self._identity

    def _verify(self) -> None:
        """Mark the lease lost unless ``lease.json`` is still this holder's file."""
        if self._mine():
            return
        seen = read_lease(self.run_dir)
        self._lost_now = f"{LEASE_FILE} " + (
            f"names {seen.describe(time.time(), 'this host')}" if seen else "is gone"
        )
        self._lost = (
            f"lost the lease of {self.run_dir} ({self._lost_now}): it was taken over while this process's "
            f"heartbeat was stopped for longer than the stale limit ({self.timeout:g} s), or broken by "
            "hand; stopping without writing there again"
        )

    def check(self) -> None:
        """The write guard (``suite.records`` calls it before each write into the run directory): raises
        :class:`LeaseLost` unless ``lease.json`` is still this holder's file."""
        if self._lost is None:
            self._verify()
        if self._lost is not None:
            raise LeaseLost(self._lost, self._lost_now)

    def fence(self, written_ns: int) -> bool:
        """Whether a write into the run directory whose file then had the change time ``written_ns`` stands:
        True when ``lease.json`` is still this holder's file, or was taken from it after the write; False
        when the take-over came first (module docstring: the fence). A lost lease is marked either way."""
        if self._lost is None:
            self._verify()
        if self._lost is None:
            return True
        if self._fd is None:
            return False
        taken_ns = os.fstat(self._fd).st_ctime_ns
        return taken_ns >= written_ns

    def refresh(self) -> None:
        """Check that ``lease.json`` is still this holder's file, then stamp the heartbeat on it (a lost lease
        is marked, and the next write raises :class:`LeaseLost`; its file is not stamped again, so that its
        change time stays the take-over's)."""
        with self._lock:
            if self._fd is None or self._lost is not None:
                return
            self._verify()
            if self._lost is not None:
                return
            try:
                os.utime(self._fd)
            except OSError as err:
                if err.errno != errno.ESTALE:  # NFS: another client removed the file
                    raise
                self._verify()

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.refresh()
            except OSError as err:  # a transient file-system error; the next beat tries again
                print(f"warning: could not refresh {self.path}: {err}", flush=True)


def break_lease(run_dir: str | os.PathLike, seen: LeaseFile, patience: float = ACQUIRE_PATIENCE_S) -> bool:
    """Remove the lease ``seen`` of ``run_dir`` whatever the state of its holder (which stops at its next
    write); False when ``lease.json`` became another file meanwhile."""
    lease = Lease(run_dir)
    deadline = time.monotonic() + patience
    while (removed := lease._remove(seen, same_heartbeat=False)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{lease.break_path} stayed held for {patience:g} s; try again")
        time.sleep(0.05)
    return removed


def break_command(run_dir: str | Path, force: bool = False) -> int:
    """``suite lease break RUN_DIR [--force]``: print the holder of the run's lease and how it is judged,
    then break the lease (one not judged stale only with ``--force``); 1 when it changed hands meanwhile."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not any((run_dir / name).is_file() for name in ("run.json", "config.yaml")):
        raise ValueError(
            f"{run_dir} is not a run folder (no run.json or config.yaml); give one "
            "(…/runs/<comparison>/<sampler>/seed<k>)"
        )
    seen = read_lease(run_dir)
    if seen is None:
        print(f"{run_dir} has no {LEASE_FILE}; nothing to break")
        return 0
    clock = time.time()
    live = judge(seen, Holder.of_this_process(), stale_limit(), clock)
    verdict = {True: "live", False: "stale", None: "of unknown age"}[live]
    print(f"{run_dir / LEASE_FILE}: held by {seen.describe(clock, 'this host')}; {verdict}")
    if live is not False and not force:
        raise ValueError(
            f"not broken: the lease of {run_dir} is {verdict}; add --force to break it anyway (its holder "
            "stops at its next write there)"
        )
    if not break_lease(run_dir, seen):
        print(f"not broken: {LEASE_FILE} changed hands meanwhile; run the command again to see its holder")
        return 1
    print(f"broke the lease of {run_dir}; a live holder stops at its next write there")
    return 0


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
