"""Compiled training: ``budget.compile`` and what a run records about it.

For the smallest network (DNA's smoke network, 5.5k parameters), a few steps trained with
``budget.compile=true`` (inductor's CPU backend, its caches where runs keep them, so that a second session
loads the kernels the first compiled) equal the same steps eager: the same losses, the same gradients and the
same weights, within bf16 tolerance (inductor reorders floating-point sums). The image (a U-Net with
attention, channels-last) and text networks are compared the same way on CUDA, in the GPU tier
(tests/gpu/test_compile_cuda.py), where inductor compiles in seconds rather than minutes. A compile
that fails (inductor pointed at a C++ compiler that does not exist, with an empty cache, so that it really
compiles) falls back to eager: the steps equal the eager steps exactly, one warning line is printed, and
the run's ``run.json`` keeps it; ``compile: auto`` compiles on CUDA only, and a value that is neither a
boolean nor ``auto`` is refused, naming the valid choices.
"""

import json
import subprocess
from pathlib import Path

import pytest
import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import fresh_cache

from suite.config import compose_run
from suite.paths import inductor_dir
from suite.run.spec import SpecError, run_spec
from suite.run.training import Trainer
from suite.task import TASKS
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env

SMALL = [
    "device=cpu",
    "budget.batch=4",
    "budget.precision=fp32",
    "budget.lr_rampup_kimg=0",
]
TINY_IMAGE = ["task.network.model_channels=8", "task.network.channel_mult=[1,2]"]
SMALLEST = "dna"  # the smallest smoke network: 5.5k parameters (bfashion's tiny U-Net 50k, owt's 372k)
STEPS = 2
BF16_RTOL = 1.6e-2  # two bf16 ulps: inductor's fused kernels sum in another order than eager


def trainer(task: str, tmp_path: Path, compile_: str, extra: list[str] = ()) -> Trainer:
    data = TASKS.get(task).example_data(tmp_path / "data", 8)
    overrides = [f"task.{key}={value}" for key, value in data.items()]
    cfg = compose_run(task, "edm", "smoke", [*overrides, *SMALL, f"budget.compile={compile_}", *extra])
    return Trainer(run_spec(cfg), tmp_path / f"run-{compile_}")


def steps(trainer: Trainer) -> tuple[list[float], list[torch.Tensor], list[torch.Tensor]]:
    """The losses of ``STEPS`` steps, the gradients of the last one and the weights after it."""
    losses = [trainer.train_step().item() for _ in range(STEPS)]
    model = trainer.state.model
    grads = [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]
    return losses, grads, [p.detach().clone() for p in model.parameters()]


def relative_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    left, right = torch.cat([t.flatten() for t in a]), torch.cat([t.flatten() for t in b])
    return ((left - right).norm() / right.norm()).item()


@pytest.mark.slow
def test_compiled_training_equals_eager_within_bf16_tolerance(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_dir()))  # what runs share
    eager = trainer(SMALLEST, tmp_path, "false")
    compiled = trainer(SMALLEST, tmp_path, "true")
    assert compiled.state.compiled and not eager.state.compiled
    losses, grads, weights = steps(eager)
    c_losses, c_grads, c_weights = steps(compiled)
    assert compiled.train_step.warning is None and compiled.train_step.seconds > 0
    assert compiled.train_step.record()["cache"] == str(inductor_dir())
    torch.testing.assert_close(c_losses, losses, rtol=BF16_RTOL, atol=0)
    assert len(c_grads) == len(grads) and relative_error(c_grads, grads) < BF16_RTOL
    assert relative_error(c_weights, weights) < BF16_RTOL * 1e-2  # a few tiny Adam steps from one init
    for a, b in zip(c_weights, weights, strict=True):
        torch.testing.assert_close(a, b, rtol=BF16_RTOL, atol=1e-5)


def test_a_failed_compile_trains_the_eager_steps(tmp_path, capsys):
    torch._dynamo.reset()
    # inductor's own config patch (monkeypatch would delete the option when it undoes), in a fresh cache so
    # that no kernel an earlier test compiled, on disk or in memory, lets the compile succeed
    with inductor_config.patch({"cpp.cxx": ("/nonexistent/c++",)}), fresh_cache(dir=str(tmp_path)):
        eager, failed = trainer("dna", tmp_path, "false"), trainer("dna", tmp_path, "true")
        (losses, grads, weights), (f_losses, f_grads, f_weights) = steps(eager), steps(failed)
    assert f_losses == losses
    assert all(torch.equal(a, b) for a, b in zip([*f_grads, *f_weights], [*grads, *weights], strict=True))
    assert not failed.state.compiled and failed.state.forward is failed.state.eager_forward
    warning = failed.train_step.warning
    assert warning.startswith("torch.compile failed (") and warning.endswith("training eager")
    assert capsys.readouterr().out.count("warning: torch.compile failed") == 1
    record = failed.train_step.record()
    assert record["warning"] == warning and record["compiled"] is False and record["requested"] == "true"


CLI_BUDGET = [
    "budget.kimg=0.064",
    "budget.batch=16",
    "budget.tick_kimg=0.032",
    "budget.checkpoint_kimg=0.064",
    "budget.eval_points=1",
    "budget.eval.samples=16",
    "budget.eval.reference=32",
    "budget.eval.batch_size=16",
    "task.metrics.fid.feature_extractor=rand-test",
    "task.solver_steps=2",
    *TINY_IMAGE,
]


def test_a_failed_compile_is_one_warning_line_that_the_run_record_keeps(tmp_path):
    data = write_mnist_format(tmp_path / "idx")
    command = cli_command(
        "run", "--task", "bfashion", "--sampler", "edm", "--results", str(tmp_path / "results"),
        f"task.root={data}", "budget.compile=true", *CLI_BUDGET,
    )  # fmt: skip
    env = cli_env(CXX="/nonexistent/c++", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [line for line in done.stdout.splitlines() if "torch.compile failed" in line]
    (run_json,) = (tmp_path / "results").glob("runs/*/*/seed0/run.json")
    info = json.loads(run_json.read_text())
    assert info["status"] == "done" and info["compile"]["compiled"] is False
    assert printed == [f"warning: {info['compile']['warning']}"]
    assert "InvalidCxxCompiler" in info["compile"]["warning"] or "c++" in info["compile"]["warning"]


def test_compile_auto_compiles_on_cuda_only_and_other_values_are_refused():
    cfg = compose_run("dna", "edm", "smoke", [])
    budget = run_spec(cfg).budget
    assert budget.compile is None and budget.compiles("cuda") and not budget.compiles("cpu")
    with pytest.raises(SpecError, match=r"budget.compile='sometimes': valid: auto, true, false"):
        run_spec(compose_run("dna", "edm", "smoke", ["budget.compile=sometimes"]))
