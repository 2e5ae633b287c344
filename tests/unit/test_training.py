"""The training loop in-process on small generated data in the real IDX format (CPU, deterministic):
class-conditional training with guided generation, and a torn JSONL line dropped on resume."""

from pathlib import Path

import pytest
import torch

from suite.records import read_jsonl
from tests.helpers import fid_extractor  # noqa: F401  (registers the "rand-test" feature extractor in this process)
from tests.helpers.datagen import write_mnist_format


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


def test_class_conditional_training_and_guided_generation(tmp_path, data):
    """Label dropout in training and classifier-free guidance at sampling, on a conditional config."""
    from suite.config import compose_run
    from suite.run.grids import build_grid
    from suite.run.spec import run_spec
    from suite.run.training import Trainer

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
