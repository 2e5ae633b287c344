"""Packing on the real local SLURM cluster: two runs packed into one array task both finish."""

from __future__ import annotations

import pytest

from tests.cluster.test_slurm import (
    RUNS_DEADLINE_S,
    cancel_jobs,
    run_cli,
    runs_finished,
    submissions,
    suite_args,
    wait_for,
)
from tests.helpers.datagen import write_mnist_format


@pytest.mark.timeout(600)
def test_two_runs_packed_in_one_array_task_both_finish(slurm_cluster, tmp_path):
    data = write_mnist_format(tmp_path / "data")
    results = tmp_path / "packed"
    out = run_cli(
        suite_args(results, data, "edm", "--seeds=2", "--launcher=slurm", "--runs-per-gpu=2")
    ).stdout
    assert "2 run(s) of bfashion, 2 per array task" in out
    try:
        rows = wait_for("both runs to end", runs_finished(results, 2), RUNS_DEADLINE_S)
    finally:
        cancel_jobs(results)
    assert [(row["status"], row["slurm"]) for row in rows] == [("done", "COMPLETED")] * 2
    jobs = {sub["job_id"] for sub in submissions(results).values()}
    assert len(jobs) == 1  # one array task carried both runs
