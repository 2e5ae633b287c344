"""Packing runs on one device, planned without launching: ``--runs-per-gpu`` below one and packing runs of
several GPUs are refused naming the value, and the SLURM array plan carries K runs per array task."""

from __future__ import annotations

import pytest

from suite.cli import main
from suite.launch.cluster import Resources, load_profile
from suite.launch.plan import plan_runs
from suite.launch.slurm import array_plan, executor_parameters


def test_runs_per_gpu_below_one_is_refused_naming_it(tmp_path, capsys):
    args = [
        "run",
        "--task",
        "bfashion",
        "--sampler",
        "edm",
        "--results",
        str(tmp_path),
        "--runs-per-gpu",
        "0",
    ]
    assert main(args) == 2
    assert "--runs-per-gpu must be at least 1 (1: one run at a time), got 0" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_the_slurm_array_plan_carries_k_runs_per_array_task(tmp_path):
    runs = plan_runs("bfashion", "edm", "smoke", 5, tmp_path)
    local = load_profile("local")
    ((task, resources, packs),) = array_plan(runs, local, {}, limit=1001, runs_per_task=2)
    assert task == "bfashion" and resources == local.resources("bfashion", "image")
    assert [[run.cfg.seed for run in pack] for pack in packs] == [[0, 1], [2, 3], [4]]
    split = array_plan(runs, local, {}, limit=2, runs_per_task=2)
    assert [[len(pack) for pack in packs] for _, _, packs in split] == [[2, 2], [1]]
    one = array_plan(runs, local, {}, limit=1001)
    assert [[run.cfg.seed for run in pack] for pack in one[0][2]] == [[0], [1], [2], [3], [4]]

    params = executor_parameters("bfashion", Resources(gpus_per_run=1, cpus_per_task=4, mem_gb=8), local, 2)
    assert (params["cpus_per_task"], params["mem_gb"]) == (8, 16)  # two runs' CPUs and memory
    assert (params["tasks_per_node"], params["gpus_per_node"]) == (1, 1)  # one process, one GPU, shared


def test_packing_runs_of_several_gpus_is_refused_naming_them(tmp_path):
    runs = plan_runs("bfashion", "edm", "smoke", 2, tmp_path)
    with pytest.raises(ValueError, match="runs of bfashion ask for 2 GPUs each .* --gpus-per-run 1"):
        array_plan(runs, load_profile("local"), {"gpus_per_run": 2}, limit=1001, runs_per_task=2)
    with pytest.raises(ValueError, match="--runs-per-gpu must be at least 1"):
        array_plan(runs, load_profile("local"), {}, limit=1001, runs_per_task=0)
