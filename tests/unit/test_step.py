"""The training step on its own, built from a run's spec and training state without any run folder.

On the ring2d task (a 2-D point MLP on generated draws, CPU): one step moves every parameter by Adam's
first update in closed form, −lr·g / (|g| + ε) (the bias-corrected moments of a single gradient are g and
g²), with g the gradient that ``torch.autograd`` gives for the objective's loss on the step's own draws; the
EMA after the step is β·θ_ema + (1 − β)·θ with β = 0.5^(batch / min(halflife, nimg·ratio)); the step's σ
are the sampler's draws from the step's generator, so another sampler gives other σ; a NaN gradient entry is
zeroed, so its parameter stays where it was while the others move. On an image task the step lays its
inputs out as the network declares (channels-last for the U-Net when the budget asks for it).
"""

import copy
import math
from pathlib import Path

import pytest
import torch

from suite.config import compose_run
from suite.run.assembly import build_task
from suite.run.distributed import DistContext
from suite.run.spec import RunSpec, run_spec
from suite.run.state import TrainingState
from suite.run.step import Step
from suite.stream import step_generator
from tests.helpers.datagen import write_mnist_format

CPU = DistContext(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
RESUMED_AT = 4096  # past the learning-rate warm-up: the step runs at the full rate


def build_step(task: str, sampler: str, overrides: list[str]) -> tuple[RunSpec, Step]:
    spec = run_spec(compose_run(task, sampler, "smoke", ["device=cpu", *overrides]))
    built = build_task(spec)
    state = TrainingState(spec, built, CPU)
    return spec, Step(spec, built, built.load().train, state, built.objective(state.weight), CPU)


def ring_step(sampler: str = "edm", *overrides: str) -> tuple[RunSpec, Step]:
    spec, step = build_step(
        "ring2d",
        sampler,
        [
            "task.train_size=512",
            "task.reference_size=64",
            "budget.batch=16",
            "budget.grad_clip=0",
            "budget.lr=0.01",
            "budget.lr_rampup_kimg=1",
            "budget.ema_halflife_kimg=0.5",
            "budget.ema_rampup_ratio=0.05",
            *overrides,
        ],
    )
    step.state.nimg = RESUMED_AT
    return spec, step


def autograd_gradient(step: Step) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The gradient of the step's objective on the step's draws, taken on a copy of the network, and the
    weighted loss sum."""
    draw = step.draw()
    model = copy.deepcopy(step.state.model)
    weighted, _ = step.objective.losses(model, draw.x0, draw.sigma, draw.noise, draw.cond, None)
    params = list(model.parameters())
    grads = torch.autograd.grad(weighted.sum() / step.per_rank, params)
    return list(grads), weighted.detach().sum()


def test_one_step_moves_each_parameter_by_adams_first_update_on_the_autograd_gradient():
    spec, step = ring_step()
    before = [p.detach().clone() for p in step.state.model.parameters()]
    grads, loss = autograd_gradient(step)
    returned = step()
    lr, eps = spec.budget.lr, 1e-8
    assert step.state.nimg == RESUMED_AT + 16
    torch.testing.assert_close(returned, loss, rtol=1e-6, atol=0)
    for old, new, g in zip(before, step.state.model.parameters(), grads, strict=True):
        torch.testing.assert_close(new.detach() - old, -lr * g / (g.abs() + eps), rtol=1e-4, atol=1e-9)
    assert not torch.equal(before[-1], list(step.state.model.parameters())[-1])


def test_the_ema_after_one_step_is_the_halflife_blend_of_the_old_ema_and_the_new_weights():
    spec, step = ring_step()
    ema_before = [p.clone() for p in step.state.ema.parameters()]
    step()
    nimg = RESUMED_AT + 16
    halflife = min(0.5 * 1000, nimg * 0.05)  # the ramp-up caps the half-life early in a run
    beta = 0.5 ** (16 / halflife)
    assert 0 < beta < 1 and halflife == pytest.approx(205.6)
    for old, ema, new in zip(
        ema_before, step.state.ema.parameters(), step.state.model.parameters(), strict=True
    ):
        torch.testing.assert_close(ema, beta * old + (1 - beta) * new.detach(), rtol=1e-6, atol=1e-7)


def test_the_steps_sigma_are_the_samplers_draws_from_the_steps_generator():
    spec, step = ring_step("logu")
    draw = step.draw()
    expected = step.state.sampler.sample(16, step_generator(spec.seed, RESUMED_AT, CPU.device))
    assert torch.equal(draw.sigma, expected)
    d = spec.diffusion
    assert ((draw.sigma >= d.sigma_min) & (draw.sigma <= d.sigma_max)).all()
    _, other = ring_step("edm")
    assert not torch.allclose(other.draw().sigma, draw.sigma)  # the same generator through another sampler
    assert torch.equal(step.draw().sigma, draw.sigma)  # a function of the seed and nimg alone


def test_a_nan_gradient_entry_is_zeroed_so_its_parameter_stays_and_the_others_move():
    spec, step = ring_step()
    params = list(step.state.model.parameters())
    before = [p.detach().clone() for p in params]
    grads, _ = autograd_gradient(step)
    params[0].register_hook(lambda g: torch.where(torch.arange(g.numel()).view_as(g) == 0, math.nan, g))
    step()
    after = [p.detach() for p in params]
    assert all(torch.isfinite(p).all() for p in after)
    assert after[0].view(-1)[0] == before[0].view(-1)[0]  # zero gradient, fresh Adam moments: no move
    expected = -spec.budget.lr * grads[0] / (grads[0].abs() + 1e-8)
    torch.testing.assert_close(
        (after[0] - before[0]).view(-1)[1:], expected.view(-1)[1:], rtol=1e-4, atol=1e-9
    )
    assert not torch.equal(after[-1], before[-1])
    assert all(torch.isfinite(p).all() for p in step.state.ema.parameters())


@pytest.fixture(scope="module")
def idx_root(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.mark.parametrize("channels_last", [True, False])
def test_the_step_lays_its_inputs_out_in_the_memory_format_the_network_declares(channels_last, idx_root):
    _, step = build_step(
        "bfashion",
        "edm",
        [
            f"task.root={idx_root}",
            "budget.batch=4",
            f"budget.channels_last={str(channels_last).lower()}",
            "task.network.model_channels=8",
            "task.network.channel_mult=[1,2]",
        ],
    )
    layout = torch.channels_last if channels_last else torch.contiguous_format
    assert step.state.model.memory_format == layout
    draw = step.draw()
    assert draw.x0.ndim == 4 and draw.x0.is_contiguous(memory_format=layout)
    assert draw.noise.is_contiguous(memory_format=layout)
    assert math.isfinite(step().item())
