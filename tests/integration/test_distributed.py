"""Two gloo ranks on the CPU train exactly what one process with the same global batch trains."""

import socket

import pytest
import torch
import torch.multiprocessing as mp

from tests.helpers.datagen import write_mnist_format
from tests.helpers.ddp_worker import train_steps


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(600)
def test_two_ranks_match_one_process_with_doubled_batch(tmp_path):
    data = write_mnist_format(tmp_path / "idx")
    overrides = [
        f"task.root={data}",
        "budget.batch=32",
        "task.network.model_channels=8",
        "budget.adaptive.warmup_steps=3",
        "budget.adaptive.refresh_every=2",
        "sampler.min_count=1",
    ]
    steps = 8
    mp.spawn(train_steps, args=(2, free_port(), overrides, steps, str(tmp_path)), nprocs=2, join=True)
    two = [torch.load(tmp_path / f"state{r}.pt", weights_only=False) for r in range(2)]
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    train_steps(0, 1, free_port(), overrides, steps, str(single_dir))
    one = torch.load(single_dir / "state0.pt", weights_only=False)

    for key in ("acc_sum", "acc_count", "density"):
        a, b = two[0]["sampler"][key], two[1]["sampler"][key]
        assert all(torch.equal(a[k], b[k]) for k in a) if isinstance(a, dict) else torch.equal(a, b)
    assert two[0]["sampler"]["steps"] == one["sampler"]["steps"] == steps
    assert len(two[0]["sampler"]["history"]) >= 2
    assert torch.allclose(two[0]["sampler"]["acc_count"], one["sampler"]["acc_count"])
    assert torch.allclose(two[0]["sampler"]["acc_sum"], one["sampler"]["acc_sum"], rtol=1e-5)
    for name, p in one["model"].items():
        assert torch.equal(two[0]["model"][name], two[1]["model"][name]), name
        assert torch.allclose(two[0]["model"][name], p, rtol=1e-4, atol=1e-6), name
