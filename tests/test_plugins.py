"""Plugins from outside the repository, and a sequence task that needs no edit to the runner.

``tests/plugins/seqtoy`` is installed for these tests as its own distribution (a ``.dist-info`` with entry
points in a temporary site folder on PYTHONPATH): a task, two metrics and its own YAML config, declared in
the groups ``infonoise_suite.tasks``, ``infonoise_suite.metrics`` and ``infonoise_suite.configs``.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from subprocesses import cli_command, cli_env

from suite.records import read_jsonl

TESTS = Path(__file__).resolve().parent
TINY = [
    "budget.kimg=0.768",
    "budget.batch=32",
    "budget.tick_kimg=0.256",
    "budget.checkpoint_kimg=0.256",
    "budget.eval_points=2",
    "budget.eval.samples=32",
    "budget.eval.reference=64",
    "budget.eval.batch_size=32",
    "budget.eval.guidance=2.0",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=4",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site folder holding the plugin package and its distribution metadata."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(TESTS / "plugins" / "seqtoy", site / "seqtoy")
    meta = site / "seqtoy_plugin-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: seqtoy-plugin\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text(
        "[infonoise_suite.tasks]\nseqtoy = seqtoy\n\n"
        "[infonoise_suite.metrics]\nseqtoy = seqtoy\n\n"
        "[infonoise_suite.configs]\nseqtoy = seqtoy:CONF\n"
    )
    return site


def suite(site: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = cli_env(PYTHONPATH=f"{site}{os.pathsep}{TESTS}")
    return subprocess.run(
        cli_command(*args), env=env, capture_output=True, text=True, timeout=600, check=check
    )


def test_an_entry_point_plugin_with_its_own_config_is_listed(site):
    out = suite(site, "list").stdout
    assert "seqtoy" in out and "sequence" in out and "(no config)" not in out


def test_the_plugin_sequence_task_trains_samples_with_cfg_and_is_scored_by_two_metrics(site, tmp_path):
    sys.path.insert(0, str(site))
    try:
        from seqtoy import SequenceToy
    finally:
        sys.path.remove(str(site))
    overrides = SequenceToy.example_data(tmp_path / "data", n=128)
    args = [f"task.{key}={value}" for key, value in overrides.items()]
    results = tmp_path / "results"
    run = suite(site, "run", "--task", "seqtoy", "--sampler", "edm,infonoise", "--results", str(results),
                *args, *TINY)  # fmt: skip
    assert "error" not in run.stderr.lower(), run.stderr
    for sampler in ("edm", "infonoise"):
        (run_dir,) = results.glob(f"runs/seqtoy-smoke-*/{sampler}/seed0")
        rows = read_jsonl(run_dir / "records.jsonl")
        assert sorted((r["kimg"], r["metric"]) for r in rows) == [
            (0.384, "dimer-l1"), (0.384, "gc-mse"), (0.768, "dimer-l1"), (0.768, "gc-mse"),
        ]  # fmt: skip
        assert all(r["guidance"] == 2.0 and r["modality"] == "sequence" for r in rows)
        assert all(0 <= r["value"] < 2 for r in rows)
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "done" and info["data_source"] == str(tmp_path / "data")
    table = suite(site, "table", "--results", str(results)).stdout
    assert "seqtoy" in table and ("dimer-l1" in table or "2-mer L1" in table)
