"""Checkpoints hold only tensors and plain containers, load with weights_only=True, and survive truncation."""

import fractions
import io
import os
import subprocess
from pathlib import Path

import pytest
import torch

from infonoise_modalities.image.networks import UNet
from suite.noise.calibration import ANALYTIC_CASES, SIGMA_MAX, SIGMA_MIN
from suite.noise.sampler import SAMPLERS, build_sampler
from suite.noise.weighting import EDMWeight
from suite.run.checkpoint import (
    UnsafeCheckpoint,
    check_plain,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
    load_latest_checkpoint,
    save_checkpoint,
)
from tests.helpers.payloads import MakeDirOnUnpickle

REPO = Path(__file__).resolve().parents[2]


def trained_state(sampler_name: str) -> dict:
    """A training state as the loop saves it: model, EMA, Adam after a step, a sampler past rebuilds."""
    params = {"warmup_steps": 4, "refresh_every": 2} if SAMPLERS.get(sampler_name).adaptive else {}
    sampler = build_sampler(sampler_name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0), **params)
    data, gen = ANALYTIC_CASES["two_point"].data, torch.Generator().manual_seed(0)
    for _ in range(9):
        sigma = sampler.sample(256, gen, dtype=torch.float64)
        sampler.observe(sigma, data.optimal_losses(sigma, gen))
    model = UNet(8, 1, 1, model_channels=8, channel_mult=(1,), num_blocks=1, attn_resolutions=(8,))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, 1, 8, 8), torch.zeros(4)).square().mean().backward()
    optimizer.step()
    return {
        "model": model.state_dict(),
        "ema": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "sampler": sampler.state_dict(),
        "wall_time": 1.5,
        "config_hash": "abc123",
    }


@pytest.mark.parametrize("sampler_name", SAMPLERS.names())
def test_every_samplers_training_state_is_plain_and_loads_with_weights_only(tmp_path, sampler_name):
    state = trained_state(sampler_name)
    check_plain(state)
    path = save_checkpoint(tmp_path, 128, state)
    loaded = torch.load(path, weights_only=True)
    assert loaded["nimg"] == 128 and loaded["config_hash"] == "abc123"
    for key, value in state["model"].items():
        assert torch.equal(loaded["model"][key], value)
    assert loaded["optimizer"]["param_groups"] == state["optimizer"]["param_groups"]
    fresh = build_sampler(sampler_name, SIGMA_MIN, SIGMA_MAX, weight=EDMWeight(1.0))
    if SAMPLERS.get(sampler_name).adaptive:
        fresh.load_state_dict(loaded["sampler"])
        assert fresh.history == state["sampler"]["history"]


def test_saving_refuses_a_non_plain_piece_and_names_where_it_sits(tmp_path):
    with pytest.raises(TypeError, match=r"state\['sampler'\]\['pivot'\] is a fractions.Fraction"):
        save_checkpoint(tmp_path, 64, {"sampler": {"pivot": fractions.Fraction(1, 5)}})
    assert list_checkpoints(tmp_path) == []


@pytest.mark.parametrize("payload", ["instance", "call"])
def test_checkpoint_holding_a_pickled_object_is_refused_naming_the_file_and_the_object(tmp_path, payload):
    """torch words the refusal of an allowed-module class ("Unsupported global: GLOBAL fractions.Fraction")
    and of a blocked module's function ("unsupported GLOBAL posix.mkdir whose module posix is blocked")
    differently; the message names the object either way, and the call is not made."""
    marker = tmp_path / "payload-ran"
    obj, name = {
        "instance": (fractions.Fraction(1, 3), "fractions.Fraction"),
        "call": (MakeDirOnUnpickle(marker), f"{os.mkdir.__module__}.mkdir"),
    }[payload]
    path = checkpoint_path(tmp_path / "ckpt", 64)
    path.parent.mkdir()
    torch.save({"nimg": 64, "model": {}, "payload": obj}, path)
    with pytest.raises(
        UnsafeCheckpoint, match=rf"refusing checkpoint {path}: it holds a pickled reference to {name},"
    ):
        load_latest_checkpoint(path.parent)
    assert not marker.exists()


def test_truncated_newest_checkpoint_is_skipped_with_a_message_and_the_previous_one_used(tmp_path, capsys):
    save_checkpoint(tmp_path, 64, {"w": torch.ones(1000)})
    newest = save_checkpoint(tmp_path, 128, {"w": torch.full((1000,), 2.0)})
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    state = load_latest_checkpoint(tmp_path)
    assert state is not None and state["nimg"] == 64
    assert f"skipping unreadable checkpoint {newest}" in capsys.readouterr().out


def test_empty_and_garbage_checkpoints_are_skipped(tmp_path):
    save_checkpoint(tmp_path, 64, {"w": torch.ones(3)})
    checkpoint_path(tmp_path, 128).write_bytes(b"")
    checkpoint_path(tmp_path, 192).write_bytes(b"not a checkpoint" * 64)
    assert load_latest_checkpoint(tmp_path)["nimg"] == 64
    with pytest.raises(RuntimeError, match="not a complete checkpoint archive"):
        load_checkpoint(checkpoint_path(tmp_path, 192))


def test_the_two_newest_checkpoints_are_kept(tmp_path):
    for nimg in (64, 128, 192):
        save_checkpoint(tmp_path, nimg, {"w": torch.zeros(1)})
    assert [p.name for p in list_checkpoints(tmp_path)] == [
        checkpoint_path(tmp_path, n).name for n in (128, 192)
    ]


def test_no_suite_code_loads_with_weights_only_false():
    found = subprocess.run(
        ["grep", "-rn", "weights_only=False", "suite/", "tasks/", "baselines/", "infonoise_modalities/"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1, found.stdout


def test_bytes_of_a_saved_checkpoint_round_trip_exactly(tmp_path):
    state = {"a": torch.arange(5), "nested": {"b": [1, 2.5, "x", None, True]}, "shape": torch.Size([2, 3])}
    path = save_checkpoint(tmp_path, 32, state)
    loaded = load_checkpoint(path)
    assert loaded["nested"] == state["nested"] and loaded["shape"] == state["shape"]
    buffer = io.BytesIO(path.read_bytes())
    assert torch.equal(torch.load(buffer, weights_only=True)["a"], state["a"])
