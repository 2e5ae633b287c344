"""Watching a run (``suite.watch``): the ETA across days, the evaluation lines and closing summary of a
launch, ``log.txt`` across a resume, TensorBoard event files read back with TensorBoard's own reader, the W&B
offline run continued under the same id after a requeue, the sample grid of every evaluation point and
``suite samples`` reproducing it from the snapshot, and ``suite status``'s ETA and last-metric columns.

One EDM run of bfashion at a tiny budget with ``watch=[tensorboard,wandb]`` (W&B offline) is SIGKILLed after
the step past its checkpoint at 320 examples (``SUITE_FAULT``), inspected, then re-run to the end.
"""

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from datagen import write_mnist_format
from subprocesses import cli_command, cli_env
from test_faults import BUDGET  # the fault tests' tiny run: 15 steps, checkpoints at 160, 256, 320, 480

from suite.config import compose_run
from suite.lease import Lease
from suite.records import read_jsonl
from suite.status import collect
from suite.watch import check_watchers, format_eta, save_samples, wandb_run_id

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


def test_eta_of_33_hours_reads_one_day_and_nine_hours():
    assert format_eta(33 * 3600) == "1d 09:00:00"
    assert format_eta(86399) == "23:59:59"
    assert format_eta(2 * 86400 + 61.4) == "2d 00:01:01"


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


def test_a_logger_whose_package_is_missing_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # what `import wandb` meets where it is not installed
    with pytest.raises(ValueError) as err:
        check_watchers(["wandb"])
    assert str(err.value) == (
        "watch: wandb asked for, but its package is not installed (import of wandb halted; None in "
        "sys.modules); install it with `pip install -r requirements-watch.txt` or drop wandb from watch"
    )


def test_decoded_sequences_and_points_are_saved_as_text_and_other_outputs_are_refused_naming_them(tmp_path):
    import torch

    from suite.task import TASKS

    dna = TASKS.get("dna")(compose_run("dna", "edm", "smoke").task)
    decoded = dna.decode(torch.randn(3, *dna.sample_shape, generator=torch.Generator().manual_seed(0)), None)
    path = save_samples(tmp_path, 1280, decoded)
    assert path == tmp_path / "samples-000000001280.txt"
    blocks = re.split(r"^# sample \d+\n", path.read_text(), flags=re.M)
    assert blocks[0] == "" and [block.rstrip("\n") for block in blocks[1:]] == decoded
    assert set("".join(decoded)) <= set("ACGT") and len(decoded[0]) == dna.sample_shape[-1]
    points = save_samples(tmp_path, 64, torch.tensor([[0.5, -1.25], [3.0, 1e-7]]))
    assert points.read_text() == "0.5 -1.25\n3 1e-07\n"
    with pytest.raises(ValueError) as err:
        save_samples(tmp_path, 64, {"x": 1})
    assert str(err.value) == (
        "cannot save decoded samples of type dict: a task's decode must give uint8 images [N, C, H, W], a "
        "list of strings or a tensor of samples"
    )


def test_progress_bars_are_drawn_only_where_asked_or_watched_at_a_terminal_outside_slurm(monkeypatch, capsys):
    from suite.watch import progress

    monkeypatch.setenv("SUITE_PROGRESS", "1")
    assert list(progress(range(3), total=3, desc="generating", unit="batch")) == [0, 1, 2]
    assert "generating:   0%|          | 0/3 [" in capsys.readouterr().err  # tqdm's bar, on stderr
    monkeypatch.delenv("SUITE_PROGRESS")
    monkeypatch.setenv("SLURM_JOB_ID", "12")
    assert list(progress(range(3), total=3, desc="generating")) == [0, 1, 2]
    assert capsys.readouterr().err == ""  # a SLURM job's log gets no bar (nor does any non-terminal)


def raw_steps(folder: Path) -> list[tuple[str, int]]:
    """(tag, step) of every scalar in the raw event files of ``folder``, as written (no reader's purging)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    found = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            found += [(value.tag, event.step) for value in event.summary.value]
    return found


@pytest.mark.parametrize("restored", [0, 64])
def test_a_restart_leaves_no_step_twice_in_the_raw_tensorboard_event_files(tmp_path, restored):
    """A restart from scratch (0) or from a checkpoint (64) logs again what an earlier attempt logged past
    its restored point; the raw files then hold each step once, the earlier attempt's up to that point."""
    from suite.watch import Watchers

    first = Watchers(["tensorboard"], tmp_path, "edm", {}, 0)
    for nimg in (32, 64, 96):
        first.log(nimg, {"train/loss": 1.0})
    first.close()
    again = Watchers(["tensorboard"], tmp_path, "edm", {}, restored)
    for nimg in (32, 64, 96, 128):
        if nimg > restored:
            again.log(nimg, {"train/loss": 2.0})
    again.close()
    steps = raw_steps(tmp_path / "tensorboard")
    assert sorted(steps) == [("train/loss", n) for n in (32, 64, 96, 128)]


def test_a_preview_that_cannot_be_written_is_reported_in_one_line_and_the_run_goes_on(tmp_path, capsys):
    """A write the kernel refuses (the file-size limit: EFBIG, as a full disk gives ENOSPC) of the PNG."""
    import resource

    import torch

    from suite.watch import save_preview

    images = torch.randint(
        0, 256, (16, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (512, hard))
    try:
        assert save_preview(tmp_path / "samples", 256, images) is None
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    out = capsys.readouterr().out
    assert out.startswith(f"warning: samples at kimg 0.256 not saved in {tmp_path / 'samples'}: OSError: ")
    assert out.count("\n") == 1 and "File too large" in out
    assert list((tmp_path / "samples").iterdir()) == []  # neither the PNG nor a temporary file
    assert (
        save_preview(tmp_path / "samples", 256, images) == tmp_path / "samples" / "samples-000000000256.png"
    )
