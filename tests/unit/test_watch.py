"""Watching a run in-process (``suite.watch``): the ETA across days, a missing logger package named with what
to install, which outputs are saved as text, where progress bars are drawn, no step twice in TensorBoard's
raw event files after a restart, and a preview that cannot be written reported in one line."""

import re
import signal
import sys
from pathlib import Path

import pytest

from suite.config import compose_run
from suite.watch import check_watchers, format_eta, save_samples


def test_eta_of_33_hours_reads_one_day_and_nine_hours():
    assert format_eta(33 * 3600) == "1d 09:00:00"
    assert format_eta(86399) == "23:59:59"
    assert format_eta(2 * 86400 + 61.4) == "2d 00:01:01"


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
