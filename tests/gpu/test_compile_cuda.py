"""Compiled training on CUDA: ``budget.compile=true`` trains the steps eager trains, for the image and text
networks, in fp32 and under bf16 autocast.

bfashion's smoke U-Net (narrowed to 8 channels; attention, channels-last) and owt's smoke network train a few
steps eager and compiled (inductor's CUDA backend) from the same seed: the same losses, the last step's
gradients and the weights after it, within bf16 tolerance (inductor fuses and reorders floating-point sums),
twice that under bf16 autocast, where eager rounds every op's output and a fused kernel does not.
tests/test_compile.py compares the smallest network (DNA's) on the CPU. Skips itself without CUDA.
"""

from pathlib import Path

import pytest
import torch

from suite.config import compose_run
from suite.run.spec import run_spec
from suite.run.training import Trainer
from suite.task import TASKS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

NETWORKS = {
    "bfashion": [
        "task.network.model_channels=8",
        "task.network.channel_mult=[1,2]",
        "budget.channels_last=true",
    ],
    "owt": [],
}
STEPS = 2
BF16_RTOL = 1.6e-2  # two bf16 ulps


def trainer(task: str, tmp_path: Path, precision: str, compile_: str) -> Trainer:
    data = TASKS.get(task).example_data(tmp_path / "data", 8)
    overrides = [f"task.{key}={value}" for key, value in data.items()]
    settings = ["device=cuda", "budget.batch=4", f"budget.precision={precision}", "budget.lr_rampup_kimg=0"]
    cfg = compose_run(
        task, "edm", "smoke", [*overrides, *settings, *NETWORKS[task], f"budget.compile={compile_}"]
    )
    return Trainer(run_spec(cfg), tmp_path / f"run-{precision}-{compile_}")


def steps(trainer: Trainer) -> tuple[list[float], list[torch.Tensor], list[torch.Tensor]]:
    """The losses of ``STEPS`` steps, the gradients of the last one and the weights after it (on the CPU)."""
    losses = [trainer.train_step().item() for _ in range(STEPS)]
    model = trainer.state.model
    grads = [p.grad.detach().float().cpu() for p in model.parameters() if p.grad is not None]
    return losses, grads, [p.detach().float().cpu() for p in model.parameters()]


def relative_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    left, right = torch.cat([t.flatten() for t in a]), torch.cat([t.flatten() for t in b])
    return ((left - right).norm() / right.norm()).item()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("task", sorted(NETWORKS))
def test_compiled_training_on_cuda_equals_eager(task, precision, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    torch._dynamo.reset()
    eager = trainer(task, tmp_path, precision, "false")
    compiled = trainer(task, tmp_path, precision, "true")
    assert compiled.state.compiled and not eager.state.compiled
    losses, grads, weights = steps(eager)
    c_losses, c_grads, c_weights = steps(compiled)
    assert compiled.train_step.warning is None and compiled.train_step.seconds > 0
    rtol = BF16_RTOL if precision == "fp32" else 2 * BF16_RTOL
    torch.testing.assert_close(c_losses, losses, rtol=rtol, atol=0)
    assert len(c_grads) == len(grads) and relative_error(c_grads, grads) < rtol
    assert relative_error(c_weights, weights) < rtol * 1e-2  # a few tiny Adam steps from one init
