"""Several runs on one device (``suite run --runs-per-gpu K``): K runs trained at once as K processes write
the records of the K runs launched one by one, value for value, and survive what a single run survives.

The tests pack two runs of bfashion (EDM and InfoNoise, an adaptive sampler whose state and density log
must survive too) on real Fashion-MNIST at the tiny budget of ``tests/integration/test_faults.py``, and
compare them with the two runs launched one after the other under the same number of CPU threads as each
packed child (cores // 2): the evaluation rows, stats rows and density logs equal value for value (timings
aside). A packed launch is SIGKILLed with its children mid-run (each child held at its first checkpoint by
SIGSTOP, so neither can finish first), re-run and stopped by a SIGTERM to the launcher alone (forwarded: both
children checkpoint, exit 130), and re-run again: it ends equal to the one-by-one runs. A Ctrl-C as a
terminal sends it (SIGINT to the launcher's process group, where the children no longer are) stops both
children at a checkpoint with status 130; a child SIGKILLed mid-run is a failed run named in the summary with
its log while the other finishes; each re-run ends equal to the one-by-one runs. The plan is checked without
launching in ``tests/unit/test_packing.py``, the SLURM array task in ``tests/cluster/test_packing.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

import pytest
import torch

from suite.launch.packed import usable_cores
from suite.records import read_jsonl
from suite.run.checkpoint import list_checkpoints
from tests.helpers.subprocesses import cli_command, cli_env
from tests.integration.test_faults import BUDGET, DEBRIS_SUFFIXES, FASHION, main_here, without_timing

SAMPLERS = ("edm", "infonoise")

PACK = 2

THREADS = str(max(1, usable_cores() // PACK))  # what each packed child gets

DEADLINE_S = 600.0


def arguments(results: Path, *flags: str) -> list[str]:
    """``suite run``'s arguments for the two runs."""
    return [
        "run",
        "--task",
        "bfashion",
        "--sampler",
        ",".join(SAMPLERS),
        "--results",
        str(results),
        *flags,
        f"task.root={FASHION}",
        *BUDGET,
    ]


def command(results: Path, *flags: str) -> list[str]:
    return cli_command(*arguments(results, *flags))


def launch(results: Path, *flags: str) -> subprocess.Popen:
    """A launch in its own session (its process group holds the launcher and its children)."""
    return subprocess.Popen(
        command(results, *flags),
        env=cli_env(OMP_NUM_THREADS=THREADS),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=DEADLINE_S)
    return out


def run_dir(results: Path, sampler: str) -> Path:
    (found,) = results.glob(f"runs/*/{sampler}/seed0")
    return found


def records(results: Path, sampler: str) -> dict[str, list[dict]]:
    folder = run_dir(results, sampler)
    return {
        name: without_timing(read_jsonl(folder / name))
        for name in ("records.jsonl", "stats.jsonl", "sampler.jsonl")
    }


def info(results: Path, sampler: str) -> dict:
    return json.loads((run_dir(results, sampler) / "run.json").read_text())


def holder_pid(results: Path, sampler: str) -> int | None:
    """The pid in the run's lease, None while it has none."""
    try:
        return int(json.loads((run_dir(results, sampler) / "lease.json").read_text())["pid"])
    except (ValueError, FileNotFoundError, KeyError):  # absent, or the run folder not made yet
        return None


def kill(proc: subprocess.Popen, children: Iterable[int]) -> None:
    """SIGKILL a launch: its process group and its children, each in a group of its own."""
    for pid in [proc.pid, *children]:
        with suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def poll(what: str, check: Callable[[], bool], proc: subprocess.Popen, children: Iterable[int] = ()) -> None:
    """Wait until ``check()`` holds, failing with the launch's output if it ends first or time runs out."""
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            kill(proc, children)
            pytest.fail(f"no {what}: the launch ended ({proc.returncode}) or timed out:\n{finish(proc)}")
        time.sleep(0.02)


def hold_at_first_checkpoint(results: Path, proc: subprocess.Popen) -> dict[str, int]:
    """SIGSTOP each packed child at its run's first checkpoint (so neither can finish first): their pids."""
    held: dict[str, int] = {}

    def both_held() -> bool:
        for sampler in SAMPLERS:
            pid = holder_pid(results, sampler)
            if sampler not in held and pid and list(run_dir(results, sampler).glob("checkpoints/ckpt-*")):
                os.kill(pid, signal.SIGSTOP)
                held[sampler] = pid
        return len(held) == len(SAMPLERS)

    poll("first checkpoint of both runs", both_held, proc, held.values())
    return held


def assert_equal_to(results: Path, reference: Path) -> None:
    """Both runs done, their records equal to the reference's (timings aside), with no row twice, no
    temporary file, lease or lock left, every checkpoint loadable with ``weights_only=True``."""
    for sampler in SAMPLERS:
        folder = run_dir(results, sampler)
        assert info(results, sampler)["status"] == "done"
        assert records(results, sampler) == records(reference, sampler), sampler
        for name in ("stats.jsonl", "sampler.jsonl"):
            rows = [row["nimg"] for row in read_jsonl(folder / name)]
            assert len(rows) == len(set(rows)), f"duplicate rows in {folder / name}"
        keys = [(r["nimg"], r["metric"], r["grid"]) for r in read_jsonl(folder / "records.jsonl")]
        assert len(keys) == len(set(keys)), "duplicate evaluation rows"
        debris = [
            p
            for p in folder.rglob("*")
            if p.name.endswith(DEBRIS_SUFFIXES) or p.name.startswith("lease.json")
        ]
        assert debris == [], debris
        for path in list_checkpoints(folder / "checkpoints"):
            torch.load(path, weights_only=True)


def proc_status(pid: int, field: str) -> str:
    """A field of ``/proc/<pid>/status`` (``State``: T when stopped; ``ShdPnd``: the signals sent to the
    process and not yet delivered, a hexadecimal mask with bit n-1 for signal n)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:"))


def sigterm_pending(pid: int) -> bool:
    return bool(int(proc_status(pid, "ShdPnd"), 16) >> (signal.SIGTERM - 1) & 1)


@pytest.fixture(scope="module")
def fashion() -> Path:
    if not (FASHION / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"no real Fashion-MNIST in {FASHION} (apt-get install dataset-fashion-mnist)")
    return FASHION


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory, fashion) -> Path:
    """The two runs launched one after the other, each with the thread count of a packed child (in this
    process: nothing is killed)."""
    results = tmp_path_factory.mktemp("one-by-one")
    assert main_here(arguments(results), threads=int(THREADS)) == 0
    return results


@pytest.mark.slow
def test_two_packed_runs_train_at_once_in_two_processes_and_equal_the_runs_launched_one_by_one(
    tmp_path, one_by_one
):
    results = tmp_path / "packed"
    proc = launch(results, "--runs-per-gpu", str(PACK))
    holders: set[tuple[int | None, int | None]] = set()
    while proc.poll() is None:
        holders.add((holder_pid(results, "edm"), holder_pid(results, "infonoise")))
        time.sleep(0.02)
    out = finish(proc)
    assert proc.returncode == 0, out
    together = [(a, b) for a, b in holders if a and b]
    assert together, f"the two runs never held their leases at the same time: {sorted(holders, key=str)}"
    assert all(a != b and proc.pid not in (a, b) for a, b in together)  # two children, not the launcher
    for sampler in SAMPLERS:
        assert f"  done         bfashion/smoke/{sampler}/seed0" in out
    assert_equal_to(results, one_by_one)


@pytest.mark.slow
def test_a_packed_launch_killed_then_stopped_by_sigterm_resumes_both_runs_to_the_one_by_one_records(
    tmp_path, one_by_one
):
    results = tmp_path / "packed"
    # SIGKILL the launcher and both children mid-run: each child is held (SIGSTOP) at its first checkpoint.
    proc = launch(results, "--runs-per-gpu", str(PACK))
    held = hold_at_first_checkpoint(results, proc)
    kill(proc, held.values())
    finish(proc)
    for sampler in SAMPLERS:
        assert info(results, sampler)["status"] == "running"  # killed mid-run, its lease left behind
        assert holder_pid(results, sampler) == held[sampler] != proc.pid

    # Re-run; once both children train (resumed, their stop handlers in place), SIGTERM the launcher alone.
    proc = launch(results, "--runs-per-gpu", str(PACK))
    killed = dict(held)
    held.clear()

    def both_resumed() -> bool:
        for sampler in SAMPLERS:
            # resumed (its lease taken, its stop handler in place) before its lease is read
            resumed = info(results, sampler).get("resumed_from_kimg") is not None
            pid = holder_pid(results, sampler)
            if sampler not in held and resumed and pid:
                os.kill(pid, signal.SIGSTOP)  # so that neither finishes before the signal reaches it
                held[sampler] = pid
        return len(held) == len(SAMPLERS)

    poll("resumed training of both runs", both_resumed, proc, held.values())
    assert not set(held.values()) & {*killed.values(), proc.pid}
    # Stopped before the signal comes: of two pending signals the lower-numbered, SIGTERM, is taken first.
    poll(
        "both children stopped",
        lambda: all(proc_status(pid, "State") == "T" for pid in held.values()),
        proc,
        held.values(),
    )
    proc.send_signal(signal.SIGTERM)  # the launcher alone; it forwards it to the held children
    poll("SIGTERM forwarded", lambda: all(sigterm_pending(pid) for pid in held.values()), proc, held.values())
    for pid in held.values():
        os.kill(pid, signal.SIGCONT)
    out = finish(proc)
    assert out.count("took over the stale lease of") == 2, out
    assert proc.returncode == 130, out
    for sampler in SAMPLERS:
        assert f"  interrupted  bfashion/smoke/{sampler}/seed0  stopped by SIGTERM at kimg" in out
        assert info(results, sampler)["status"] == "interrupted"

    # Re-run to the end.
    proc = launch(results, "--runs-per-gpu", str(PACK))
    out = finish(proc)
    assert proc.returncode == 0, out
    assert_equal_to(results, one_by_one)


def assert_stopped_at_a_checkpoint(results: Path, sampler: str) -> None:
    """The run is interrupted and its newest checkpoint is at the point it stopped."""
    folder = run_dir(results, sampler)
    assert info(results, sampler)["status"] == "interrupted"
    newest = list_checkpoints(folder / "checkpoints")[-1]
    assert int(newest.stem.split("-")[1]) == round(info(results, sampler)["kimg"] * 1000), newest


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_of_a_packed_launch_stops_each_child_once_at_a_checkpoint(
    tmp_path, one_by_one
):
    results = tmp_path / "packed"
    proc = launch(results, "--runs-per-gpu", str(PACK))
    held = hold_at_first_checkpoint(results, proc)
    for pid in held.values():
        assert os.getpgid(pid) == pid != os.getpgid(proc.pid)  # each child leads a group of its own
        os.kill(pid, signal.SIGCONT)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the foreground process group
    out = finish(proc)
    assert proc.returncode == 130, out
    assert "aborting" not in out and "EOFError" not in out, out
    for sampler in SAMPLERS:
        assert f"  interrupted  bfashion/smoke/{sampler}/seed0  stopped by SIGINT at kimg" in out, out
        assert_stopped_at_a_checkpoint(results, sampler)

    proc = launch(results, "--runs-per-gpu", str(PACK))
    out = finish(proc)
    assert proc.returncode == 0, out
    assert_equal_to(results, one_by_one)


@pytest.mark.slow
def test_a_packed_child_killed_mid_run_is_a_failed_run_named_with_its_log_and_the_other_finishes(
    tmp_path, one_by_one
):
    results = tmp_path / "packed"
    proc = launch(results, "--runs-per-gpu", str(PACK))
    held = hold_at_first_checkpoint(results, proc)
    os.kill(held["edm"], signal.SIGKILL)
    os.kill(held["infonoise"], signal.SIGCONT)
    out = finish(proc)
    assert proc.returncode == 1, out
    log = run_dir(results, "edm") / "log.txt"
    assert f"  failed       bfashion/smoke/edm/seed0  its process was killed by SIGKILL; log: {log}" in out
    assert "  done         bfashion/smoke/infonoise/seed0" in out and "EOFError" not in out, out
    assert info(results, "edm")["status"] == "running"  # killed: its lease left for the re-run to take

    proc = launch(results, "--runs-per-gpu", str(PACK))
    out = finish(proc)
    assert proc.returncode == 0, out
    assert "done already: bfashion/smoke/infonoise/seed0" in out
    assert_equal_to(results, one_by_one)
