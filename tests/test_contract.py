"""The task contract, checked for every registered task under every budget size.

For each task × budget: the task writes small example data in its real on-disk format, the network is
built from the task's own preset for that budget, and one training step runs on the CPU with the memory-
format option on; the loss is finite. Under the smoke budget the run is also evaluated: decode gives what
the task's metrics take, and the metric names are the keys evaluation returns.
"""

import math

import pytest
import torch

from suite.config import compose_run
from suite.records import EVALUATION_COLUMNS
from suite.spec import run_spec
from suite.task import TASKS
from suite.training import Trainer

BUDGETS = ("smoke", "short", "paper")
CONFIGURED = [name for name in TASKS.names()]
SMALL = [
    "device=cpu",
    "budget.batch=2",
    "budget.precision=fp32",
    "budget.channels_last=true",
    "budget.eval.samples=4",
    "budget.eval.reference=8",
    "budget.eval.batch_size=4",
    "task.solver_steps=2",
]


def build(task: str, budget: str, tmp_path, extra: list[str] = ()) -> Trainer:
    overrides = TASKS.get(task).example_data(tmp_path / "data", 8)
    task_overrides = [f"task.{key}={value}" for key, value in overrides.items()]
    cfg = compose_run(task, "edm", budget, [*task_overrides, *SMALL, *extra])
    return Trainer(run_spec(cfg), tmp_path / "run")


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("task", CONFIGURED)
def test_every_task_trains_one_step_under_every_budget(task, budget, tmp_path):
    trainer = build(task, budget, tmp_path)
    batch = trainer.data.train.batch(torch.arange(2), torch.device("cpu"))
    model_x0 = trainer.objective.encode(trainer.state.model, batch.x0)
    assert tuple(model_x0.shape[1:]) == trainer.task.sample_shape
    loss = trainer.train_step()
    assert math.isfinite(loss.item())
    assert trainer.state.channels_last == bool(getattr(trainer.state.model.net, "channels_last", False))


@pytest.mark.parametrize("task", CONFIGURED)
def test_every_task_decodes_what_its_metrics_take(task, tmp_path):
    trainer = build(task, "smoke", tmp_path)
    trainer.train_step()
    rows = trainer.evaluator.evaluate(trainer.state.ema, trainer.nimg, 0.0, importance_weighting=False)
    assert [row["metric"] for row in rows] == [metric.spec.name for metric in trainer.evaluator.metrics]
    for row in rows:
        assert set(row) == set(EVALUATION_COLUMNS) and math.isfinite(row["value"])
        assert row["data_fingerprint"] == trainer.data.fingerprint
