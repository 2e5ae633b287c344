"""The training loop end to end on small generated data in the real IDX format (CPU, deterministic).

Kills, preemption and concurrent launches are ``tests/test_faults.py``'s."""

import json
import subprocess
from pathlib import Path

import fid_extractor  # noqa: F401  (registers the "rand-test" feature extractor in this process)
import pytest
import torch
from datagen import write_mnist_format
from subprocesses import cli_command, cli_env

from suite.records import read_jsonl

TINY = [
    "budget.kimg=0.384",
    "budget.batch=16",
    "budget.tick_kimg=0.064",
    "budget.checkpoint_kimg=0.032",
    "budget.eval_points=2",
    "budget.eval.samples=16",
    "budget.eval.reference=32",
    "budget.eval.batch_size=16",
    "task.metrics.fid.feature_extractor=rand-test",
    "task.network.model_channels=8",
    "budget.lr_rampup_kimg=0.1",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=2",
    "task.solver_steps=4",
]


def run_cmd(results: Path, data: Path, sampler: str = "infonoise") -> list[str]:
    return cli_command(
        "run",
        "--task",
        "bfashion",
        "--sampler",
        sampler,
        "--results",
        str(results),
        f"task.root={data}",
        *TINY,
    )


def final_rows(results: Path) -> list[dict]:
    (records,) = results.glob("runs/*/*/seed0/records.jsonl")
    return read_jsonl(records)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, data) -> Path:
    results = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run(run_cmd(results, data), env=cli_env(), check=True, timeout=600)
    return results


def test_run_writes_records(reference_run):
    rows = final_rows(reference_run)
    assert [r["kimg"] for r in rows] == [0.192, 0.384]
    assert all(r["metric"] == "fd-rand-test" and r["substitute_metric"] for r in rows)
    (run_dir,) = reference_run.glob("runs/*/infonoise/seed0")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "done" and info["sampler_hyperparameters"]["name"] == "infonoise"
    assert len(read_jsonl(run_dir / "sampler.jsonl")) >= 2  # warm-up prior, then rebuilds
    assert (run_dir / "config.yaml").is_file()


def test_rerun_of_finished_run_does_nothing(reference_run, data):
    out = subprocess.run(
        run_cmd(reference_run, data), env=cli_env(), check=True, timeout=300, capture_output=True, text=True
    )
    assert "done already" in out.stdout


def test_class_conditional_training_and_guided_generation(tmp_path, data):
    """Label dropout in training and classifier-free guidance at sampling, on a conditional config."""
    from suite.config import compose_run
    from suite.grids import build_grid
    from suite.spec import run_spec
    from suite.training import Trainer

    overrides = [
        f"task.root={data}",
        "task.num_classes=10",
        "task.cond_dropout=0.5",
        "device=cpu",
        "task.network.model_channels=8",
        "task.metrics.fid.feature_extractor=rand-test",
        "task.solver_steps=3",
    ]
    trainer = Trainer(run_spec(compose_run("fashion", "edm", "smoke", overrides)), tmp_path)
    batch = trainer.data.train.batch(torch.arange(4), torch.device("cpu"))
    assert batch.cond["class_labels"].shape == (4, 10) and trainer.state.model.net.label_dim == 10
    losses = [trainer.train_step().item() for _ in range(2)]
    assert all(torch.isfinite(torch.tensor(losses)))
    sigmas = build_grid("karras", 3, 0.002, 80.0)
    guided, matched = trainer.evaluator.generate(trainer.state.ema, 5, sigmas, guidance=2.0)
    plain, _ = trainer.evaluator.generate(trainer.state.ema, 5, sigmas, guidance=1.0)
    assert guided.shape == (5, 1, 28, 28) and torch.isfinite(guided).all()
    assert matched is not None and matched.cond["class_labels"].shape == (5, 10)
    assert not torch.equal(guided, plain)  # guidance changes the samples


def test_torn_jsonl_line_is_dropped_on_resume(tmp_path):
    """A kill mid-append tears only the last line: readers skip it and truncation removes it."""
    from suite.records import append_jsonl, truncate_jsonl

    path = tmp_path / "stats.jsonl"
    append_jsonl(path, [{"nimg": 64}, {"nimg": 128}, {"nimg": 192}])
    with open(path, "a") as handle:
        handle.write('{"nimg": 2')  # torn
    assert [r["nimg"] for r in read_jsonl(path)] == [64, 128, 192]
    truncate_jsonl(path, 128)
    append_jsonl(path, [{"nimg": 192}])
    assert [r["nimg"] for r in read_jsonl(path)] == [64, 128, 192]
    assert path.read_text().count("\n") == 3
