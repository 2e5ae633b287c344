"""The preflight of ``suite run`` (``suite/launch/preflight.py``) and the command line's exit codes.

Each cause a launch would meet is refused before anything runs, with its exact one-line message: a missing
CIFAR-10 folder, a truncated CIFAR-10 batch or tarball, a corrupted or truncated IDX file (named once), an
unwritable results folder, an adaptive sampler's warm-up as long as the run, a SLURM profile whose jobs and
requeues cover less than the planned hours, an override that contradicts its flag (``results=`` as ``task=``),
and an unprepared DNA folder (one cause) or its missing Sei files (each once). The data are the tasks' example
files in their real formats; the exit codes are 0, 1 (an unexpected error, one line, its traceback with
``--debug``) and 2.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from infonoise_modalities.image.idx import write_example_mnist
from suite.cli import main


def launch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``suite ARGV`` in this process: exit status, stdout, stderr."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def fashion_args(results: Path, root: Path, *more: str) -> list[str]:
    return [
        "run",
        "--task",
        "fashion",
        "--sampler",
        "edm",
        "--results",
        str(results),
        f"task.root={root}",
        *more,
    ]


@pytest.fixture
def fashion_root(tmp_path: Path) -> Path:
    return write_example_mnist(tmp_path / "fashion", 256)


def test_a_missing_cifar10_folder_is_refused_in_one_line_naming_it(tmp_path, capsys):
    root = tmp_path / "cifar"
    args = [
        "run",
        "--task",
        "cifar10",
        "--sampler",
        "edm",
        "--results",
        str(tmp_path / "r"),
        f"task.root={root}",
    ]
    code, _, err = launch(capsys, *args, "--dry-run")
    assert code == 2
    assert err.splitlines() == [
        f"error: task cifar10: task.root={root}: {root} does not exist; point task.root at "
        "cifar-10-python.tar.gz (https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz) or the folder "
        "cifar-10-batches-py/ extracted from it, or drop task.root to use the default locations"
    ]


def test_cifar10_absent_from_every_default_place_is_refused_without_the_stand_in(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("SUITE_DATA", str(tmp_path / "cache"))
    args = ["run", "--task", "cifar10", "--sampler", "edm", "--results", str(tmp_path / "r")]
    code, _, err = launch(capsys, *args, "budget.allow_stand_in=false", "--dry-run")
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(
        f"error: task cifar10: CIFAR-10 not found (no task.root; nothing in {tmp_path}/cache/"
        "cifar-10-batches-py)."
    )


@pytest.mark.parametrize("layout", ["folder", "tarball"])
def test_a_truncated_cifar10_source_is_refused_in_one_line_naming_the_file(tmp_path, capsys, layout):
    import numpy as np

    from infonoise_modalities.image.formats import write_cifar10

    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (50, 3, 32, 32), dtype=np.uint8), rng.integers(0, 10, 50)
    source = write_cifar10(
        tmp_path / ("cifar" if layout == "folder" else "c.tar.gz"), images, labels, layout == "tarball"
    )
    damaged = source / "data_batch_3" if layout == "folder" else source
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    args = ["run", "--task", "cifar10", "--sampler", "edm", "--results", str(tmp_path / "r"), "--dry-run"]
    code, _, err = launch(capsys, *args, f"task.root={source}")
    assert code == 2 and len(err.splitlines()) == 1 and err.count(str(damaged)) == 1
    what = "is not a whole CIFAR python batch" if layout == "folder" else "is not a readable gzipped tarball"
    assert err.startswith(f"error: task cifar10: {damaged} {what} (truncated or corrupt?)")


def corrupt_middle(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    for i in range(len(raw) // 2, len(raw) // 2 + 16):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def truncate_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("damage", [corrupt_middle, truncate_half])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_damaged_gzip_is_refused_naming_its_file_once(tmp_path, fashion_root, capsys, damage, dry_run):
    images = fashion_root / "train-images-idx3-ubyte.gz"
    damage(images)
    with pytest.raises((OSError, EOFError)):  # the damage is real: gzip cannot read the file to its end
        gzip.decompress(images.read_bytes())
    results = tmp_path / "r"
    code, _, err = launch(capsys, *fashion_args(results, fashion_root, *(["--dry-run"] if dry_run else [])))
    assert code == 2
    assert len(err.splitlines()) == 1 and err.count(str(images)) == 1
    assert err.startswith(
        f"error: task fashion: {images} is not a readable gzip file (truncated or corrupt?): "
    )
    assert not results.exists()  # nothing ran, nothing was written


def test_an_idx_file_shorter_than_its_header_says_is_refused_with_both_sizes(tmp_path, capsys):
    root = write_example_mnist(tmp_path / "plain", 256, gz=False)
    labels = root / "train-labels-idx1-ubyte"
    labels.write_bytes(labels.read_bytes()[:-6])
    code, _, err = launch(capsys, *fashion_args(tmp_path / "r", root, "--dry-run"))
    assert code == 2
    assert err.splitlines() == [
        f"error: task fashion: {labels}: its IDX header says (256,) (256 bytes) but it holds 250 bytes"
    ]


def test_a_results_folder_under_a_file_is_refused_in_one_line(tmp_path, fashion_root, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    results = blocker / "results"
    code, _, err = launch(capsys, *fashion_args(results, fashion_root, "--dry-run"))
    assert code == 2
    assert err.splitlines() == [
        f"error: --results {results}: {blocker} is a file, not a folder; pass --results a writable folder"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_results_folder_is_refused_in_one_line(tmp_path, fashion_root, capsys):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    results = folder / "results"
    code, _, err = launch(capsys, *fashion_args(results, fashion_root, "--dry-run"))
    assert code == 2
    assert err.splitlines() == [
        f"error: --results {results}: cannot write in {folder} (Permission denied); pass --results a "
        "writable folder"
    ]


def test_a_warmup_as_long_as_the_run_is_refused_and_one_step_shorter_is_not(tmp_path, fashion_root, capsys):
    # budget.kimg=1 at the smoke batch of 64: ceil(1000 / 64) = 16 training steps
    results = tmp_path / "r"
    args = ["run", "--task", "fashion", "--sampler", "infonoise", "--results", str(results), "--dry-run"]
    args += [f"task.root={fashion_root}", "budget.kimg=1"]
    code, _, err = launch(capsys, *args, "budget.adaptive.warmup_steps=16")
    assert code == 2
    assert err.splitlines() == [
        "error: sampler infonoise: its warm-up of 16 steps is not shorter than the run's 16 training steps "
        "(budget.kimg=1 at budget.batch=64), so it would train as its base sampler throughout; set "
        "budget.adaptive.warmup_steps below 16 or raise budget.kimg"
    ]
    code, out, err = launch(capsys, *args, "budget.adaptive.warmup_steps=15")
    assert code == 0, err
    assert "fashion/smoke/infonoise/seed0" in out


def test_a_slurm_profile_shorter_than_the_plan_is_refused_and_a_longer_one_prints_its_arrays(
    tmp_path, fashion_root, capsys
):
    from suite.launch.cost import planned_cost
    from suite.launch.plan import plan_runs

    results = tmp_path / "r"
    args = [*fashion_args(results, fashion_root, "--budget", "paper", "--launcher", "slurm", "--dry-run")]
    spec = plan_runs("fashion", "edm", "paper", 1, results, [f"task.root={fashion_root}"])[0].spec
    planned = planned_cost(spec)["device_hours"]
    assert 11 < planned < 1440 / 60 * 11  # between the local profile's 60 min × 11 jobs and 1440 min × 11
    code, _, err = launch(capsys, *args)
    assert code == 2
    assert err.splitlines() == [
        "error: profile local: jobs of 60 min with 10 requeues cover 11 h, but a run of fashion at budget "
        f"paper is planned at {planned:.3g} h (1 device(s) at suite.launch.cost's rate); raise --time or the "
        "profile's max_requeues, or pick another --profile"
    ]
    code, out, err = launch(capsys, *args, "--time", "1440")
    assert code == 0, err
    assert "SLURM job arrays (profile local, MaxArraySize " in out
    assert "1 run(s) of fashion (default partition, 0 GPU(s), 1 CPU(s)/task, 2 GB, 1440 min)" in out


def test_an_override_contradicting_its_flag_is_refused_and_one_alone_stands_for_the_flag(
    tmp_path, fashion_root, capsys
):
    code, _, err = launch(capsys, *fashion_args(tmp_path / "r", fashion_root, "sampler=cos", "--dry-run"))
    assert code == 2
    assert err.splitlines() == [
        "error: the override sampler=cos contradicts --sampler edm; choose the sampler once "
        "(--sampler cos or --sampler edm)"
    ]
    args = ["run", "--task", "fashion", "--results", str(tmp_path / "r"), f"task.root={fashion_root}"]
    code, out, err = launch(capsys, *args, "sampler=cos", "budget=smoke", "--dry-run")
    assert code == 0, err
    assert "1 run(s):" in out and "fashion/smoke/cos/seed0" in out


def test_a_results_override_is_the_results_folder_of_the_runs(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("")  # the default folder unwritable too: nothing trains either way
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code, _, err = launch(capsys, "run", "--task", "ring2d", "--sampler", "edm", f"results={blocked / 'sub'}")
    assert code == 2
    (line,) = err.splitlines()  # the preflight reads the override's folder, not results/
    assert line.startswith(f"error: --results {blocked / 'sub'}: {blocked} is a file")


def test_a_results_override_contradicting_the_flag_is_refused_naming_both(tmp_path: Path, capsys):
    argv = ["run", "--task", "ring2d", "--results", str(tmp_path / "a"), f"results={tmp_path / 'b'}"]
    code, _, err = launch(capsys, *argv)
    assert code == 2
    (line,) = err.splitlines()
    assert f"results={tmp_path / 'b'} contradicts --results {tmp_path / 'a'}" in line


def test_help_documents_the_exit_codes_and_debug(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for part in (
        "--debug",
        "exit status: 0 done (every run done), 1 a run failed",
        "2 a usage or config error",
        "3 a run left to the process that holds its lease, 130 interrupted",
    ):
        assert part in text


def test_a_usage_error_is_one_line_with_exit_2_and_its_traceback_only_with_debug(capsys):
    code, _, err = launch(capsys, "run", "--task", "cifar99", "--dry-run")
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: unknown task 'cifar99'")
    code, _, debug = launch(capsys, "run", "--task", "cifar99", "--dry-run", "--debug")
    assert code == 2 and "Traceback (most recent call last)" in debug and debug.endswith(err)


def test_an_unexpected_error_is_one_line_with_exit_1_and_its_traceback_only_with_debug(tmp_path, capsys):
    target = tmp_path / "figure.png"
    target.mkdir()  # the figure's path is a folder: the save fails with IsADirectoryError
    code, _, err = launch(capsys, "samplers", "--plot", str(target))
    assert code == 1
    assert err.splitlines() == [
        f"error: IsADirectoryError: [Errno 21] Is a directory: '{target}'; add --debug for the traceback"
    ]
    code, _, err = launch(capsys, "--debug", "samplers", "--plot", str(target))
    assert code == 1 and "Traceback (most recent call last)" in err
    assert err.splitlines()[-1] == f"error: IsADirectoryError: [Errno 21] Is a directory: '{target}'"


def test_an_unprepared_dna_folder_is_one_cause_and_each_missing_sei_file_is_named_once(tmp_path, capsys):
    root = tmp_path / "dna"
    root.mkdir()
    args = ["run", "--task", "dna", "--sampler", "edm", "--budget", "short", "--results", str(tmp_path / "r")]
    args += ["--dry-run", f"task.root={root}"]
    code, _, err = launch(capsys, *args)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(
        f"error: task dna: task.root={root}: {root} lacks promoters.json, sequences.npy, signal.npy, "
        "windows.npz."
    )
    for name in ("promoters.json", "sequences.npy", "signal.npy", "windows.npz"):
        (root / name).write_bytes(b"")
    code, _, err = launch(capsys, *args)
    assert code == 2
    lines = err.splitlines()
    assert [line.split(" not found.")[0] for line in lines] == [
        f"error: task dna: Sei file {root}/best.sei.model.pth.tar",  # read by sei-fid and sp-mse: said once
        f"error: task dna: Sei file {root}/target.sei.names",
    ]


def test_a_paper_or_short_owt_launch_warns_that_its_guidance_scale_is_provisional(tmp_path):
    from suite.launch.plan import plan_runs
    from suite.launch.preflight import provisional_guidance

    def warnings(task, samplers, budget, *overrides):
        return provisional_guidance(plan_runs(task, samplers, budget, 1, tmp_path, list(overrides)))

    (line,) = warnings("owt", "edm,cos", "paper")  # one line per task, not per sampler
    assert line.startswith(
        "warning: owt at budget paper is scored at classifier-free guidance 2, provisional:"
    )
    assert "suite guidance RUN" in line
    assert len(warnings("owt", "edm", "short")) == 1
    assert warnings("owt", "edm", "smoke") == warnings("owt", "edm", "paper", "budget.eval.guidance=1") == []
    assert warnings("cifar10", "edm", "paper") == []
