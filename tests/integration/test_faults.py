"""Fault injection: whatever happens to a run, re-running the command ends with the records of a run that
nothing happened to.

Each test damages a run of bfashion (InfoNoise, an adaptive sampler, so its state and density log must
survive too) at a tiny smoke budget, then re-runs the same command once, and requires: status done; the
evaluation rows, the stats rows (loss and learning rate included) and the sampler's density log equal to
those of an uninterrupted run value for value (timings aside); no row twice; no temporary file, lease or
break lock left; every checkpoint loadable with ``weights_only=True``. The damages: SIGKILL after a step
chosen at random, SIGKILL while a checkpoint is half written (``SUITE_FAULT``, see ``suite.run.checkpoint``),
SIGTERM, a second launch while the first trains, a truncated newest checkpoint, torn last JSONL lines,
and a corrupted ``run.json``. A checkpoint holding a pickled object is refused, naming the file. A holder
stopped (SIGSTOP) past the stale limit, whose lease a launch on another host takes over to finish the
run on real Fashion-MNIST, writes nothing when it wakes.

On real Fashion-MNIST (``/usr/share/datasets/fashion-mnist``, skipped where it is absent), whose losses give
density tables that do not sum to exactly 1: a last JSONL line of invalid UTF-8, of a 5000-digit number or
of a JSON array is dropped and the re-run matches; a symlinked ``records.jsonl`` and a linked
``checkpoints/`` are refused, naming them, and what they point to is left as it was; a corrupted middle
record and a short ``done`` run are reported by ``suite status``, ``suite table`` and ``suite report``,
never averaged in silently. Against one uninterrupted launch of InfoNoise and EDM: a restart with no
loadable checkpoint (a kill before the first one, every checkpoint truncated) starts over without duplicate
rows; the adaptive sampler resumes bit for bit after SIGUSR2 past its first rebuild (also on the generated
data); SIGTERM during imports, while a run loads its data and between the runs of a launch stops the launch
cleanly (exit 130, no lease left); SIGTERM and SIGINT during an evaluation (against a launch whose
evaluation takes seconds) abandon it within a bound the test prints, with the evaluation point's checkpoint
kept, and the re-run evaluates that point again.

A kill, a signal and a process that must be alive while another launch runs need a CLI subprocess; what
recovers from them does not. The uninterrupted references, every re-run and every command that reads a
damaged folder (``suite status``, ``table``, ``report``, ``lease break``) call ``suite.cli.main`` in this
process, set up as a CLI subprocess starts (one torch thread, as ``OMP_NUM_THREADS=1`` gives the killed
subprocesses, so a resumed run can equal its reference value for value; no ``SUITE_FAULT``; warnings on
stderr) and put back afterwards; each such call also requires that the launch left no stop handler and
no lease heartbeat behind. Killed runs that several tests damage differently are made once per module and
copied per test.
"""

import contextlib
import dataclasses
import fractions
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from suite.cli import main
from suite.records import read_jsonl
from suite.run.checkpoint import FAULT_ENV, list_checkpoints
from suite.stopping import STOP_SIGNALS
from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test" for in-process launches)
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env

pytestmark = pytest.mark.slow  # 16 CLI subprocesses (kills and signals), 33 commands in this process

SAMPLER = "infonoise"
BATCH = 32
TOTAL_NIMG = 480  # 15 steps; ticks at 128, 224, 320, 416, 480; checkpoints at 160, 256 (evaluation), 320, 480
BUDGET = [
    "budget.kimg=0.48",
    f"budget.batch={BATCH}",
    "budget.tick_kimg=0.1",
    "budget.checkpoint_kimg=0.16",
    "budget.eval_points=2",
    "budget.eval.samples=32",
    "budget.eval.reference=64",
    "budget.eval.batch_size=32",
    "budget.lr_rampup_kimg=0.2",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=4",
    "task.metrics.fid.feature_extractor=rand-test",
    "task.metrics.fid.batch_size=32",
    "task.solver_steps=3",
    "task.network.model_channels=8",
    "task.network.channel_mult=[1,2]",
]
SLOW_EVALUATION = ["budget.eval.samples=256"]  # 8 generation batches: seconds on 2 CPU cores
FASHION = Path("/usr/share/datasets/fashion-mnist")
FIXED = "edm"  # the second sampler of a two-run launch
ROWS = {"records.jsonl": 2, "stats.jsonl": 5, "sampler.jsonl": 4}  # an InfoNoise run of this budget
GRACE_S = 30.0  # SLURM's default KillWait: SIGKILL follows SIGTERM after it
TIMING = ("eval_seconds", "wall_time", "sec_per_kimg")
DEBRIS_SUFFIXES = (".tmp", ".link")


def arguments(results: Path, data: Path, sampler: str = SAMPLER, extra: list[str] | None = None) -> list[str]:
    """``suite run``'s arguments for the tiny bfashion run."""
    return [
        "run",
        "--task",
        "bfashion",
        "--sampler",
        sampler,
        "--results",
        str(results),
        f"task.root={data}",
        *BUDGET,
        *(extra or []),
    ]


def command(results: Path, data: Path, **options) -> list[str]:
    return cli_command(*arguments(results, data, **options))


def environment(fault: str | None) -> dict[str, str]:
    """The CLI's environment, with ``SUITE_FAULT`` set when a fault is injected."""
    return cli_env(**({FAULT_ENV: fault} if fault else {}))


def launch(results: Path, data: Path, fault: str | None = None, **options) -> subprocess.Popen:
    return subprocess.Popen(
        command(results, data, **options),
        env=environment(fault),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run(results: Path, data: Path, fault: str | None = None, **options) -> subprocess.CompletedProcess:
    """A launch in a CLI subprocess, for a fault that kills or signals it."""
    return subprocess.run(
        command(results, data, **options), env=environment(fault), capture_output=True, text=True, timeout=600
    )


def _warning_on_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def as_a_cli_process(threads: int = 1, **env: str) -> Iterator[None]:
    """This process set up as a CLI subprocess of ``cli_env(OMP_NUM_THREADS=threads, **env)`` starts
    (``threads`` torch threads, no fault injected, each warning printed on stderr once per place), and put
    back as it was after the block; fails when the launch left a stop handler installed or a lease heartbeat
    running."""
    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    saved = torch.get_num_threads(), warnings.formatwarning, logging.root.handlers[:]
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        for name in (FAULT_ENV, "SUITE_DEBUG"):
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        warnings.simplefilter("default")
        warnings.showwarning = _warning_on_stderr
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(saved[0])
            warnings.formatwarning = saved[1]
            logging.root.handlers[:] = saved[2]
            left = [s.name for s, handler in handlers.items() if signal.getsignal(s) is not handler]
            for s, handler in handlers.items():
                signal.signal(s, handler)
    assert left == [], f"stop handlers left installed: {left}"
    beating = [t for t in threading.enumerate() if t.name == "lease-heartbeat"]
    assert beating == [], beating


def main_here(argv: list[str], threads: int = 1, **env: str) -> int:
    """``suite ARGV`` in this process (see :func:`as_a_cli_process`); its output goes to pytest's capture."""
    with as_a_cli_process(threads, **env):
        return main(argv)


@pytest.fixture
def here(capfd) -> Callable[..., subprocess.CompletedProcess]:
    """``here(*argv, **env)``: ``suite ARGV`` in this process, with its exit status and captured output."""

    def call(*argv: str, **env: str) -> subprocess.CompletedProcess:
        capfd.readouterr()
        code = main_here(list(argv), **env)
        out = capfd.readouterr()
        return subprocess.CompletedProcess(list(argv), code, out.out, out.err)

    return call


@pytest.fixture
def rerun(here) -> Callable[..., subprocess.CompletedProcess]:
    """``rerun(results, data, **options)``: the launch of :func:`run` again, in this process."""
    return lambda results, data, env=None, **options: here(
        *arguments(results, data, **options), **(env or {})
    )


def run_dir_of(results: Path, sampler: str = SAMPLER) -> Path:
    (found,) = results.glob(f"runs/*/{sampler}/seed0")
    return found


def without_timing(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def outcome(results: Path, sampler: str = SAMPLER) -> dict[str, list[dict]]:
    folder = run_dir_of(results, sampler)
    return {
        name: without_timing(read_jsonl(folder / name))
        for name in ("records.jsonl", "stats.jsonl", "sampler.jsonl")
    }


def assert_recovered(results: Path, reference: Path, sampler: str = SAMPLER) -> None:
    """The re-run ended as the uninterrupted run did, without duplicates or debris."""
    folder = run_dir_of(results, sampler)
    assert json.loads((folder / "run.json").read_text())["status"] == "done"
    got, expected = outcome(results, sampler), outcome(reference, sampler)
    for name in expected:
        assert got[name] == expected[name], name
    for name in ("stats.jsonl", "sampler.jsonl"):
        lines = [line for line in (folder / name).read_text().splitlines() if line.strip()]
        assert len(lines) == len({json.loads(line)["nimg"] for line in lines}), f"duplicate rows in {name}"
    keys = [(r["nimg"], r["metric"], r["grid"]) for r in read_jsonl(folder / "records.jsonl")]
    assert len(keys) == len(set(keys)), "duplicate evaluation rows"
    debris = [
        p for p in folder.rglob("*") if p.name.endswith(DEBRIS_SUFFIXES) or p.name.startswith("lease.json")
    ]
    assert debris == [], debris
    for path in list_checkpoints(folder / "checkpoints"):
        torch.load(path, weights_only=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, data) -> Path:
    results = tmp_path_factory.mktemp("uninterrupted")
    assert main_here(arguments(results, data)) == 0
    rows = read_jsonl(run_dir_of(results) / "stats.jsonl")
    assert [r["nimg"] for r in rows] == [128, 224, 320, 416, 480]  # the first step past each 100 examples
    return results


@pytest.fixture(scope="module")
def killed(tmp_path_factory, data) -> tuple[Path, int]:
    """A run SIGKILLed after a step chosen at random (between the second checkpoint and the end)."""
    results = tmp_path_factory.mktemp("killed")
    step = random.Random(os.getpid()).randrange(9, TOTAL_NIMG // BATCH)
    nimg = step * BATCH
    died = run(results, data, fault=f"step@{nimg}")
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    return results, nimg


def damaged_copy(killed: tuple[Path, int], tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(killed[0], results)
    return results


@pytest.fixture(scope="module")
def fashion() -> Path:
    if not FASHION.is_dir():
        pytest.skip(f"real Fashion-MNIST (IDX gz files) is not at {FASHION}")
    return FASHION


@pytest.fixture(scope="module")
def fashion_reference(tmp_path_factory, fashion) -> Path:
    """One uninterrupted launch of InfoNoise and the fixed EDM sampler on real Fashion-MNIST (its InfoNoise
    run is the reference of every InfoNoise run on these data: a run writes the same records alone)."""
    results = tmp_path_factory.mktemp("fashion-uninterrupted")
    assert main_here(arguments(results, fashion, sampler=f"{SAMPLER},{FIXED}")) == 0
    assert row_counts(results) == ROWS
    return results


@pytest.fixture(scope="module")
def slow_evaluation_reference(tmp_path_factory, fashion) -> Path:
    """An uninterrupted InfoNoise run on real Fashion-MNIST whose evaluations take seconds."""
    results = tmp_path_factory.mktemp("fashion-slow-evaluation")
    assert main_here(arguments(results, fashion, extra=SLOW_EVALUATION)) == 0
    assert row_counts(results) == ROWS
    return results


def row_counts(results: Path, sampler: str = SAMPLER) -> dict[str, int]:
    return {name: len(rows) for name, rows in outcome(results, sampler).items()}


def handles(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (``SigCgt`` of /proc/<pid>/status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    (caught,) = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(int(caught, 16) >> (signum - 1) & 1)


def wait_for(proc: subprocess.Popen, ready, what: str, timeout: float = 300) -> None:
    """Poll ``ready()`` every 10 ms until it holds; fail if the process ends first or ``timeout`` passes."""
    deadline = time.time() + timeout
    while not ready():
        if proc.poll() is not None or time.time() > deadline:
            out = proc.communicate()[0] if proc.poll() is not None else "(still running)"
            proc.kill()
            pytest.fail(f"never saw {what}: {out}")
        time.sleep(0.01)


def assert_stopped_cleanly(proc_out: str, returncode: int, results: Path) -> None:
    """Exit 130 after a stop, and no lease or lease temporary file left in any run folder."""
    assert returncode == 130, proc_out
    leases = [p for p in results.glob("runs/*/*/seed0/*") if p.name.startswith((".lease.json", "lease.json"))]
    assert leases == [], leases


def test_sigkill_after_a_random_step_then_rerun_matches_the_uninterrupted_run(
    killed, tmp_path, data, reference, rerun
):
    results = damaged_copy(killed, tmp_path)
    folder = run_dir_of(results)
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "running" and (folder / "lease.json").is_file()  # killed mid-run, lease left
    assert max(r["nimg"] for r in read_jsonl(folder / "stats.jsonl")) <= killed[1] < TOTAL_NIMG
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "took over the stale lease" in again.stdout
    assert_recovered(results, reference)


def test_sigkill_while_a_checkpoint_is_written_then_rerun_matches(tmp_path, data, reference, rerun):
    results = tmp_path / "results"
    died = run(results, data, fault="checkpoint@320")
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    checkpoints = run_dir_of(results) / "checkpoints"
    (half_written,) = checkpoints.glob(".ckpt-000000000320.pt.*.tmp")
    assert [p.name for p in list_checkpoints(checkpoints)][-1] == "ckpt-000000000256.pt"
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"removed {half_written}" in again.stdout
    assert_recovered(results, reference)


def test_sigterm_checkpoints_and_stops_then_rerun_matches(tmp_path, data, reference, rerun):
    results = tmp_path / "results"
    proc = launch(results, data)
    deadline = time.time() + 300
    while time.time() < deadline and not list(results.glob(f"runs/*/{SAMPLER}/seed0/stats.jsonl")):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, out
    folder = run_dir_of(results)
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "interrupted" and not (folder / "lease.json").exists()
    assert list_checkpoints(folder / "checkpoints")[-1].name == f"ckpt-{round(info['kimg'] * 1000):012d}.pt"
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert_recovered(results, reference)


def test_second_launch_of_a_training_run_names_the_holder_and_exits_3(tmp_path, data, reference, rerun):
    results = tmp_path / "results"
    first = launch(results, data)
    deadline = time.time() + 300
    while time.time() < deadline and not list(results.glob(f"runs/*/{SAMPLER}/seed0/lease.json")):
        time.sleep(0.02)
    second = rerun(results, data)
    first_out, _ = first.communicate(timeout=600)
    assert first.returncode == 0, first_out
    if "skipping:" not in second.stdout:  # it looked after the first had finished
        assert second.returncode == 0, second.stdout + second.stderr
    else:
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"is being trained by {os.uname().nodename} pid {first.pid} since " in second.stdout
        assert f"  busy         bfashion/smoke/{SAMPLER}/seed0  trained by " in second.stdout
        assert "kimg" not in second.stdout.replace("ETA", "")  # it printed no training progress
    assert "kimg 0.5/0.5" in first_out
    assert_recovered(results, reference)


def test_truncated_newest_checkpoint_is_skipped_and_rerun_matches(killed, tmp_path, data, reference, rerun):
    results = damaged_copy(killed, tmp_path)
    newest = list_checkpoints(run_dir_of(results) / "checkpoints")[-1]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 3])
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"skipping unreadable checkpoint {newest}" in again.stdout
    assert_recovered(results, reference)


def test_torn_last_jsonl_lines_are_dropped_and_rerun_matches(killed, tmp_path, data, reference, rerun):
    results = damaged_copy(killed, tmp_path)
    folder = run_dir_of(results)
    for name in ("stats.jsonl", "sampler.jsonl", "records.jsonl"):
        with open(folder / name, "a") as handle:
            handle.write('{"nimg": 99999, "kimg": 99.9, "loss": 1.')  # a kill mid-append
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert_recovered(results, reference)


def test_corrupted_run_json_is_recorded_again_and_rerun_matches(killed, tmp_path, data, reference, rerun):
    results = damaged_copy(killed, tmp_path)
    (run_dir_of(results) / "run.json").write_text('{"status": "runn')
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is not a JSON object" in again.stderr
    assert_recovered(results, reference)


JSONL_FILES = ("records.jsonl", "stats.jsonl", "sampler.jsonl")
LAST_LINES = {
    "invalid UTF-8": b'{"nimg": 99999, "kimg": 99.9, "loss": "\xff\xfe\xfd"}',
    "a 5000-digit number": b'{"nimg": ' + b"9" * 5000 + b"}",
    "a JSON array": b'[{"nimg": 99999, "kimg": 99.9}]',
}


@pytest.fixture(scope="module")
def fashion_killed(tmp_path_factory, fashion) -> tuple[Path, int]:
    """Real Fashion-MNIST, SIGKILLed after the step that reaches 256 examples, before its evaluation: the
    checkpoint at 160, stats ticks at 128 and 224, no evaluation row yet. (A resume from a checkpoint after
    InfoNoise's first rebuild, at 256, is not yet bit-exact on these data.)"""
    results = tmp_path_factory.mktemp("fashion-killed")
    died = run(results, fashion, fault="step@256")
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    folder = run_dir_of(results)
    assert [r["nimg"] for r in read_jsonl(folder / "stats.jsonl")] == [128, 224]
    assert [p.name for p in list_checkpoints(folder / "checkpoints")] == ["ckpt-000000000160.pt"]
    return results, 256


@pytest.mark.parametrize("kind", sorted(LAST_LINES))
def test_a_last_jsonl_line_of_any_bytes_is_dropped_and_rerun_matches(
    fashion_killed, tmp_path, fashion, fashion_reference, rerun, kind
):
    results = damaged_copy(fashion_killed, tmp_path)
    folder = run_dir_of(results)
    for name in JSONL_FILES:  # records.jsonl: the torn line alone
        with open(folder / name, "ab") as handle:
            handle.write(LAST_LINES[kind])
    again = rerun(results, fashion)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is not a record" not in again.stderr  # a torn last line is dropped silently
    assert_recovered(results, fashion_reference)
    reference = run_dir_of(fashion_reference)
    counts = {name: len((folder / name).read_bytes().splitlines()) for name in JSONL_FILES}
    assert counts == {name: len((reference / name).read_bytes().splitlines()) for name in JSONL_FILES}
    assert counts["records.jsonl"] == 2 and counts["stats.jsonl"] == 5  # 2 evaluation points, 5 ticks


def test_a_symlinked_records_jsonl_is_not_followed_and_the_rerun_names_it(
    fashion_killed, tmp_path, fashion, rerun
):
    results = damaged_copy(fashion_killed, tmp_path)
    link = run_dir_of(results) / "records.jsonl"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"nimg": 256, "metric": "fid", "value": 1.0}\n')  # another run's records
    link.symlink_to(outside)
    before = outside.read_bytes()
    again = rerun(results, fashion)
    assert again.returncode == 1, again.stdout + again.stderr
    refusal = f"{link} is a symbolic link (to {outside})"
    assert refusal in again.stderr and "Traceback" not in again.stderr  # one line; --debug prints the rest
    assert refusal in json.loads((link.parent / "run.json").read_text())["error"]
    assert outside.read_bytes() == before and link.is_symlink()


def test_a_linked_checkpoints_folder_is_refused_and_what_it_reaches_is_untouched(
    fashion_killed, tmp_path, fashion, rerun
):
    results = damaged_copy(fashion_killed, tmp_path)
    linked = run_dir_of(results) / "checkpoints"
    elsewhere = tmp_path / "elsewhere"
    shutil.move(linked, elsewhere)
    (elsewhere / ".ckpt-000000000999.pt.abcdefgh.tmp").write_bytes(b"another writer's")  # a clean-up name
    shutil.copyfile(elsewhere / "ckpt-000000000160.pt", elsewhere / "ckpt-000000000001.pt")  # prunable
    linked.symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    assert len(before) == 3
    again = rerun(results, fashion)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"{linked} is a symbolic link (to {elsewhere})" in again.stderr
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def test_a_corrupted_middle_record_and_a_short_done_run_are_reported_never_averaged_in_silently(
    fashion_reference, tmp_path, here
):
    """Seed 0: its first evaluation row (not the last line) gets an invalid byte. Seed 1, a copy: its
    records and stats stop one evaluation and one tick short of the budget while run.json says done."""
    from suite.records import RunDirectory, write_jsonl

    results = tmp_path / "results"
    shutil.copytree(fashion_reference, results)
    shutil.rmtree(run_dir_of(results, FIXED).parent)  # the InfoNoise runs alone
    corrupted = run_dir_of(results)
    short = corrupted.parent / "seed1"
    shutil.copytree(corrupted, short)
    RunDirectory(short).update(seed=1)
    write_jsonl(short / "records.jsonl", read_jsonl(short / "records.jsonl")[:1])
    write_jsonl(short / "stats.jsonl", read_jsonl(short / "stats.jsonl")[:-1])
    lines = (corrupted / "records.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    (corrupted / "records.jsonl").write_bytes(lines[0].replace(b'"metric"', b'"m\xffetric"') + lines[1])
    metric = read_jsonl(short / "records.jsonl")[0]["metric"]
    missing = f"{metric}: no row at kimg {{}} of 2 evaluation points"
    why = {
        corrupted: "records.jsonl line(s) 1 unreadable; " + missing.format("0.256"),
        short: missing.format("0.48") + "; stats stop at kimg 0.416 of 0.48",
    }
    warning = f"warning: {corrupted / 'records.jsonl'} line 1 is not a record (invalid UTF-8"

    status = here("status", "--results", str(results))
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stderr.count(warning) == 1
    assert "2 run(s): 2 done, records incomplete" in status.stdout
    for reason in why.values():
        assert reason[:100] in status.stdout

    table = here("table", "--results", str(results), "--format", "md")
    assert table.returncode == 0, table.stdout + table.stderr
    assert table.stderr.count(warning) == 1
    assert "[records incomplete: 2 of 2 runs]" in table.stdout
    assert "Records incomplete: 2 done run(s)" in table.stdout
    for run_dir, reason in why.items():
        assert f"- {run_dir}: {reason}\n" in table.stdout

    report = here("report", "--results", str(results))
    assert report.returncode == 0, report.stdout + report.stderr
    assert warning in report.stderr
    text = (results / "REPORT.md").read_text()
    assert "[records incomplete: 2 of 2 runs]" in text
    for run_dir, reason in why.items():
        assert f"- {run_dir}: {reason}\n" in text
        assert f"| done, records incomplete ({reason}) |" in text


def test_checkpoint_holding_a_pickled_object_is_refused_naming_the_file(killed, tmp_path, data, rerun):
    results = damaged_copy(killed, tmp_path)
    newest = list_checkpoints(run_dir_of(results) / "checkpoints")[-1]
    state = torch.load(newest, weights_only=True)
    torch.save(state | {"payload": fractions.Fraction(1, 3)}, newest)  # any pickled instance
    again = rerun(results, data)
    assert again.returncode != 0
    assert f"refusing checkpoint {newest}" in again.stdout + again.stderr
    assert "fractions.Fraction" in again.stdout + again.stderr


def test_sigkill_before_the_first_checkpoint_then_rerun_starts_over_without_duplicate_rows(
    tmp_path, fashion, fashion_reference, rerun
):
    results = tmp_path / "results"
    died = run(results, fashion, fault="step@160")  # the step of the first checkpoint, before it is written
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    folder = run_dir_of(results)
    assert list_checkpoints(folder / "checkpoints") == []
    assert row_counts(results) == {"records.jsonl": 0, "stats.jsonl": 1, "sampler.jsonl": 2}
    again = rerun(results, fashion)
    assert again.returncode == 0, again.stdout + again.stderr
    assert row_counts(results) == ROWS
    assert_recovered(results, fashion_reference)


def test_every_checkpoint_truncated_then_rerun_starts_over_without_duplicate_rows(
    tmp_path, fashion, fashion_reference, rerun
):
    results = tmp_path / "results"
    died = run(results, fashion, fault="step@416")
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    checkpoints = list_checkpoints(run_dir_of(results) / "checkpoints")
    assert [p.name for p in checkpoints] == ["ckpt-000000000256.pt", "ckpt-000000000320.pt"]
    for path in checkpoints:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    again = rerun(results, fashion)
    assert again.returncode == 0, again.stdout + again.stderr
    for path in checkpoints:
        assert f"skipping unreadable checkpoint {path}" in again.stdout
    assert row_counts(results) == ROWS
    assert_recovered(results, fashion_reference)


def sampler_state(results: Path) -> dict:
    return torch.load(list_checkpoints(run_dir_of(results) / "checkpoints")[-1], weights_only=True)["sampler"]


@pytest.mark.parametrize("data_set", ["data", "fashion"])
def test_adaptive_sampler_resumes_bit_for_bit_after_sigusr2_past_its_first_rebuild(
    request, tmp_path, rerun, data_set
):
    data = request.getfixturevalue(data_set)
    reference = request.getfixturevalue("reference" if data_set == "data" else "fashion_reference")
    results = tmp_path / "results"
    stopped = run(results, data, fault="step@288:SIGUSR2")  # rebuilds at 256 (the first) and 384
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "stopped by SIGUSR2 at kimg 0.288" in stopped.stdout
    saved = sampler_state(results)
    assert [h["step"] for h in saved["history"] if "cdf_change" in h] == [8] and "density" in saved
    again = rerun(results, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert_recovered(results, reference)
    resumed, uninterrupted = sampler_state(results), sampler_state(reference)
    assert resumed["history"][-1]["cdf_change"] == uninterrupted["history"][-1]["cdf_change"]
    for name, table in uninterrupted["density"].items():
        assert torch.equal(resumed["density"][name], table), name
    totals = [
        (0.5 * (d["left"] + d["right"]) * d["nodes"].diff()).sum().item()
        for d in (resumed["density"], uninterrupted["density"])
    ]
    assert totals[0] == totals[1]


def test_sigterm_during_imports_stops_the_launch_before_any_run(tmp_path, data):
    results = tmp_path / "results"
    proc = launch(results, data)
    wait_for(proc, lambda: handles(proc.pid, signal.SIGTERM), "the stop handlers installed")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert_stopped_cleanly(out, proc.returncode, results)
    # the stop lands while the launch plans (since a stop is honoured there too) or just before the first run
    assert (
        "stopped by SIGTERM while planning bfashion; re-run the command to resume" in out
        or f"stopped by SIGTERM before bfashion/smoke/{SAMPLER}/seed0" in out
    ), out
    assert not (results / "runs").exists()  # no run started


def test_a_second_sigint_aborts_at_once(tmp_path, data):
    results = tmp_path / "results"
    proc = launch(results, data)
    wait_for(proc, lambda: handles(proc.pid, signal.SIGTERM), "the stop handlers installed")
    proc.send_signal(signal.SIGINT)
    first = ""
    for line in proc.stdout:  # until the handler's line: the first request is recorded
        first += line
        if line.startswith("SIGINT: stopping at the next safe point"):
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGINT, first + out
    assert "second stop request (SIGINT): aborting now" in out
    assert not (results / "runs").exists()


def test_sigterm_while_a_run_loads_its_data_stops_before_training_then_rerun_matches(
    tmp_path, fashion, fashion_reference, rerun
):
    results = tmp_path / "results"
    stopped = run(results, fashion, fault="data@0:SIGTERM")
    assert_stopped_cleanly(stopped.stdout + stopped.stderr, stopped.returncode, results)
    assert "stopped by SIGTERM before training" in stopped.stdout
    folder = run_dir_of(results)
    assert json.loads((folder / "run.json").read_text())["status"] == "interrupted"
    assert not (folder / "checkpoints").exists() and not (folder / "stats.jsonl").exists()
    again = rerun(results, fashion)
    assert again.returncode == 0, again.stdout + again.stderr
    assert_recovered(results, fashion_reference)


def test_sigterm_between_the_runs_of_a_two_sampler_launch_then_rerun_matches(
    tmp_path, fashion, fashion_reference, rerun
):
    results = tmp_path / "results"
    proc = launch(results, fashion, sampler=f"{SAMPLER},{FIXED}")

    def first_done() -> bool:
        found = list(results.glob(f"runs/*/{SAMPLER}/seed0/run.json"))
        return bool(found) and '"status": "done"' in found[0].read_text()

    wait_for(proc, first_done, f"the {SAMPLER} run done")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert_stopped_cleanly(out, proc.returncode, results)
    assert "stopped by SIGTERM" in out
    statuses = {p.parent.parent.name: p.read_text() for p in results.glob("runs/*/*/seed0/run.json")}
    assert '"status": "done"' in statuses.pop(SAMPLER) and '"status": "done"' not in statuses.get(FIXED, "")
    again = rerun(results, fashion, sampler=f"{SAMPLER},{FIXED}")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"done already: bfashion/smoke/{SAMPLER}/seed0" in again.stdout
    assert_recovered(results, fashion_reference)
    assert_recovered(results, fashion_reference, FIXED)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_during_an_evaluation_abandons_it_within_the_grace_and_rerun_evaluates_again(
    tmp_path, fashion, slow_evaluation_reference, rerun, stop
):
    results = tmp_path / "results"
    proc = launch(results, fashion, extra=SLOW_EVALUATION)
    point = f"runs/*/{SAMPLER}/seed0/checkpoints/ckpt-000000000256.pt"  # written before that evaluation
    wait_for(proc, lambda: any(results.glob(point)), "the checkpoint of the evaluation point at 256")
    sent = time.monotonic()
    proc.send_signal(stop)
    out, _ = proc.communicate(timeout=300)
    seconds = time.monotonic() - sent
    print(
        f"{stop.name} during the evaluation at kimg 0.256: exit {seconds:.2f} s after it (bound {GRACE_S} s)"
    )
    assert_stopped_cleanly(out, proc.returncode, results)
    assert seconds < GRACE_S
    assert f"stopped by {stop.name} during the evaluation at kimg 0.256, which is abandoned" in out
    folder = run_dir_of(results)
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "interrupted" and info["kimg"] == 0.256
    assert list_checkpoints(folder / "checkpoints")[-1].name == "ckpt-000000000256.pt"
    assert read_jsonl(folder / "records.jsonl") == [] and not (folder / "snapshots").exists()
    again = rerun(results, fashion, extra=SLOW_EVALUATION)
    assert again.returncode == 0, again.stdout + again.stderr
    assert row_counts(results) == ROWS
    assert_recovered(results, slow_evaluation_reference)


def test_dry_run_reports_every_invalid_value_before_training(tmp_path, capsys):
    args = ["run", "--task", "bfashion", "--sampler", "edm", "--results", str(tmp_path), "--dry-run"]
    bad = ["sampler.p_std=-1", "budget.tick_kimg=0", "budget.batch=0", "task.solver=rk4"]
    assert main(args + bad) == 2
    err = capsys.readouterr().err
    assert "4 invalid value(s)" in err
    for text in (
        "p_std must be positive, got -1",
        "budget.tick_kimg=0",
        "budget.batch=0",
        "task.solver='rk4'",
    ):
        assert text in err
    assert not (tmp_path / "runs").exists()


STALE_LIMIT_S = 2.0


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under ``folder``: a file's content and modification time (ns), a folder's
    name. A folder's own modification time is left out: a process stopped inside ``write_atomic`` wakes
    with its temporary file already made, and removing it when the guard refuses the rename changes the
    folder's time but nothing in it."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else (b"", 0)
        for p in [folder, *folder.rglob("*")]
    }


def test_a_holder_stopped_past_the_stale_limit_and_taken_over_writes_nothing_when_it_wakes(
    tmp_path, fashion, fashion_reference, rerun
):
    """SIGSTOP a training process, let a launch on another host take its lease over and finish the run,
    SIGCONT it: it must stop at its next write, leaving the finished folder as it was."""
    results = tmp_path / "results"
    stale_limit = {"SUITE_LEASE_TIMEOUT": str(STALE_LIMIT_S)}
    holder = subprocess.Popen(
        command(results, fashion),
        env=cli_env(**stale_limit),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not list(results.glob(f"runs/*/{SAMPLER}/seed0/checkpoints/ckpt-*")):
            time.sleep(0.02)
        holder.send_signal(signal.SIGSTOP)  # while it trains on, past its first checkpoint
        folder = run_dir_of(results)
        assert json.loads((folder / "run.json").read_text())["status"] == "running"
        time.sleep(STALE_LIMIT_S + 0.5)
        takeover = rerun(results, fashion, env=stale_limit | {"SUITE_HOSTNAME": "node-b"})
        assert takeover.returncode == 0, takeover.stdout + takeover.stderr
        assert (
            f"took over the stale lease of {os.uname().nodename} pid {holder.pid} since " in takeover.stdout
        )
        assert_recovered(results, fashion_reference)
        finished = folder_state(folder)
    except BaseException:
        holder.kill()
        holder.communicate()
        raise
    holder.send_signal(signal.SIGCONT)
    out, _ = holder.communicate(timeout=300)
    assert holder.returncode == 3, out
    assert f"stopping: lost the lease of {folder} (lease.json is gone)" in out
    assert f"  lease lost   bfashion/smoke/{SAMPLER}/seed0  lease.json is gone" in out
    assert folder_state(folder) == finished


def plant_lease(run_dir: Path, heartbeat: float, **changes) -> None:
    """A lease record of another process, as its take-over would have left it, heartbeat at ``heartbeat``."""
    from suite.lease import LEASE_FILE, Holder

    holder = dataclasses.replace(Holder.of_this_process(), **changes)
    planted = run_dir / "planted"
    planted.write_bytes(holder.to_bytes())
    os.utime(planted, (heartbeat, heartbeat))
    os.replace(planted, run_dir / LEASE_FILE)


def test_a_lease_whose_heartbeat_is_years_ahead_is_reported_with_its_skew_and_taken_over(
    fashion_killed, tmp_path, fashion, fashion_reference, rerun
):
    """A killed run whose lease names another host with a heartbeat in 2100: the re-run reports the skew,
    watches the heartbeat for one stale limit, takes the lease over and ends as the uninterrupted run."""
    results = damaged_copy(fashion_killed, tmp_path)
    plant_lease(run_dir_of(results), heartbeat=4102444800.0, host="node-b", pid=4242, start_ticks=None)
    again = rerun(results, fashion, env={"SUITE_LEASE_TIMEOUT": "2"})
    assert again.returncode == 0, again.stdout + again.stderr
    assert "clock skew" in again.stdout and "node-b pid 4242" in again.stdout, again.stdout
    assert_recovered(results, fashion_reference)
    assert row_counts(results) == ROWS


def test_a_lease_of_pid_1_without_a_start_time_is_broken_by_suite_lease_break_and_rerun_matches(
    fashion_killed, tmp_path, fashion, fashion_reference, rerun, here
):
    """A lease naming pid 1 of this host and no start time (so its process cannot be judged gone): a launch
    is refused as busy (exit 3) and writes nothing; ``suite lease break`` removes it; the re-run matches."""
    results = damaged_copy(fashion_killed, tmp_path)
    folder = run_dir_of(results)
    plant_lease(folder, heartbeat=time.time(), pid=1, start_ticks=None)
    before = sorted((p.name, p.stat().st_size) for p in folder.rglob("*") if p.is_file())
    busy = rerun(results, fashion)
    assert busy.returncode == 3 and "busy" in busy.stdout, busy.stdout + busy.stderr
    assert sorted((p.name, p.stat().st_size) for p in folder.rglob("*") if p.is_file()) == before
    broken = here("lease", "break", "--force", str(folder))
    assert broken.returncode == 0 and "pid 1" in broken.stdout, broken.stdout + broken.stderr
    again = rerun(results, fashion)
    assert again.returncode == 0, again.stdout + again.stderr
    assert_recovered(results, fashion_reference)
    assert row_counts(results) == ROWS
