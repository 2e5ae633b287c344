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
    assert " per run (" in here and "measured now" in here and re.search(r": [\d,.e+-]+ h[ ,]", here)
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


def test_after_a_tiny_run_table_report_plan_seeds_and_status_show_only_that_run_and_write_nothing_tracked(
    tmp_path, capsys, monkeypatch
):
    """A results folder holding a copy of a committed evidence set and one tiny run of the user's: each
    view shows the run and names the set it left out; --all adds it; the report goes under the results
    folder, the repository's tracked tree is left as it was, and its default outputs are ignored by git."""
    import shutil
    import subprocess

    repo = Path(__file__).resolve().parents[2]

    def tracked_state() -> str:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=repo,
            capture_output=True,
            text=True,
        ).stdout

    before = tracked_state()
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "results"
    shutil.copytree(repo / "results" / "cpu-smoke", results / "cpu-smoke")
    small = ["device=cpu", "budget.kimg=0.128", "budget.eval_points=1"]
    assert main(["run", "--task", "ring2d", "--sampler", "edm", "--results", str(results), *small]) == 0
    assert "note: budget smoke cannot rank samplers on a task scored from samples" in capsys.readouterr().out
    left = f"Left out: committed evidence {results / 'cpu-smoke'}"

    assert main(["table", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "ring2d · smoke · kl-bound" in out and "bfashion" not in out and left in out
    assert main(["status", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "1 run(s): 1 done" in out and "bfashion" not in out and left in out
    assert main(["status", "--results", str(results), "--all"]) == 0
    assert "bfashion" in capsys.readouterr().out
    assert main(["plan-seeds", "--results", str(results), "--difference", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "bfashion" not in out and left in out
    assert main(["report", "--results", str(results)]) == 0
    report = (results / "REPORT.md").read_text()
    assert "ring2d" in report and "bfashion" not in report
    assert not any("bfashion" in p.name for p in (results / "figures").iterdir())
    assert tracked_state() == before
    ignored = subprocess.run(
        ["git", "check-ignore", "results/REPORT.md", "results/figures/a.png", "results/profiles/a.npz"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert ignored.stdout.split() == ["results/REPORT.md", "results/figures/a.png", "results/profiles/a.npz"]


def test_the_wall_time_plan_counts_k_runs_at_a_time_each_with_its_share_of_threads_and_the_evaluations(
    monkeypatch,
):
    """On given rates: a run is building its trainer, its steps times the step time and its evaluation
    points times one evaluation; 9 runs two at a time take 5 runs' time; a packed run gets its share of the
    cores; the warning advises a smaller budget only where there is one."""
    import suite.launch.packed
    from suite.launch.cost import describe_here, threads_per_run, wall_seconds

    assert wall_seconds(0.5, 100, 10.0, 3, runs=9, at_once=2) == (80.0, 400.0)
    assert wall_seconds(0.5, 100, 10.0, 3, runs=9) == (80.0, 720.0)
    assert wall_seconds(0.5, 100, 10.0, 3, runs=9, at_once=2, setup_s=4.0) == (84.0, 420.0)
    monkeypatch.setattr(suite.launch.packed, "usable_cores", lambda: 8)
    assert [threads_per_run(k) for k in (2, 3, 8, 16)] == [4, 2, 1, 1]
    assert threads_per_run(1) == torch.get_num_threads()
    here = {
        "step_s": 2.0,
        "steps": 1000,
        "eval_s": 300.0,
        "eval_points": 4,
        "hours": 3200 / 3600,
        "device": "cpu, 1 thread(s) per run",
        "source": "given",
    }
    plan, warning = describe_here(here, 9, 2, "demo")
    assert "53 min per run (2 s per step)" in plan and "4.44 h for 9 run(s) 2 at a time" in plan
    assert (
        warning == "warning: these 9 run(s) would take 4.44 h here; --launcher slurm on GPUs is the usual way"
    )
    assert "a smaller budget (demo, smoke) or --launcher slurm" in describe_here(here, 9, 2, "short")[1]
