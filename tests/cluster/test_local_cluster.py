"""Checks against a real SLURM cluster (slurm/local-cluster.sh), through the CLI and submitit.

Run with a cluster already up::

    bash slurm/local-cluster.sh up /tmp/isl && . /tmp/isl/env.sh
    .venv/bin/pytest tests/cluster/test_local_cluster.py

or let the session start (and purge) a private one: ``SUITE_TEST_SLURM=1 .venv/bin/pytest tests/cluster``.
Every wait is bounded: job polling uses a deadline, and pytest-timeout guards each test body.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

submitit = pytest.importorskip("submitit")
cloudpickle = pytest.importorskip("cloudpickle")


# submitit pickles callables with cloudpickle, by reference (module + name) by default. The job's
# interpreter starts in the submission directory (the repo root), where this test module is not
# importable ("No module named 'test_local_cluster'"), so ship this module's functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

JOB_DEADLINE_S = 120.0
SACCT_DEADLINE_S = 30.0


# --- functions run inside SLURM jobs (pickled by value, see above) ---


def square_with_ids(x):
    """x*x with the array task id and job id the task ran under."""
    return x * x, os.environ.get("SLURM_ARRAY_TASK_ID"), os.environ.get("SLURM_JOB_ID")


def raise_value_error(message):
    raise ValueError(message)


# --- helpers ---


def _slurm(*args: str, timeout: float = 30.0) -> str:
    out = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, f"{' '.join(args)} failed ({out.returncode}): {out.stderr}"
    return out.stdout


def _wait_done(jobs: Sequence, deadline_s: float = JOB_DEADLINE_S) -> None:
    """Poll until every job is done; cancel them and fail when the deadline passes."""
    end = time.monotonic() + deadline_s
    while True:
        pending = [job for job in jobs if not job.done()]
        if not pending:
            return
        if time.monotonic() > end:
            states = {job.job_id: job.state for job in pending}
            for job in pending:
                job.cancel(check=False)
            pytest.fail(f"jobs not done after {deadline_s:.0f} s: {states}")
        time.sleep(0.25)


def _executor(folder: Path):
    # submitit asks SLURM for SIGUSR2 90 s before the time limit; with a 2-minute limit that warning came
    # 30 s into the job, before a loaded machine's interpreter had installed submitit's handler, and killed
    # it. Ten minutes puts the warning far beyond JOB_DEADLINE_S.
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    executor.update_parameters(timeout_min=10, cpus_per_task=1, name="infonoise-test")
    return executor


# --- tests ---


@pytest.mark.timeout(60, func_only=True)
def test_sinfo_shows_an_idle_node(slurm_cluster):
    assert os.environ["SLURM_CONF"] == slurm_cluster
    # A previous test's jobs may still be completing: allow the node a few seconds.
    end = time.monotonic() + 30
    while True:
        states = _slurm("sinfo", "-h", "-N", "-o", "%N %T").split()
        if "idle" in states or time.monotonic() > end:
            break
        time.sleep(0.5)
    assert "idle" in states, f"no idle node in sinfo: {states}"


@pytest.mark.timeout(JOB_DEADLINE_S + 60, func_only=True)
def test_map_array_returns_results(slurm_cluster, tmp_path):
    executor = _executor(tmp_path)
    assert executor.cluster == "slurm"
    jobs = executor.map_array(square_with_ids, [0, 1, 2])
    assert len(jobs) == 3
    _wait_done(jobs)

    results = [job.result() for job in jobs]
    assert [value for value, _, _ in results] == [0, 1, 4]
    assert [task_id for _, task_id, _ in results] == ["0", "1", "2"]
    # One array: every task shares the array job id and gets its own index.
    array_id = jobs[0].job_id.split("_")[0]
    assert [job.job_id for job in jobs] == [f"{array_id}_{i}" for i in range(3)]


@pytest.mark.timeout(JOB_DEADLINE_S + 60, func_only=True)
def test_raising_task_gives_failed_job_error(slurm_cluster, tmp_path):
    job = _executor(tmp_path).submit(raise_value_error, "boom from the task")
    _wait_done([job])
    with pytest.raises(submitit.core.utils.FailedJobError) as info:
        job.result()
    assert "boom from the task" in str(info.value)
    assert "ValueError" in job.stderr()


@pytest.mark.timeout(JOB_DEADLINE_S + SACCT_DEADLINE_S + 60, func_only=True)
def test_sacct_shows_the_jobs(slurm_cluster, tmp_path):
    executor = _executor(tmp_path)
    jobs = executor.map_array(square_with_ids, [3, 4, 5])
    failing = executor.submit(raise_value_error, "recorded as failed")
    _wait_done([*jobs, failing])

    array_id = jobs[0].job_id.split("_")[0]
    expected = {f"{array_id}_{i}": "COMPLETED" for i in range(3)}
    expected[failing.job_id] = "FAILED"
    # Accounting records reach slurmdbd a few seconds after the jobs end.
    end = time.monotonic() + SACCT_DEADLINE_S
    while True:
        out = _slurm("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", f"{array_id},{failing.job_id}")
        seen = dict(line.split("|", 1) for line in out.splitlines() if line)
        if all(seen.get(k) == v for k, v in expected.items()) or time.monotonic() > end:
            break
        time.sleep(0.5)
    assert {k: seen.get(k) for k in expected} == expected, out
