"""The run lease: one holder at a time, stale leases taken over (by the file system's clock, skew reported),
heartbeats that never touch a lease taken over, a write guard that stops a holder that lost its lease,
``suite lease break``, the exit code of a launch of busy runs, dead writers' files removed, the fence that
undoes a write a holder woken after a take-over makes, and a done run's repeated rows dropped on re-run. The
ranks of a distributed run sharing one lease are in ``tests/integration/test_lease.py``."""

import dataclasses
import json
import multiprocessing
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

import suite.records
from suite.cli import main
from suite.config import compose_run
from suite.lease import (
    BREAK_FILE,
    LEASE_FILE,
    Holder,
    Lease,
    LeaseLost,
    RunBusy,
    break_lease,
    clean_temporary_files,
    read_holder,
    read_lease,
)
from suite.records import RunDirectory, append_jsonl, read_jsonl, write_json
from suite.run.checkpoint import save_checkpoint
from suite.run.training import train
from tests.helpers.tiny import TINY_RING2D, untimed


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def plant(run_dir: Path, heartbeat: float | None = None, **changes) -> Holder:
    """Put a lease record in place as another process's take-over would (a new file), with ``changes`` to
    this process's record and its heartbeat (modification time) at ``heartbeat`` (default now)."""
    holder = dataclasses.replace(Holder.of_this_process(), **changes)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / "planted"
    tmp.write_bytes(holder.to_bytes())
    if heartbeat is not None:
        os.utime(tmp, (heartbeat, heartbeat))
    os.replace(tmp, run_dir / LEASE_FILE)
    return holder


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under ``folder``: content and modification time (ns)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in [folder, *folder.rglob("*")]
    }


def test_lease_records_host_pid_start_and_since_and_is_removed_on_release(tmp_path):
    with Lease(tmp_path) as lease:
        record = json.loads((tmp_path / LEASE_FILE).read_text())
        assert record["pid"] == os.getpid() and record["host"] == os.uname().nodename
        assert record["since"] - 1 <= (tmp_path / LEASE_FILE).stat().st_mtime <= time.time() + 1
        assert record["since_utc"].endswith("+00:00") and record["token"] == lease.record.token
    assert not (tmp_path / LEASE_FILE).exists()


def test_suite_hostname_sets_the_host_a_lease_names(tmp_path, monkeypatch):
    monkeypatch.setenv("SUITE_HOSTNAME", "node-b")
    with Lease(tmp_path):
        assert read_holder(tmp_path).host == "node-b"


def test_a_second_lease_on_a_live_holder_is_refused_naming_host_pid_and_since(tmp_path):
    with Lease(tmp_path):
        with pytest.raises(
            RunBusy, match=rf"being trained by {os.uname().nodename} pid {os.getpid()} since "
        ):
            Lease(tmp_path).acquire(patience=0.2)


def test_lease_of_a_dead_process_on_this_host_is_taken_over(tmp_path):
    old = plant(tmp_path, pid=dead_pid(), token="dead")
    with Lease(tmp_path) as lease:
        assert lease.taken_over.startswith(old.describe()) and read_holder(tmp_path).pid == os.getpid()


def test_lease_of_a_reused_pid_is_taken_over(tmp_path):
    me = Holder.of_this_process()
    plant(tmp_path, start_ticks=(me.start_ticks or 0) + 12345, token="reused")
    with Lease(tmp_path):
        assert read_holder(tmp_path).token != "reused"


def test_lease_from_before_a_reboot_of_this_host_is_taken_over(tmp_path):
    plant(tmp_path, boot_id="another-boot", token="before-reboot")
    with Lease(tmp_path):
        assert read_holder(tmp_path).token != "before-reboot"


def test_another_hosts_lease_is_live_until_its_heartbeat_is_older_than_the_timeout(tmp_path):
    plant(tmp_path, host="node-b", heartbeat=time.time() - 5, token="b")
    with pytest.raises(RunBusy, match=r"node-b pid .* \(heartbeat 5 s ago\)"):
        Lease(tmp_path, timeout=60, interval=1).acquire(patience=0.2)
    plant(tmp_path, host="node-b", heartbeat=time.time() - 61, token="b")
    with Lease(tmp_path, timeout=60, interval=1):
        assert read_holder(tmp_path).host != "node-b"


def test_the_stale_limit_is_read_from_suite_lease_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("SUITE_LEASE_TIMEOUT", "2")
    plant(tmp_path, host="node-b", heartbeat=time.time() - 1, token="b")
    with pytest.raises(RunBusy):
        Lease(tmp_path).acquire(patience=0.2)
    plant(tmp_path, host="node-b", heartbeat=time.time() - 3, token="b")
    with Lease(tmp_path) as lease:
        assert lease.timeout == 2 and lease.interval == 0.1
    monkeypatch.setenv("SUITE_LEASE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="SUITE_LEASE_TIMEOUT='soon': must be a positive number of seconds"):
        Lease(tmp_path)


def test_a_holder_with_a_slow_clock_is_live_while_its_file_is_touched(tmp_path):
    """The times a holder writes into its record do not enter the judgement: only the file's heartbeat."""
    plant(tmp_path, host="node-b", since=time.time() - 7200, token="slow-clock")
    with pytest.raises(RunBusy, match="node-b pid"):
        Lease(tmp_path, timeout=60, interval=1).acquire(patience=0.2)


def test_a_heartbeat_from_the_future_is_reported_with_its_skew_and_taken_over_after_one_stale_limit(
    tmp_path, capsys
):
    year_2100 = 4102444800.0
    plant(tmp_path, host="node-b", heartbeat=year_2100, token="future")
    start = time.monotonic()
    with Lease(tmp_path, timeout=1.5, interval=0.1) as lease:
        waited = time.monotonic() - start
        assert read_holder(tmp_path).token == lease.record.token
    assert 1.5 <= waited < 10
    out = capsys.readouterr().out
    assert "node-b pid" in out and "years ahead of the clock of its file system: clock skew" in out
    assert "watching it for up to 1.5 s" in out


def test_a_heartbeat_from_the_future_that_changes_belongs_to_a_live_holder(tmp_path):
    plant(tmp_path, host="node-b", heartbeat=4102444800.0, token="future")
    touch = threading.Timer(0.5, os.utime, args=(tmp_path / LEASE_FILE,))  # the holder's next heartbeat
    touch.start()
    try:
        with pytest.raises(RunBusy, match=r"node-b pid .* \(heartbeat 0 s ago\)"):
            Lease(tmp_path, timeout=5, interval=0.1).acquire(patience=0.2)
    finally:
        touch.join()
    assert read_holder(tmp_path).token == "future"


def test_requeued_slurm_job_takes_over_its_previous_runs_lease_on_another_node(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")
    plant(tmp_path, host="node-a", slurm_job="4242", slurm_restart=0, token="first")
    with pytest.raises(RunBusy):  # the same job instance is not a requeue
        Lease(tmp_path).acquire(patience=0.2)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    with Lease(tmp_path):
        assert read_holder(tmp_path).slurm_restart == 1


def test_unparseable_lease_is_taken_over(tmp_path):
    (tmp_path / LEASE_FILE).write_text("{not json")
    with Lease(tmp_path):
        assert read_holder(tmp_path).pid == os.getpid()


def test_heartbeat_thread_refreshes_the_time_stamp(tmp_path):
    with Lease(tmp_path, timeout=5, interval=0.05):
        first = read_lease(tmp_path)
        time.sleep(0.4)
        now = read_lease(tmp_path)
        assert now.mtime_ns > first.mtime_ns and now.same_file(first, same_heartbeat=False)


def test_holder_whose_lease_was_taken_over_writes_nothing_more_and_its_heartbeat_leaves_the_lease_alone(
    tmp_path,
):
    run_dir = tmp_path / "run"
    folder = RunDirectory(run_dir)
    with Lease(run_dir, timeout=5, interval=0.05):
        folder.update(status="running")
        append_jsonl(folder.stats, [{"nimg": 1}])
        plant(run_dir, host="node-b", token="usurper")
        before = folder_state(run_dir)
        time.sleep(0.3)  # six heartbeats of the loser
        for write in (
            lambda: folder.update(status="failed"),
            lambda: append_jsonl(folder.stats, [{"nimg": 2}]),
            lambda: append_jsonl(folder.records, [{"nimg": 2}]),
            lambda: save_checkpoint(folder.checkpoints, 64, {"x": torch.zeros(1)}),
        ):
            with pytest.raises(LeaseLost, match=r"lost the lease of .*lease.json names node-b pid"):
                write()
        assert folder_state(run_dir) == before  # not a byte, not a time stamp
    assert folder_state(run_dir) == before and read_holder(run_dir).token == "usurper"


def test_heartbeat_of_a_holder_whose_lease_was_taken_over_and_released_does_not_bring_it_back(tmp_path):
    with Lease(tmp_path, timeout=5, interval=0.05) as lease:
        plant(tmp_path, host="node-b", token="usurper")
        (tmp_path / LEASE_FILE).unlink()  # the usurper finished and released it
        time.sleep(0.3)
        assert not (tmp_path / LEASE_FILE).exists()
        with pytest.raises(LeaseLost, match=r"lease.json is gone"):
            lease.check()
    assert not (tmp_path / LEASE_FILE).exists()


def test_a_lease_naming_pid_1_without_a_start_time_is_broken_by_suite_lease_break(tmp_path, capsys):
    """pid 1 always runs, and without a start time a reused pid cannot be told apart: the lease counts as
    live while its heartbeat is fresh, is broken by hand, and goes stale with its heartbeat."""
    plant(tmp_path, pid=1, start_ticks=None, token="init")
    (tmp_path / "config.yaml").write_text("{}\n")  # a run folder
    with pytest.raises(RunBusy, match=rf"{os.uname().nodename} pid 1 since"):
        Lease(tmp_path, timeout=60, interval=1).acquire(patience=0.2)
    assert main(["lease", "break", str(tmp_path)]) == 2  # live: only with --force
    assert "the lease of" in capsys.readouterr().err and (tmp_path / LEASE_FILE).exists()
    assert main(["lease", "break", "--force", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"held by {os.uname().nodename} pid 1 since" in out and "; live" in out
    assert f"broke the lease of {tmp_path}" in out and not (tmp_path / LEASE_FILE).exists()
    with Lease(tmp_path):
        assert read_holder(tmp_path).pid == os.getpid()
    plant(tmp_path, pid=1, start_ticks=None, token="init", heartbeat=time.time() - 61)
    with Lease(tmp_path, timeout=60, interval=1) as lease:
        assert "pid 1 since" in lease.taken_over


def test_breaking_a_live_holders_lease_stops_it_at_its_next_write(tmp_path, capsys):
    (tmp_path / "config.yaml").write_text("{}\n")  # a run folder
    with Lease(tmp_path):
        assert main(["lease", "break", "--force", str(tmp_path)]) == 0
        assert f"pid {os.getpid()} since" in capsys.readouterr().out
        with pytest.raises(LeaseLost, match="lease.json is gone"):
            RunDirectory(tmp_path).update(status="running")
    assert not (tmp_path / "run.json").exists()


def test_lease_break_refuses_a_folder_that_is_not_a_run_and_a_live_lease_without_force(tmp_path, capsys):
    plant(tmp_path, pid=dead_pid(), token="dead")
    assert main(["lease", "break", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path} is not a run folder (no run.json or config.yaml); give one " \
        "(…/runs/<comparison>/<sampler>/seed<k>)\n"  # fmt: skip
    assert (tmp_path / LEASE_FILE).exists()
    (tmp_path / "run.json").write_text("{}")
    assert main(["lease", "break", str(tmp_path)]) == 0  # stale: no --force needed
    assert "; stale" in capsys.readouterr().out and not (tmp_path / LEASE_FILE).exists()
    with Lease(tmp_path):
        assert main(["lease", "break", str(tmp_path)]) == 2
        assert "is live; add --force to break it anyway" in capsys.readouterr().err
        assert read_holder(tmp_path).pid == os.getpid()


def test_break_lock_left_by_a_dead_process_is_cleared(tmp_path):
    plant(tmp_path, pid=dead_pid(), token="dead")
    (tmp_path / BREAK_FILE).write_bytes(
        dataclasses.replace(Holder.of_this_process(), pid=dead_pid()).to_bytes()
    )
    with Lease(tmp_path):
        assert not (tmp_path / BREAK_FILE).exists()


def _contend(run_dir: str, start: float, hold: float, queue: multiprocessing.Queue) -> None:
    time.sleep(max(start - time.time(), 0))
    try:
        with Lease(run_dir):
            queue.put(("won", os.getpid()))
            time.sleep(hold)
    except RunBusy as busy:
        queue.put(("busy", busy.holder.pid))


@pytest.mark.parametrize("stale", [False, True], ids=["fresh", "stale"])
def test_of_simultaneous_launchers_exactly_one_takes_the_lease(tmp_path, stale):
    if stale:
        plant(tmp_path, pid=dead_pid(), token="dead")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    start = time.time() + 0.5
    procs = [ctx.Process(target=_contend, args=(str(tmp_path), start, 1.5, queue)) for _ in range(6)]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=30) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    winners = [pid for outcome, pid in results if outcome == "won"]
    assert len(winners) == 1, results
    assert all(pid == winners[0] for outcome, pid in results if outcome == "busy"), results
    assert not (tmp_path / LEASE_FILE).exists() and not (tmp_path / BREAK_FILE).exists()


def test_clean_up_removes_dead_writers_temporary_files_and_keeps_everything_else(tmp_path):
    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    debris = [
        ckpts / ".ckpt-000000000064.pt.k2j4_x9a.tmp",
        tmp_path / ".run.json.abc123de.tmp",
        tmp_path / ".stats.jsonl.zz9_0011.tmp",
        tmp_path / f".{LEASE_FILE}.{'0' * 32}.link",
    ]
    kept = [
        ckpts / "ckpt-000000000064.pt",
        tmp_path / "run.json",
        tmp_path / ".slurm.json.q1w2e3r4.tmp",  # written by the submitting process, not the holder
        tmp_path / f".{LEASE_FILE}.{'1' * 32}.link",  # a racing launcher's, milliseconds old
    ]
    for path in debris + kept:
        path.write_text("x")
    old = time.time() - 3600
    os.utime(debris[-1], (old, old))
    assert sorted(clean_temporary_files(tmp_path)) == sorted(debris)
    assert all(path.exists() for path in kept)


def test_clean_up_finds_what_a_writer_killed_between_write_and_rename_leaves(tmp_path):
    kill_before_rename = (
        "import os, sys; from suite import records; records.os.replace = lambda *a: os._exit(9); "
        "records.write_atomic(sys.argv[1], b'{}')"
    )
    target = tmp_path / "checkpoints" / "ckpt-000000000064.pt"
    subprocess.run([sys.executable, "-c", kill_before_rename, str(target)], check=False)
    (leftover,) = (tmp_path / "checkpoints").iterdir()
    assert leftover.name.startswith(".ckpt-000000000064.pt.") and leftover.name.endswith(".tmp")
    assert clean_temporary_files(tmp_path) == [leftover]


def test_status_shows_the_holder_and_a_killed_run_as_interrupted(tmp_path):
    from suite.report.status import collect

    run_dir = tmp_path / "runs" / "bfashion-smoke-0123abcd" / "edm" / "seed0"
    RunDirectory(run_dir).update(status="running", kimg=0.5)
    with Lease(run_dir):
        (row,) = collect(tmp_path).to_dict("records")
        assert row["status"] == "running"
        assert row["holder"].startswith(f"{os.uname().nodename} pid {os.getpid()} since ")
        assert row["holder"].endswith(", heartbeat 0 s ago")
    plant(run_dir, pid=dead_pid(), token="killed")
    (row,) = collect(tmp_path).to_dict("records")
    assert row["status"] == "interrupted" and row["holder"].startswith("stale ")


def test_status_shows_another_hosts_heartbeat_age_and_a_future_one_with_its_skew(tmp_path):
    from suite.report.status import collect

    run_dir = tmp_path / "runs" / "bfashion-smoke-0123abcd" / "edm" / "seed0"
    RunDirectory(run_dir).update(status="running", kimg=0.5)
    plant(run_dir, host="node-b", heartbeat=time.time() - 700)
    (row,) = collect(tmp_path).to_dict("records")
    assert row["holder"].startswith("stale node-b pid") and row["holder"].endswith("heartbeat 12 min ago")
    assert row["status"] == "interrupted"
    plant(run_dir, host="node-b", heartbeat=time.time() + 3 * 86400)
    (row,) = collect(tmp_path).to_dict("records")
    assert row["holder"].startswith("unknown node-b pid")
    assert row["holder"].endswith("heartbeat 3 days ahead of this host's clock: clock skew")
    assert row["status"] == "running"  # not known to be dead


def test_a_launch_whose_runs_were_all_skipped_as_busy_exits_3_with_one_line_per_run(tmp_path, capsys):
    from suite.cli import main
    from suite.launch.plan import plan_runs

    args = ["--task", "bfashion", "--sampler", "edm,fm", "--results", str(tmp_path)]
    for run in plan_runs("bfashion", "edm,fm", results=tmp_path):
        plant(run.run_dir, host="node-b", token=run.cfg.sampler.name)
    assert main(["run", *args]) == 3
    out = capsys.readouterr().out
    summary = out[out.index("2 run(s):") :].splitlines()[1:3]
    assert [line.split()[:2] for line in summary] == [
        ["busy", "bfashion/smoke/edm/seed0"],
        ["busy", "bfashion/smoke/fm/seed0"],
    ]
    assert all(
        re.search(r"  trained by node-b pid \d+ since .* \(heartbeat \d+ s ago\)$", line) for line in summary
    )
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "comparison.json",
        LEASE_FILE,
        LEASE_FILE,
    ]


TAKE_OVER = """
import json, sys
from suite.config import from_resolved
from suite.run.training import train
train(from_resolved(json.loads(sys.argv[1])), sys.argv[2])
"""


def test_a_holder_woken_after_a_take_over_finished_the_run_leaves_the_records_of_an_uninterrupted_run(
    tmp_path, monkeypatch
):
    """The stop is placed at ``suite.records.pause_before_write``, after the guard of the holder's first
    evaluation rows: there the lease is broken and another process trains the run to ``done``; woken, the
    holder's append is undone and it stops with LeaseLost."""
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    cfg = compose_run("ring2d", "edm", "smoke", TINY_RING2D)
    train(cfg, tmp_path / "whole")
    run_dir = tmp_path / "stopped"
    taken_over = []

    def take_over(path: Path) -> None:
        if path.name != "records.jsonl" or taken_over:
            return
        assert break_lease(run_dir, read_lease(run_dir))
        resolved = json.dumps(OmegaConf.to_container(cfg, resolve=True))
        done = subprocess.run([sys.executable, "-c", TAKE_OVER, resolved, str(run_dir)], env=os.environ)
        taken_over.append(done.returncode)

    monkeypatch.setattr(suite.records, "pause_before_write", take_over)
    with pytest.raises(LeaseLost):
        train(cfg, run_dir)
    assert taken_over == [0]
    whole, stopped = RunDirectory(tmp_path / "whole"), RunDirectory(run_dir)
    assert stopped.status() == "done"
    assert untimed(stopped.rows()) == untimed(whole.rows())
    assert untimed(read_jsonl(stopped.stats)) == untimed(read_jsonl(whole.stats))


def test_a_holder_stopped_between_its_guard_and_a_replace_puts_back_the_file_a_take_over_wrote(
    tmp_path, monkeypatch
):
    """Woken after the take-over wrote run.json, the stale holder's replace is undone: run.json is the new
    holder's, and the stale holder raises LeaseLost."""
    run_dir = tmp_path / "run"
    lease = Lease(run_dir, timeout=60)
    lease.acquire()

    def take_over(path: Path) -> None:
        assert break_lease(run_dir, read_lease(run_dir))
        plant(run_dir, host="node-b")
        (run_dir / "new").write_text('{"status": "done"}\n')
        os.replace(run_dir / "new", run_dir / "run.json")
        time.sleep(0.05)  # the holder stays stopped past a tick of the file system's clock

    monkeypatch.setattr(suite.records, "pause_before_write", take_over)
    try:
        with pytest.raises(LeaseLost):
            write_json(run_dir / "run.json", {"status": "running"})
    finally:
        lease.release()
    assert json.loads((run_dir / "run.json").read_text()) == {"status": "done"}
    assert sorted(p.name for p in run_dir.iterdir()) == [LEASE_FILE, "run.json"]


def test_a_write_made_before_the_take_over_stands(tmp_path):
    """A holder stopped after its append, before the check that follows it: the take-over came later, so the
    row stays, and the holder stops at its next write."""
    run_dir = tmp_path / "run"
    with Lease(run_dir, timeout=60) as lease:
        append_jsonl(run_dir / "records.jsonl", [{"nimg": 1}])
        written = (run_dir / "records.jsonl").stat().st_ctime_ns
        time.sleep(0.02)  # past the file system clock's tick
        plant(run_dir, host="node-b")
        assert lease.fence(written)
        with pytest.raises(LeaseLost):
            append_jsonl(run_dir / "records.jsonl", [{"nimg": 2}])
    assert [row["nimg"] for row in RunDirectory(run_dir).rows()] == [1]


def test_a_done_run_whose_records_repeat_an_evaluation_is_repaired_on_re_run_keeping_the_first(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "results"
    argv = ["run", "--task", "ring2d", "--sampler", "edm", "--budget", "smoke", "--results", str(results)]
    overrides = [o for o in TINY_RING2D if not o.startswith("budget.checkpoint_kimg")]
    assert main([*argv, *overrides]) == 0
    (records,) = results.glob("runs/*/edm/seed0/records.jsonl")
    rows = RunDirectory(records.parent).rows()
    copy = dict(rows[0], value=rows[0]["value"] + 1.0)
    append_jsonl(records, [copy])
    capsys.readouterr()
    assert main([*argv, *overrides]) == 0
    out = capsys.readouterr().out
    assert f"repaired {records}: dropped 1 evaluation row(s) repeating an earlier row's" in out
    assert f"(line(s) {len(rows) + 1}; the first of each is kept)" in out and "done already" in out
    assert RunDirectory(records.parent).rows() == rows
