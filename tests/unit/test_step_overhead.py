"""The training step's fixed costs: no host read inside a step, gradient cleaning in a few operations.

A training step reads nothing back from the device between its logging ticks and the sampler's rebuilds.

Every host read of a tensor's value (``.item()``, ``float(t)``, ``bool(t)``, a tensor in an ``if``) dispatches
``aten::_local_scalar_dense``, and every data-dependent shape (boolean-mask indexing, ``nonzero``) dispatches
``aten::nonzero``: on CUDA both wait for the queued work. torch's CUDA sync debug mode cannot run here, so a
``TorchDispatchMode`` records the operators one step dispatches on the CPU, for a fixed sampler and for
the adaptive ones past their warm-up (KG with its importance weight in use), with gradient clipping on.
The non-finite gradient entries are zeroed as ``torch.nan_to_num_`` zeroes them one tensor at a time. A
tabulated density's values from its padded per-segment tables (one search, one gather) equal the per-point
formulas of ``suite.noise.tabulated``'s docstring, gathered value by value, bit for bit.
"""

import math
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from suite.config import compose_run
from suite.noise.tabulated import TabulatedDensity
from suite.run.spec import run_spec
from suite.run.step import zero_nonfinite_
from suite.run.training import Trainer
from tests.helpers.datagen import write_mnist_format

HOST_READS = {"aten._local_scalar_dense.default", "aten.nonzero.default"}
REFRESH = 1000  # no rebuild falls in the recorded step


class Operators(TorchDispatchMode):
    """The names of the aten operators dispatched inside the mode, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.mark.parametrize("sampler", ["edm", "kg", "infonoise"])
def test_training_step_reads_no_value_back_from_the_device(sampler, data, tmp_path):
    overrides = [
        f"task.root={data}",
        "device=cpu",
        "budget.batch=8",
        "budget.grad_clip=1.0",
        "budget.adaptive.warmup_steps=1",
        f"budget.adaptive.refresh_every={REFRESH}",
        "task.network.model_channels=8",
        "task.network.channel_mult=[1,2]",
    ]
    if sampler != "edm":  # a density from the first batch: every bin with an observation counts
        overrides.append("sampler.min_count=1")
    trainer = Trainer(run_spec(compose_run("bfashion", sampler, "smoke", overrides)), tmp_path)
    trainer.train_step()  # the adaptive samplers' first rebuild: their density is in use from here
    weight = trainer.state.sampler.importance_weight(torch.ones(1))
    assert (weight is not None) == (sampler == "kg")
    with Operators() as recorded:
        trainer.train_step()
    assert "aten.index_add_.default" in recorded.names or not trainer.state.sampler.adaptive
    assert not HOST_READS & set(recorded.names), sorted(HOST_READS & set(recorded.names))


def test_gradient_cleaning_equals_nan_to_num_on_each_tensor_in_three_operations():
    gen = torch.Generator().manual_seed(0)
    shapes = [(8, 3, 3, 3), (8,), (16, 8, 1, 1), (5, 7)]
    grads = [torch.randn(shape, generator=gen) for shape in shapes]
    grads[0] = grads[0].contiguous(memory_format=torch.channels_last)  # a channels_last conv weight's grad
    grads[3] = grads[3].t().contiguous().t()  # a column-major (transposed) weight's grad
    for g, bad in zip(grads, [float("nan"), float("inf"), -float("inf"), float("nan")], strict=True):
        g[torch.rand(g.shape, generator=gen) < 0.3] = bad
    grads[0][0, 1, 2, 0] = -float("inf")
    expected = [torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0) for g in grads]
    kept = [g.data_ptr() for g in grads]
    with Operators() as recorded:
        zero_nonfinite_(grads)
    for g, want in zip(grads, expected, strict=True):
        assert torch.equal(g, want) and bool(g.isfinite().all())
    assert [g.data_ptr() for g in grads] == kept and grads[0].is_contiguous(memory_format=torch.channels_last)
    assert grads[3].t().is_contiguous()
    views = {"as_strided", "split_with_sizes"}  # no kernel: they only describe memory already there
    kernels = [name for name in recorded.names if name.split(".")[1] not in views]
    assert len(kernels) == 3, kernels


def per_point(
    density: TabulatedDensity, u: torch.Tensor, p: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """prob(u) and icdf(p) with every table entry gathered at its own segment index, formula by formula."""
    nodes, left, right, cum, width = density.nodes, density.left, density.right, density.cum, density.width
    last = width.numel() - 1
    j = (torch.searchsorted(nodes, u, right=True) - 1).clamp(0, last)
    t = ((u - nodes[j]) / width[j]).clamp(0, 1)
    inside = (u >= nodes[0]) & (u <= nodes[-1])
    prob = torch.where(inside, left[j] + (right[j] - left[j]) * t, torch.zeros_like(u))
    j = (torch.searchsorted(cum, p, right=True) - 1).clamp(0, last)
    m, h = (p - cum[j]).clamp(min=0), width[j]
    a, b = 0.5 * (right[j] - left[j]) * h, left[j] * h
    denom = b + (b * b + 4 * a * m).clamp(min=0).sqrt()
    t = torch.where(denom > 0, 2 * m / denom.clamp(min=1e-300), torch.zeros_like(m))
    return prob, nodes[j] + t.clamp(0, 1) * h


@pytest.mark.parametrize("shape", ["histogram", "linear"])
def test_tabulated_density_from_its_padded_tables_equals_the_per_point_formulas_bit_for_bit(shape):
    gen = torch.Generator().manual_seed(3)
    nodes = torch.linspace(math.log(0.002), math.log(80.0), 41, dtype=torch.float64)
    values = torch.rand(41, generator=gen, dtype=torch.float64) * 5
    values[7:10] = 0.0  # a stretch of zero density
    if shape == "histogram":
        density = TabulatedDensity.histogram(nodes, values[:40])
    else:
        density = TabulatedDensity.linear(nodes, values)
    assert density.constant == (shape == "histogram")
    u = torch.cat([torch.linspace(nodes[0] - 1, nodes[-1] + 1, 5001, dtype=torch.float64), nodes])
    p = torch.cat([torch.rand(5000, generator=gen, dtype=torch.float64), density.cum, torch.tensor([1.0])])
    prob, icdf = per_point(density, u, p)
    assert torch.equal(density.prob(u), prob) and torch.equal(density.icdf(p), icdf)
    restored = TabulatedDensity.from_tables(**density.tables())  # as a checkpoint restores it
    assert restored.constant == density.constant
    assert torch.equal(restored.prob(u), prob) and torch.equal(restored.icdf(p), icdf)
