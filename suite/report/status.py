"""``suite status``: the state of the user's runs in a results folder, with SLURM's view of submitted runs.

For each run directory under ``<results>`` that lies in no committed evidence set (every one with ``--all``;
``suite.report.results.own_runs``, the rule ``suite table`` follows) it shows the task, budget,
sampler, seed, the status from ``run.json`` (pending when there is none), the processed kimg, a running run's
ETA (``suite.watch.format_eta`` of the kimg left at its last tick's pace) and its newest evaluation row on the
run's own solver grid (``metric value @kimg``; rows re-scored on another grid by ``suite eval`` are not
it). For runs submitted with ``--launcher slurm`` (``slurm.json``) it adds the job id and its state from
``sacct`` (``unknown`` where there is no accounting). A job that ``squeue`` still lists is not over, whatever
``sacct`` says: a job preempted and requeued (``PreemptMode=REQUEUE``) can read ``PREEMPTED`` in the
accounting while it waits to run again, and its run is shown as running (its record says running, or
interrupted when it stopped at the signal), with squeue's state. A run whose record says pending or running
while its job has ended (an exception before the run could record it, out of memory, a kill, a node
failure) is shown as failed. Failed runs show their error line: ``run.json``'s ``error``, else the last line
of the job's stderr log.

The ``holder`` column names the process that holds the run's lease (``suite.lease``): host, pid, since
when and the heartbeat's age on this host's clock, prefixed ``stale`` for a lease judged stale (its
process gone, or its heartbeat older than the stale limit) and ``unknown`` for one whose heartbeat is
ahead of this host's clock by more than ``suite.lease.SKEW_MARGIN_S``, which is shown with the skew. A
run outside SLURM whose record says running but whose lease is gone or stale was killed, and is shown as
interrupted; one whose record has not caught up with a live holder yet is shown as running.

A done run whose records stop short (``suite.report.results``: unreadable record lines, a missing evaluation
point, stats that stop early) is shown as ``done, records incomplete`` with the reason in ``error``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from suite.launch.cluster import read_submission, slurm_command
from suite.lease import Holder, LeaseFile, judge, read_lease, stale_limit
from suite.paths import results_folder
from suite.report.results import DAMAGED, DIVERGED, RunRecord, own_runs
from suite.watch import format_eta

# SLURM states of jobs that are over (the others are queued, running or on their way to run again).
ENDED_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)
ERROR_WIDTH = 120
COLUMNS = [
    "task",
    "budget",
    "sampler",
    "seed",
    "status",
    "kimg",
    "eta",
    "last metric",
    "job",
    "slurm",
    "holder",
    "error",
]


def _expand_array(job: str) -> list[str]:
    """``12_[0-2,5%2]`` → ``12_0 12_1 12_2 12_5``; other ids unchanged."""
    match = re.fullmatch(r"(\d+)_\[([^\]]+)\]", job)
    if not match:
        return [job]
    base, spec = match.group(1), match.group(2).split("%")[0]
    ids = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        ids += [f"{base}_{i}" for i in range(int(first), int(last or first) + 1)]
    return ids


def parse_sacct(text: str) -> dict[str, str]:
    """Job id → state (first word: ``CANCELLED by 0`` → ``CANCELLED``) from ``sacct -n -P -o JobID,State``."""
    states = {}
    for line in text.splitlines():
        job, sep, state = line.strip().partition("|")
        if sep and state:
            for job_id in _expand_array(job):
                states[job_id] = state.split()[0]
    return states


def sacct_states(array_ids: Iterable[str]) -> dict[str, str] | None:
    """States of the jobs (and all tasks of the arrays) ``array_ids``; None when sacct does not work."""
    ids = sorted(set(array_ids))
    if not ids:
        return {}
    out = slurm_command("sacct", "-j", ",".join(ids), "-X", "-n", "-P", "--format=JobID,State")
    return parse_sacct(out.stdout) if out and out.returncode == 0 else None


def last_error_line(log: str | Path | None) -> str:
    """Last non-empty line of a job's stderr log that is not srun's own ('' if none)."""
    path = Path(log) if log else None
    if path is None or not path.is_file():
        return ""
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    own = [line for line in lines if not line.startswith("srun: ")]
    return (own or lines or [""])[-1]


def parse_squeue(text: str) -> dict[str, str]:
    """Job id → state from ``squeue -h -r -o %i|%T`` (one line per array task)."""
    states = {}
    for line in text.splitlines():
        job, sep, state = line.strip().partition("|")
        if sep and state:
            states[job] = state.split()[0]
    return states


def queue_states() -> dict[str, str] | None:
    """States of this user's jobs that SLURM still holds (queued, running, requeued, suspended); None when
    squeue does not work."""
    out = slurm_command("squeue", "--me", "-h", "-r", "-o", "%i|%T")
    return parse_squeue(out.stdout) if out and out.returncode == 0 else None


def job_state(job: str, accounted: dict[str, str] | None, queue: dict[str, str]) -> tuple[str, bool]:
    """The state of ``job`` ('' for none) and whether squeue still lists it: squeue's state for a listed
    job, else sacct's (``accounted``: None when sacct does not work), else ``unknown``."""
    if not job:
        return "", False
    if job in queue:
        return queue[job], True
    return ("unknown" if accounted is None else accounted.get(job, "unknown")), False


def effective_status(
    recorded: str, slurm_state: str, holder_live: bool | None = None, queued: bool = False
) -> str:
    """The run's status from its record, corrected by the state of its job and by its lease
    (``holder_live``: True for a live holder, False for none or a stale one, None when not known). A job
    that squeue still lists (``queued``) has not ended, whatever its state reads, and its run will run
    again."""
    if recorded in ("pending", "running") and slurm_state in ENDED_STATES and not queued:
        return "failed"
    if queued and recorded in ("running", "interrupted"):
        return "running"  # stopped by a preemption or a requeue; SLURM runs it again
    if recorded in ("pending", "interrupted") and (slurm_state == "RUNNING" or holder_live):
        return "running"
    if recorded == "running" and slurm_state in ("", "unknown") and holder_live is False:
        return "interrupted"
    return recorded


def describe_holder(seen: LeaseFile | None, live: bool | None, clock: float) -> str:
    """``host pid N since T, heartbeat …`` of a lease holder (its heartbeat's age or skew against
    ``clock``), ``stale …`` for a stale one, ``unknown …`` for one of unknown age, ``-`` for none."""
    if seen is None:
        return "-"
    prefix = {True: "", False: "stale ", None: "unknown "}[live]
    if seen.holder is None:
        return f"{prefix}unreadable lease record"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seen.holder.since))
    beat = seen.note(clock, "this host's clock")
    return f"{prefix}{seen.holder.host} pid {seen.holder.pid} since {since}Z, {beat}"


def eta_of(run: RunRecord, status: str) -> str:
    """A running run's time left: (total kimg − kimg of its last stats row) × that row's seconds per kimg,
    ``-`` for any other status or before its first tick."""
    stats, total = run.stats(), run.info.get("total_kimg")
    if status != "running" or not stats or not isinstance(total, int | float):
        return "-"
    last = stats[-1]
    kimg, pace = last.get("kimg"), last.get("sec_per_kimg")
    if not isinstance(kimg, int | float) or not isinstance(pace, int | float):
        return "-"
    return format_eta(max(total - kimg, 0) * pace)


def last_metric(run: RunRecord) -> str:
    """The newest evaluation row on the Karras grid as ``metric value @kimg`` (``-`` before the first)."""
    rows = [
        row
        for row in run.rows()
        if isinstance(row.get("value"), int | float) and row.get("grid", "karras") == "karras"
    ]
    if not rows:
        return "-"
    row = rows[-1]
    return f"{row.get('metric')} {row['value']:.4g} @{row.get('kimg', 0):g}"


def _short(text: str) -> str:
    return text if len(text) <= ERROR_WIDTH else text[: ERROR_WIDTH - 1] + "…"


def collect(results: str | Path, everything: bool = True) -> pd.DataFrame:
    """One row per run directory under ``results``: identity, status, progress, job, SLURM state, holder
    and error (runs found by ``suite.report.results``; without ``everything`` only the user's,
    ``suite.report.results.own_runs``)."""
    runs = own_runs(results, everything)[0]
    submissions = {run.path: read_submission(run.path) for run in runs}
    states = sacct_states(sub["array_job_id"] for sub in submissions.values() if sub.get("array_job_id"))
    queue = (queue_states() or {}) if any(sub.get("job_id") for sub in submissions.values()) else {}
    rows: list[dict[str, Any]] = []
    me, limit = Holder.of_this_process(), stale_limit()
    for run in runs:
        info, sub = run.info, submissions[run.path]
        task, budget = run.comparison.name.rsplit("-", 2)[:2]
        job = sub.get("job_id", "")
        slurm_state, queued = job_state(job, states, queue)
        seen, clock = read_lease(run.path), time.time()
        live = False if seen is None else judge(seen, me, limit, clock)
        recorded = DAMAGED if run.damaged else info.get("status", "pending")
        status = effective_status(recorded, slurm_state, live, queued)
        error = ""
        if status == "failed":
            recorded_error = (info.get("error") or "").strip().splitlines()
            error = (
                recorded_error[0]
                if recorded_error
                else last_error_line(sub.get("stderr")) or f"job {job} ended {slurm_state}"
            )
        elif status == DAMAGED:
            error = "not a JSON object; re-run the launch command to resume the run and record it again"
        elif status == "done" and run.diverged:
            status, error = DIVERGED, run.diverged
        elif status == "done" and run.records_incomplete:
            status, error = "done, records incomplete", run.records_incomplete
        rows.append(
            {
                "task": info.get("task", task),
                "budget": info.get("budget", budget),
                "sampler": run.path.parent.name,
                "seed": info.get("seed", run.path.name.removeprefix("seed")),
                "status": status,
                "kimg": info.get("kimg", 0.0),
                "eta": eta_of(run, status),
                "last metric": last_metric(run),
                "job": job or "-",
                "slurm": slurm_state or "-",
                "holder": describe_holder(seen, live, clock),
                "error": _short(error),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def print_status(results: str | Path, must_exist: bool = False, everything: bool = False) -> int:
    """Print the status table of the user's runs under ``results`` (every run with ``everything``; a file
    there is an error, and so is a missing folder when ``must_exist``: one the user named); 1 when a run is
    damaged."""
    results_folder(results, must_exist)
    left = own_runs(results, everything)[1]
    footer = [f"Left out: committed evidence {', '.join(map(str, left))}; `suite status --all` adds it."]
    table = collect(results, everything)
    if table.empty:
        print("\n".join([f"no runs under {Path(results) / 'runs'}", *footer[: bool(left)]]))
        return 0
    counts = Counter(table["status"])
    summary = f"{len(table)} run(s): " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print("\n".join([table.to_string(index=False), summary, *footer[: bool(left)]]))
    return 1 if counts[DAMAGED] else 0
