"""Plugins from outside the repository: tasks that need no edit to any existing file.

``tests/plugins/seqtoy`` and ``tests/plugins/mog2d`` are installed for these tests as their own
distributions (a ``.dist-info`` with entry points each, in a temporary site folder on PYTHONPATH): a task,
its metrics and its own YAML config, declared in the groups ``infonoise_suite.tasks``,
``infonoise_suite.metrics`` and ``infonoise_suite.configs``; ``suite list`` shows both with their configs.
``seqtoy``, a task of another modality, trains, samples with guidance and is scored by its two metrics.
``mog2d`` was written from docs/tasks.md alone: with no edit to the suite, one tiny run of it goes through
``suite run`` (its dry run first), ``suite status``, ``suite table`` and ``suite eval``, scored by its own
metric.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from suite.records import read_jsonl
from tests.helpers.subprocesses import cli_command, cli_env

TESTS = Path(__file__).resolve().parents[1]
TINY = [
    "budget.kimg=0.768",
    "budget.batch=32",
    "budget.tick_kimg=0.256",
    "budget.checkpoint_kimg=0.256",
    "budget.eval_points=2",
    "budget.eval.samples=32",
    "budget.eval.reference=64",
    "budget.eval.batch_size=32",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=4",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A site folder holding each plugin package and its distribution metadata."""
    site = tmp_path_factory.mktemp("site")
    metrics = {"seqtoy": ("gc-mse", "dimer-l1"), "mog2d": ("energy-distance",)}
    for plugin in ("seqtoy", "mog2d"):
        shutil.copytree(TESTS / "plugins" / plugin, site / plugin)
        meta = site / f"{plugin}_plugin-0.1.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {plugin}-plugin\nVersion: 0.1\n")
        declared = "".join(f"{name} = {plugin}\n" for name in metrics[plugin])
        (meta / "entry_points.txt").write_text(
            f"[infonoise_suite.tasks]\n{plugin} = {plugin}\n\n"
            f"[infonoise_suite.metrics]\n{declared}\n"
            f"[infonoise_suite.configs]\n{plugin} = {plugin}\n"
        )
    return site


def suite(site: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env["PYTHONPATH"] = f"{site}{os.pathsep}{env['PYTHONPATH']}"  # the plugins, then this checkout
    return subprocess.run(
        cli_command(*args), env=env, capture_output=True, text=True, timeout=600, check=check
    )


def test_an_entry_point_plugin_with_its_own_config_is_listed(site):
    tasks = suite(site, "list").stdout.split("tasks:\n", 1)[1].split("samplers:", 1)[0]
    listed = {line.split()[0]: line.split()[1] for line in tasks.splitlines()}
    assert listed["seqtoy"] == "sequence" and listed["mog2d"] == "points"
    assert "(no config)" not in tasks


def test_the_plugin_sequence_task_trains_samples_with_guidance_and_is_scored_by_two_metrics(site, tmp_path):
    sys.path.insert(0, str(site))
    try:
        from seqtoy import SequenceToy
    finally:
        sys.path.remove(str(site))
    example = SequenceToy.example_data(tmp_path / "data", n=128)
    data = [f"task.{key}={value}" for key, value in example.items()]
    results = tmp_path / "results"
    command = ["run", "--task", "seqtoy", "--sampler", "infonoise", "--results", str(results)]
    suite(site, *command, *data, *TINY, "budget.eval.guidance=2.0")
    (run_dir,) = results.glob("runs/seqtoy-smoke-*/infonoise/seed0")
    rows = read_jsonl(run_dir / "records.jsonl")
    assert sorted((r["kimg"], r["metric"]) for r in rows) == [
        (0.384, "dimer-l1"), (0.384, "gc-mse"), (0.768, "dimer-l1"), (0.768, "gc-mse"),
    ]  # fmt: skip
    assert all(r["guidance"] == 2.0 and r["modality"] == "sequence" and 0 <= r["value"] < 2 for r in rows)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "done" and info["data_source"] == str(tmp_path / "data")
    table = suite(site, "table", "--results", str(results)).stdout
    assert "seqtoy" in table and ("dimer-l1" in table or "2-mer L1" in table)


def test_a_task_written_from_the_docs_goes_through_run_table_and_eval_with_no_suite_edit(site, tmp_path):
    suite_files = [*(TESTS.parent / "suite").rglob("*.py"), *(TESTS.parent / "suite").rglob("*.yaml")]
    assert not any(
        "mog2d" in path.read_text() for path in [*suite_files, *(TESTS.parent / "tasks").glob("*.py")]
    )
    sys.path.insert(0, str(site))
    try:
        from mog2d import MixtureOfGaussians
    finally:
        sys.path.remove(str(site))
    overrides = MixtureOfGaussians.example_data(tmp_path / "data", n=256)
    results = tmp_path / "results"
    command = ["run", "--task", "mog2d", "--sampler", "edm", "--results", str(results)]
    command += [*(f"task.{key}={value}" for key, value in overrides.items()), *TINY]
    planned = suite(site, *command, "--dry-run").stdout
    assert "1 run(s):" in planned and "planned cost per run" in planned and not results.exists()
    suite(site, *command)
    (run_dir,) = results.glob("runs/mog2d-smoke-*/edm/seed0")
    rows = read_jsonl(run_dir / "records.jsonl")
    assert [(r["kimg"], r["metric"]) for r in rows] == [
        (0.384, "energy-distance"),
        (0.768, "energy-distance"),
    ]
    assert not any(r["paper_metric"] or r["substitute_metric"] or r["stand_in_data"] for r in rows)
    final = rows[-1]["value"]
    table = suite(site, "table", "--results", str(results), "--format", "md").stdout
    header, _, row = [line.split("|") for line in table.splitlines() if line.startswith("| ")][:3]
    final_quality = {name.strip(): cell.strip(" *") for name, cell in zip(header, row, strict=True)}
    assert final_quality["metric"] == "energy-distance ↓"  # neither the paper's metric nor a substitute
    assert final_quality["edm"] == f"{final:.2f}"  # no published value beside it
    status = suite(site, "status", "--results", str(results)).stdout
    assert sum(" done " in line for line in status.splitlines() if "mog2d" in line) == 1
    rescored = suite(site, "eval", str(run_dir), "--kimg", "0.768").stdout
    new, recorded = re.search(
        r"kimg 0.768 energy-distance grid=karras NFE 15: (\S+) \(recorded (\S+)\)", rescored
    ).groups()
    assert new == recorded == f"{final:.6g}"
