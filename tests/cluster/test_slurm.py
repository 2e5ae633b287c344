"""The SLURM launcher and ``suite status`` against a real local cluster (slurm/local-cluster.sh).

Run with a cluster already up::

    bash slurm/local-cluster.sh up /tmp/isl && . /tmp/isl/env.sh
    .venv/bin/pytest tests/cluster

or let the session start (and purge) one: ``SUITE_TEST_SLURM=1 .venv/bin/pytest tests/cluster``.
The tests submit tiny runs on generated IDX data through the CLI. Their jobs import the test feature
extractor ``rand-test`` through ``SUITE_PLUGINS=tests.helpers.fid_extractor`` with the checkout on
``PYTHONPATH`` (see ``suite.launch.slurm``). Every wait polls against a deadline, and each test has its own
pytest-timeout. The pure helpers (chunking, profiles, sacct parsing) are ``tests/unit/test_slurm.py``'s."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from suite.cli import build_parser
from suite.commands.run import launch_request
from suite.config import group_options
from suite.launch.cluster import max_array_size
from suite.launch.plan import plan_runs
from suite.launch.slurm import submit
from suite.records import read_json, read_jsonl
from suite.report.status import ENDED_STATES, collect, sacct_states
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env, cluster_script
from tests.helpers.tiny import TINY

N_SAMPLERS = len(group_options("sampler"))  # `--sampler all`

RUNS_DEADLINE_S = 420.0

SACCT_DEADLINE_S = 30.0

T = TypeVar("T")


def suite_args(
    results: Path, data: Path, sampler: str, *flags: str, overrides: tuple[str, ...] = ()
) -> list[str]:
    """``suite run`` of tiny bfashion runs; ``overrides`` replace the TINY values of the same keys."""
    keys = {o.split("=")[0] for o in overrides}
    tiny = [o for o in TINY if o.split("=")[0] not in keys]
    return [
        *cli_command("run"),
        "--task",
        "bfashion",
        "--sampler",
        sampler,
        "--budget",
        "smoke",
        "--results",
        str(results),
        *flags,
        f"task.root={data}",
        *tiny,
        *overrides,
    ]


def run_cli(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(args, env=cli_env(), capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, f"{args[2:]} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def status_cli(results: Path) -> str:
    return run_cli(cli_command("status", "--results", str(results))).stdout


def wait_for(what: str, check: Callable[[], T | None], deadline_s: float) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {deadline_s:.0f} s waiting for {what}")
        time.sleep(0.3)


def submissions(results: Path) -> dict[str, dict]:
    """<sampler label>/seed<k> → slurm.json of every submitted run."""
    paths = results.glob("runs/*/*/seed*/slurm.json")
    return {f"{p.parent.parent.name}/{p.parent.name}": read_json(p) for p in paths}


def runs_finished(results: Path, n: int) -> Callable[[], list[dict] | None]:
    """A check: the status rows once all ``n`` runs are done or failed and sacct reports their jobs ended."""

    def check() -> list[dict] | None:
        rows = collect(results).to_dict("records")
        finished = [r for r in rows if r["status"] in ("done", "failed") and r["slurm"] in ENDED_STATES]
        return rows if len(finished) == n == len(rows) else None

    return check


def accounted(array_id: str, expected: dict[str, str]) -> Callable[[], dict[str, str] | None]:
    """A check: sacct's states of the array once they include ``expected``."""

    def check() -> dict[str, str] | None:
        states = sacct_states([array_id]) or {}
        return states if all(states.get(k) == v for k, v in expected.items()) else None

    return check


def requeue_history(job: str) -> list[str]:
    """States of every instance of ``job`` (sacct -D: requeued instances too), oldest first."""
    out = subprocess.run(
        ["sacct", "-n", "-P", "-D", "-X", "-j", job, "-o", "State"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return out.stdout.split() if out.returncode == 0 else []


def cancel_jobs(results: Path) -> None:
    """scancel every job submitted for ``results`` (no-op for those that ended)."""
    ids = sorted({sub["array_job_id"] for sub in submissions(results).values()})
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=30, check=False)


def metric_rows(results: Path) -> dict[str, list[tuple]]:
    """Sampler label → (kimg, metric, value) of each evaluation."""
    return {
        p.parent.parent.name: [(r["kimg"], r["metric"], r["value"]) for r in read_jsonl(p)]
        for p in results.glob("runs/*/*/seed0/records.jsonl")
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.fixture(scope="module")
def sweep(slurm_cluster, data, tmp_path_factory) -> Iterator[tuple[Path, Path, str]]:
    """The tiny sweep of every sampler on SLURM and, meanwhile, locally: (slurm results, local, stdout)."""
    on_slurm, local = tmp_path_factory.mktemp("sweep-slurm"), tmp_path_factory.mktemp("sweep-local")
    submitted = run_cli(suite_args(on_slurm, data, "all", "--launcher", "slurm")).stdout
    local_run = subprocess.Popen(
        suite_args(local, data, "all"),
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for("the SLURM sweep", runs_finished(on_slurm, N_SAMPLERS), RUNS_DEADLINE_S)
        _, err = local_run.communicate(timeout=RUNS_DEADLINE_S)
        assert local_run.returncode == 0, err
        yield on_slurm, local, submitted
    finally:
        local_run.kill()
        cancel_jobs(on_slurm)


@pytest.mark.timeout(900)
def test_sweep_is_one_array_and_matches_local_runs(sweep):
    on_slurm, local, submitted = sweep
    subs = submissions(on_slurm)
    assert len(subs) == N_SAMPLERS
    (array_id,) = {sub["array_job_id"] for sub in subs.values()}
    assert sorted(sub["array_index"] for sub in subs.values()) == list(range(N_SAMPLERS))
    assert f"submitted job {array_id}: {N_SAMPLERS} run(s) of bfashion" in submitted

    rows = collect(on_slurm)
    assert (rows["status"] == "done").all(), rows.to_string()
    expected = {f"{array_id}_{i}": "COMPLETED" for i in range(N_SAMPLERS)}
    states = wait_for("the array's accounting records", accounted(array_id, expected), SACCT_DEADLINE_S)
    assert states == expected  # the tasks of one array, nothing else

    on_cluster, on_host = metric_rows(on_slurm), metric_rows(local)
    assert len(on_cluster) == N_SAMPLERS and set(on_cluster) == set(on_host)
    for sampler in on_host:
        assert [kimg for kimg, _, _ in on_cluster[sampler]] == [0.192, 0.384]
        assert on_cluster[sampler] == on_host[sampler], sampler


@pytest.mark.timeout(420)
def test_second_submission_of_a_finished_sweep_submits_nothing(sweep, data):
    on_slurm, _, _ = sweep
    before = submissions(on_slurm)
    out = run_cli(suite_args(on_slurm, data, "all", "--launcher", "slurm")).stdout
    assert "nothing to submit" in out and "submitted job" not in out
    assert out.count("done already:") == N_SAMPLERS
    assert submissions(on_slurm) == before


@pytest.mark.timeout(300)
def test_requeued_run_resumes_from_its_checkpoint(slurm_cluster, data, tmp_path):
    """`scontrol requeue` (SIGTERM; SLURM requeues), then SIGUSR2 as at the time limit (the job requeues
    itself): each time the run resumes from its checkpoint and the records hold one row per evaluation."""
    results = tmp_path / "requeue"
    run_cli(suite_args(results, data, "edm", "--seeds=2", "--launcher=slurm", overrides=("budget.kimg=1.6",)))
    try:
        (run_dir,) = results.glob("runs/*/edm/seed0")
        job = read_json(run_dir / "slurm.json")["job_id"]
        assert "_" in job  # an array task: <array>_<index>

        def info() -> dict:
            return read_json(run_dir / "run.json") if (run_dir / "run.json").is_file() else {}

        def progressed(restarts: str | None, beyond: float) -> Callable[[], dict | None]:
            def check() -> dict | None:
                i = info()
                ok = i.get("status") == "running" and i.get("slurm_restart_count") == restarts
                return i if ok and i.get("kimg", 0) >= beyond + 0.1 else None

            return check

        wait_for("training to start", progressed(None, 0.0), RUNS_DEADLINE_S)
        subprocess.run(["scontrol", "requeue", job], check=True, capture_output=True, timeout=30)
        first = wait_for("the requeued run to resume and progress", progressed("1", 0.0), RUNS_DEADLINE_S)
        assert first["resumed_from_kimg"] > 0
        assert wait_for("the resumed run to progress", progressed("1", first["resumed_from_kimg"]), 60)
        subprocess.run(["scancel", "--signal=USR2", job], check=True, capture_output=True, timeout=30)
        wait_for("both runs to finish", runs_finished(results, 2), RUNS_DEADLINE_S)
    finally:
        cancel_jobs(results)

    final = info()
    assert final["status"] == "done" and final["slurm_restart_count"] == "2"
    assert final["resumed_from_kimg"] > first["resumed_from_kimg"] > 0
    assert [r["kimg"] for r in read_jsonl(run_dir / "records.jsonl")] == [0.8, 1.6]
    ticks = [r["nimg"] for r in read_jsonl(run_dir / "stats.jsonl")]
    assert ticks == sorted(set(ticks)), "a stats row was written twice"
    # SLURM requeued the task twice (not FAILED) and the last instance completed.
    history = wait_for(
        "the requeue history in sacct",
        lambda: h if (h := requeue_history(job))[-1:] == ["COMPLETED"] else None,
        SACCT_DEADLINE_S,
    )
    assert history == ["REQUEUED", "REQUEUED", "COMPLETED"]


@pytest.mark.timeout(480)
def test_failing_run_shows_as_failed_with_its_error(slurm_cluster, data, tmp_path, monkeypatch):
    # `suite run` refuses p_std=-1 before submitting anything; submitting the plan directly makes the run
    # raise inside its job, the path of any failure that only shows at run time.
    results = tmp_path / "failing"
    overrides = [
        f"task.root={data}",
        *(o for o in TINY if not o.startswith("sampler.p_std")),
        "sampler.p_std=1.2,-1.0",
    ]
    runs = plan_runs("bfashion", "edm", "smoke", 1, results, overrides)
    request = launch_request(
        build_parser().parse_args(["run", "--task=bfashion", "--launcher=slurm"]), str(results)
    )
    for key, value in cli_env().items():
        monkeypatch.setenv(key, value)
    assert submit(runs, request) == 0
    try:
        rows = wait_for("both runs to end", runs_finished(results, 2), RUNS_DEADLINE_S)
    finally:
        cancel_jobs(results)
    by_sampler = {row["sampler"]: row for row in rows}
    assert by_sampler["edm"]["status"] == "done" and by_sampler["edm"]["slurm"] == "COMPLETED"
    failed = by_sampler["edm[p_std=-1.0]"]
    assert (failed["status"], failed["slurm"]) == ("failed", "FAILED")
    assert failed["error"] == "ValueError: p_std must be positive, got -1.0"

    printed = status_cli(results)
    (line,) = [line for line in printed.splitlines() if "edm[p_std=-1.0]" in line]
    assert "failed" in line and "FAILED" in line and "p_std must be positive" in line
    assert "1 done, 1 failed" in printed


def private_cluster(monkeypatch, prefix: str, timeout: int, **env: str) -> Iterator[str]:
    """A second local cluster beside the session's (its own folder, ports and settings from ``env``, the
    variables of slurm/local-cluster.sh), purged afterwards; SLURM_CONF points to it meanwhile."""
    if os.geteuid() != 0:
        pytest.skip("starting a second local cluster needs root")
    cluster_dir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    up = cluster_script("up", cluster_dir, timeout, **env)
    try:
        assert up.returncode == 0, up.stderr
        conf = f"{cluster_dir}/slurm.conf"
        monkeypatch.setenv("SLURM_CONF", conf)
        yield conf
    finally:
        cluster_script("purge", cluster_dir, timeout, **env)


@pytest.fixture
def small_array_cluster(slurm_cluster, monkeypatch) -> Iterator[str]:
    """A private cluster without accounting with MaxArraySize=4."""
    yield from private_cluster(
        monkeypatch,
        "isl4-",
        120,
        SLURM_LOCAL_ACCOUNTING="0",
        SLURM_LOCAL_MAX_ARRAY_SIZE="4",
        SLURM_LOCAL_CTLD_PORT="6917",
        SLURM_LOCAL_SLURMD_PORT="6918",
        SLURM_LOCAL_DBD_PORT="6919",
        SLURM_LOCAL_DB_PORT="16133",
    )


@pytest.mark.timeout(120)
def test_runs_are_split_at_the_clusters_max_array_size(small_array_cluster, data, tmp_path, capsys):
    assert max_array_size() == 4
    # Keep the jobs pending: nothing needs to run to see how they were split.
    subprocess.run(
        ["scontrol", "update", "nodename=localhost", "state=drain", "reason=test"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    results = tmp_path / "chunked"
    eight = "logu,cos,fm,edm,kg,infonoise,laplace,cauchy"
    runs = plan_runs("bfashion", eight, "smoke", 1, results, [f"task.root={data}", *TINY])
    request = launch_request(
        build_parser().parse_args(["run", "--task=bfashion", "--launcher=slurm"]), str(results)
    )
    assert submit(runs, request) == 0
    subs = submissions(results)
    arrays = sorted({sub["array_job_id"] for sub in subs.values()})
    assert len(arrays) == 2
    for array in arrays:
        assert sorted(s["array_index"] for s in subs.values() if s["array_job_id"] == array) == [0, 1, 2, 3]
    queued = subprocess.run(["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, timeout=30)
    assert sorted(queued.stdout.split()) == sorted(sub["job_id"] for sub in subs.values())
    assert capsys.readouterr().out.count("submitted job") == 2
    cancel_jobs(results)


PREEMPT_CONF = "\n".join(
    [
        "PreemptType=preempt/partition_prio",
        "PreemptMode=REQUEUE",
        "PartitionName=low Nodes=ALL PriorityTier=1 MaxTime=INFINITE State=UP",
        "PartitionName=high Nodes=ALL PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP",
    ]
)


@pytest.fixture
def preempting_cluster(slurm_cluster, monkeypatch) -> Iterator[str]:
    """A private cluster with accounting whose partition ``high`` preempts jobs of ``low`` by requeueing
    them (``PreemptMode=REQUEUE``)."""
    yield from private_cluster(
        monkeypatch,
        "islp-",
        300,
        SLURM_LOCAL_EXTRA_CONF=PREEMPT_CONF,
        SLURM_LOCAL_CTLD_PORT="7017",
        SLURM_LOCAL_SLURMD_PORT="7018",
        SLURM_LOCAL_DBD_PORT="7019",
        SLURM_LOCAL_DB_PORT="16233",
    )


@pytest.mark.timeout(600)
def test_a_preempted_and_requeued_run_shows_as_running_then_finishes(preempting_cluster, data, tmp_path):
    """A job of ``low`` preempted by a whole-node job of ``high`` reads PREEMPTED in the accounting while
    SLURM requeues it: ``suite status`` shows its run as running (squeue's state beside it), never as
    failed; once the node is free the run resumes and ends done."""
    results = tmp_path / "preempted"
    run_cli(
        suite_args(
            results, data, "edm", "--launcher=slurm", "--partition=low", overrides=("budget.kimg=1.6",)
        )
    )
    blocker = None
    try:
        (run_dir,) = results.glob("runs/*/edm/seed0")
        job = read_json(run_dir / "slurm.json")["job_id"]

        def training() -> bool:
            info = read_json(run_dir / "run.json") if (run_dir / "run.json").is_file() else {}
            return info.get("status") == "running" and info.get("kimg", 0) >= 0.1

        wait_for("training to start", training, RUNS_DEADLINE_S)
        blocker = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "-p",
                "high",
                "--exclusive",
                "-N1",
                "-o",
                str(tmp_path / "blocker.out"),
                "--wrap",
                "sleep 300",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        # the preempted instance's state: PREEMPTED (REQUEUED on Slurm versions that record the requeue)
        preempted = {"PREEMPTED", "REQUEUED"}
        wait_for("the preemption in sacct", lambda: preempted & set(requeue_history(job)), RUNS_DEADLINE_S)
        (row,) = collect(results).to_dict("records")
        assert row["status"] == "running" and row["slurm"] not in ENDED_STATES, row
        printed = status_cli(results)
        assert "failed" not in printed and "1 running" in printed, printed
        subprocess.run(["scancel", blocker], check=True, capture_output=True, timeout=30)
        blocker = None
        (final,) = wait_for("the run to finish", runs_finished(results, 1), RUNS_DEADLINE_S)
    finally:
        if blocker:
            subprocess.run(["scancel", blocker], capture_output=True, timeout=30, check=False)
        cancel_jobs(results)
    assert final["status"] == "done"
    assert read_json(run_dir / "run.json")["resumed_from_kimg"] > 0
    assert [r["kimg"] for r in read_jsonl(run_dir / "records.jsonl")] == [0.8, 1.6]
