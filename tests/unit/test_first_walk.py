"""A new user's first commands: a dry-run plans and prices runs even where the data are missing (then lists
what is missing and exits 2), says how long the runs would take on this machine, prints one config and the
differences of the others; and each mistake of the walk gets one error line and a non-zero exit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from infonoise_modalities.image.idx import write_example_mnist
from suite.cli import main
from tests.unit.test_preflight import fashion_args, launch


@pytest.fixture
def fashion_root(tmp_path: Path) -> Path:
    return write_example_mnist(tmp_path / "fashion", 256)


def test_a_dry_run_without_the_data_prints_the_plan_and_its_cost_then_the_data_problem(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("SUITE_DATA", str(tmp_path / "cache"))
    args = ["run", "--task", "cifar10", "--sampler", "edm,cos", "--results", str(tmp_path / "r"), "--dry-run"]
    code, out, err = launch(capsys, *args, "budget.allow_stand_in=false")
    assert code == 2
    assert (
        "2 run(s):" in out and "planned cost per run:" in out and "planned wall time on this machine" in out
    )
    assert err.startswith("error: task cifar10: CIFAR-10 not found") and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_cpu_short_dry_run_gives_hours_on_this_machine_and_warns(tmp_path, capsys, fashion_root):
    code, out, err = launch(
        capsys, *fashion_args(tmp_path / "r", fashion_root, "--budget", "short", "--dry-run")
    )
    assert code == 0, err
    (here,) = [line for line in out.splitlines() if line.startswith("planned wall time on this machine")]
    assert " per run at " in here and "measured now" in here and re.search(r": [\d,.e+-]+ h[ ,]", here)
    assert any(line.startswith("warning: these 1 run(s) would take ") for line in out.splitlines())
    cost = next(line for line in out.splitlines() if line.startswith("planned cost per run:"))
    assert "measured: suite bench train of" in cost  # fashion's short network has a committed H200 bench


def test_the_dry_run_prints_one_config_and_the_differences_of_the_others(tmp_path, capsys, fashion_root):
    args = fashion_args(tmp_path / "r", fashion_root, "--dry-run", "budget.kimg=0.256")
    args[args.index("edm")] = "edm,cos,edm"
    code, _, err = launch(capsys, *args)
    assert (
        code == 2
        and err == "error: sampler edm is named 2 times in --sampler edm,cos,edm; name each sampler once\n"
    )
    args[args.index("edm,cos,edm")] = "edm,cos"
    code, out, err = launch(capsys, *args)
    assert code == 0, err
    assert out.count("# config of ") == 1 and "2 run(s):" in out
    assert "#   fashion/smoke/cos/seed0: sampler=cos (its config)\n" in out


@pytest.mark.parametrize(
    "argv, first",
    [
        (
            ["eval", "somewhere", "--grid", "infogird"],
            "error: unknown solver grid 'infogird'; did you mean infogrid?",
        ),
        (["status", "--results", "FILE"], "error: --results FILE is a file; give a results folder"),
        (["report", "--results", "EMPTY"], "error: no runs under EMPTY; give the folder"),
    ],
)
def test_each_mistake_is_one_error_line_and_exit_2(tmp_path, capsys, argv, first):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    places = {"FILE": str(tmp_path / "notes.txt"), "EMPTY": str(tmp_path / "empty")}
    argv = [places.get(arg, arg) for arg in argv]
    first = first.replace("FILE", places["FILE"]).replace("EMPTY", places["EMPTY"])
    code, out, err = launch(capsys, *argv)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith(first)
    assert not list((tmp_path / "empty").iterdir())  # report wrote nothing


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_device_cuda_and_a_one_sample_evaluation_are_refused_before_training(tmp_path, capsys, fashion_root):
    bad = ["device=cuda", "budget.eval.samples=1"]
    code, out, err = launch(capsys, *fashion_args(tmp_path / "r", fashion_root, *bad))
    assert code == 2 and not (tmp_path / "r" / "runs").exists()
    assert err.splitlines() == [
        "error: budget.eval.samples=1, budget.eval.final_samples=1: a metric needs at least 2 samples and 2 "
        "references; set them to 2 or more",
        "error: device=cuda: torch sees no CUDA device on this machine; use device=auto or device=cpu here, "
        "or --launcher slurm for a GPU partition",
    ]


def test_version_names_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("suite 0.1.0")


def test_suite_data_without_a_connection_fails_in_one_line_and_keeps_no_empty_folder(
    tmp_path, capsys, monkeypatch
):
    import torchvision

    # the real download code, pointed at a closed local port: the refusal an offline machine meets
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "url", "http://127.0.0.1:9/cifar-10-python.tar.gz")
    dest = tmp_path / "cifar"
    code, _, err = launch(capsys, "data", "cifar10", str(dest))
    assert code == 2 and len(err.splitlines()) == 1 and not dest.exists()
    assert err.startswith("error: suite data cifar10: ") and "`suite data cifar10 SRC DEST`" in err


def test_a_rescore_much_worse_than_the_own_grid_at_the_same_snapshot_is_flagged():
    from suite.run.evaluation import MUCH_WORSE, grid_warning

    own = {"nimg": 1000, "metric": "sliced-w2", "value": 0.41, "nfe": 35, "higher_is_better": False}
    recorded = [own, {**own, "nimg": 2000, "value": 9.0}]
    infogrid = {**own, "grid": "infogrid", "value": 2.8}
    warning = grid_warning(infogrid, recorded)
    assert warning is not None and warning.startswith("warning: sliced-w2 2.8 on grid infogrid is 6.8× worse")
    assert grid_warning({**infogrid, "value": 0.41 * MUCH_WORSE}, recorded) is None  # not much worse
    assert grid_warning({**own, "value": 2.8}, recorded) is None  # the own grid is not compared with itself
    mauve = {**infogrid, "metric": "mauve", "higher_is_better": True, "value": 0.1}
    assert grid_warning(mauve, [{**own, "metric": "mauve", "value": 0.9}]).startswith("warning: mauve 0.1")


def test_the_planning_rate_says_where_it_comes_from_for_each_modality():
    """CIFAR-10's `paper` DDPM++ has a committed H200 bench; a smaller image network takes the nearest image
    bench, said to be another network; DNA, text and points have none and say that theirs is borrowed."""
    from suite.launch.cost import planning_rate

    tflops, label = planning_rate(127.3, "cifar10")
    assert tflops > 200 and label.startswith(
        f"{tflops:.3g} TFLOP/s (measured: suite bench train of cifar10 paper"
    )
    tflops, label = planning_rate(2.0, "cifar10")
    assert "(measured for another image network, of 7.59 GFLOP/example against this one's 2:" in label
    assert label.endswith("a smaller network, so a lower bound on its hours)")
    for task, modality in (("dna", "sequence"), ("owt", "text"), ("ring2d", "points")):
        tflops, label = planning_rate(1.0, task)
        assert label.startswith(
            f"212 TFLOP/s, the image rate of EDM's CIFAR-10 loop on one H200: no {modality}"
        )
        assert f"`suite bench train --task {task}` on a GPU measures one" in label


def test_late_mistakes_are_answered_in_words_with_exit_2_before_any_work(tmp_path, capsys, monkeypatch):
    """status of a folder that is not there, a device that is none, SLURM where there is none, and InfoGrid
    for a run whose sampler learned no profile: one error line each, exit 2, nothing computed."""
    nowhere = tmp_path / "nowhere"
    code, out, err = launch(capsys, "status", "--results", str(nowhere))
    assert code == 2 and err == (
        f"error: --results {nowhere}: no such folder; give a results folder (the one holding runs/; "
        "suite run --results creates it)\n"
    )
    ring = ["run", "--task", "ring2d", "--sampler", "edm", "--results", str(tmp_path / "r")]
    code, out, err = launch(capsys, *ring, "--dry-run", "device=gpu")
    assert code == 2 and "  device='gpu': valid: auto, cpu, cuda  [ring2d/smoke/edm/seed0]" in err
    with monkeypatch.context() as bare:
        bare.setenv("PATH", str(tmp_path))  # no sbatch on it
        code, out, err = launch(capsys, *ring, "--launcher", "slurm")
    assert code == 2 and err.startswith("error: --launcher slurm: this machine has no sbatch on its PATH")
    assert not (tmp_path / "r").exists()
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    assert main([*ring, "device=cpu", "budget.kimg=0.128", "budget.eval_points=1"]) == 0
    (run,) = (tmp_path / "r").glob("runs/*/edm/seed0")
    records = (run / "records.jsonl").read_text()
    capsys.readouterr()
    code, out, err = launch(capsys, "eval", str(run), "--grid", "infogrid", "--device", "cpu")
    assert code == 2 and err == (
        "error: --grid infogrid is built from the learned information profile, and the sampler of "
        f"{run} (edm) learned none (its sampler.jsonl holds no profile); use --grid karras, or a run of a "
        "sampler that learns one (infonoise)\n"
    )
    assert (run / "records.jsonl").read_text() == records


def test_plan_seeds_refuses_a_negative_difference_instead_of_dropping_its_sign(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["plan-seeds", "--difference", "-5"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(
        "suite plan-seeds: error: argument --difference: must be a finite number > 0, got -5\n"
    )
