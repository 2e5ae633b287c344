"""Watching a launch (``suite.watch``): the evaluation lines and closing summary of a launch, ``log.txt``
across a resume, TensorBoard event files read back with TensorBoard's own reader, the W&B offline run
continued under the same id after a requeue, the sample grid of every evaluation point and ``suite samples``
reproducing it from the snapshot, and ``suite status``'s ETA and last-metric columns.

One EDM run of bfashion at a tiny budget with ``watch=[tensorboard,wandb]`` (W&B offline) is SIGKILLed after
the step past its checkpoint at 320 examples (``SUITE_FAULT``), inspected, then re-run to the end."""

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from suite.lease import Lease
from suite.records import read_jsonl
from suite.report.status import collect
from suite.watch import format_eta, wandb_run_id
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env
from tests.integration.test_faults import (
    BUDGET,  # the fault tests' tiny run: 15 steps, checkpoints at 160, 256, 320, 480
)

KILLED_AT = 352  # the step after the checkpoint at 320: the re-run resumes there

TICKS = [128, 224, 320, 416, 480]

EVALUATIONS = [256, 480]


def launch(results: Path, data: Path, home: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    argv = ["run", "--task", "bfashion", "--sampler", "edm", "--results", str(results), f"task.root={data}"]
    env = cli_env(
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_CONFIG_DIR=str(home),
        WANDB_CACHE_DIR=str(home),
        WANDB_DATA_DIR=str(home),
        **({"SUITE_FAULT": f"step@{fault}"} if fault else {}),
    )
    command = cli_command(*argv, *BUDGET, "watch=[tensorboard,wandb]")
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def watched(tmp_path_factory) -> dict:
    """The killed run's folder (copied aside), the finished run's folder and both launches' output."""
    pytest.importorskip("tensorboard", reason="pip install -r requirements-watch.txt")
    pytest.importorskip("wandb", reason="pip install -r requirements-watch.txt")
    root = tmp_path_factory.mktemp("watched")
    data, results, home = write_mnist_format(root / "data"), root / "results", root / "home"
    killed = launch(results, data, home, fault=str(KILLED_AT))
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    (run_dir,) = results.glob("runs/*/edm/seed0")
    shutil.copytree(results, root / "killed")
    done = launch(results, data, home)
    assert done.returncode == 0, done.stdout + done.stderr
    (killed_dir,) = (root / "killed").glob("runs/*/edm/seed0")
    return {"run": run_dir, "killed": killed_dir, "first": killed, "second": done, "root": root}


def test_log_txt_holds_what_both_attempts_printed_appended_across_the_resume(watched):
    log = (watched["run"] / "log.txt").read_text()
    header = r"^== \d{4}-\d\d-\d\dT\S+ \S+ pid \d+\n"
    attempts = re.split(header, log, flags=re.M)
    assert attempts[0] == "" and len(attempts) == 3  # one header per attempt, the first at the top
    for launch_out, text in zip((watched["first"], watched["second"]), attempts[1:], strict=True):
        printed = [line for line in launch_out.stdout.splitlines() if line.startswith("[bfashion/")]
        assert printed and printed == [line for line in text.splitlines() if line.startswith("[bfashion/")]
    assert [int(float(k) * 1000) for k in re.findall(r"\] eval kimg ([\d.]+) ", log)] == EVALUATIONS


def test_each_evaluation_prints_value_samples_references_grid_and_seconds(watched):
    rows = read_jsonl(watched["run"] / "records.jsonl")
    out = watched["first"].stdout + watched["second"].stdout
    for row in rows:
        line = (
            f"eval kimg {row['kimg']:g}  fd-rand-test {row['value']:.6g}  (32 samples, 64 references, "
            f"grid karras 3 steps, NFE 5, {row['eval_seconds']:.1f} s)"
        )
        assert line in out


def test_the_launch_closes_with_counts_final_values_and_the_next_command(watched):
    final = read_jsonl(watched["run"] / "records.jsonl")[-1]
    lines = watched["second"].stdout.splitlines()
    at = lines.index("1 run(s): 1 done")
    assert (
        lines[at + 1]
        == f"  done         bfashion/smoke/edm/seed0  fd-rand-test {final['value']:.6g} @ kimg 0.48"
    )
    assert lines[at + 2].startswith(f"next: suite table --results {watched['run'].parents[3]}")


def test_tensorboard_event_files_read_back_equal_the_stats_and_records(watched):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(watched["run"] / "tensorboard"))
    events.Reload()
    loss = [(e.step, e.value) for e in events.Scalars("train/loss")]
    stats = read_jsonl(watched["run"] / "stats.jsonl")
    assert [step for step, _ in loss] == TICKS  # the killed attempt's tick at 320 kept once, none later
    assert [value for _, value in loss] == pytest.approx([r["loss"] for r in stats], rel=1e-6)
    fid = [(e.step, e.value) for e in events.Scalars("eval/fd-rand-test")]
    rows = read_jsonl(watched["run"] / "records.jsonl")
    assert fid == [(r["nimg"], pytest.approx(r["value"], rel=1e-6)) for r in rows]


def test_wandb_offline_runs_of_both_attempts_share_the_id_derived_from_the_run_folder(watched):
    folders = sorted((watched["run"] / "wandb").glob("offline-run-*"))
    assert len(folders) == 2
    expected = wandb_run_id(watched["run"])
    assert all(folder.name.endswith(f"-{expected}") for folder in folders), folders


def test_a_sample_grid_is_saved_at_every_evaluation_point_and_suite_samples_reproduces_it(watched, tmp_path):
    from PIL import Image

    saved = sorted((watched["run"] / "samples").iterdir())
    assert [p.name for p in saved] == [f"samples-{n:012d}.png" for n in EVALUATIONS]
    assert Image.open(saved[-1]).size == (8 * 30 + 2, 4 * 30 + 2)  # 32 images of 28 px, 8 a row, 2 px padding
    out = subprocess.run(
        cli_command("samples", str(watched["run"]), "--kimg", "0.48", "--out", str(tmp_path), "--n", "32"),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / saved[-1].name).read_bytes() == saved[-1].read_bytes()


def test_status_shows_a_running_runs_eta_and_every_runs_last_metric(watched):
    killed = watched["killed"]
    info = json.loads((killed / "run.json").read_text())
    last_tick = read_jsonl(killed / "stats.jsonl")[-1]
    with Lease(killed):  # a live holder: the run counts as running
        table = collect(watched["root"] / "killed")
    (row,) = table.to_dict("records")
    assert row["status"] == "running"
    assert row["eta"] == format_eta((info["total_kimg"] - last_tick["kimg"]) * last_tick["sec_per_kimg"])
    first = read_jsonl(killed / "records.jsonl")[-1]
    assert row["last metric"] == f"fd-rand-test {first['value']:.4g} @0.256"
    (done,) = collect(watched["run"].parents[3]).to_dict("records")
    final = read_jsonl(watched["run"] / "records.jsonl")[-1]
    assert (done["status"], done["eta"], done["last metric"]) == (
        "done",
        "-",
        f"fd-rand-test {final['value']:.4g} @0.48",
    )
