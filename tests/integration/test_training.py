"""The training loop end to end through the CLI on small generated data in the real IDX format (CPU,
deterministic): a run writes its records, and re-running a finished run does nothing.

Kills, preemption and concurrent launches are ``tests/integration/test_faults.py``'s."""

import json
import subprocess
from pathlib import Path

import pytest

from suite.records import read_jsonl
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env
from tests.helpers.tiny import TINY


def run_cmd(results: Path, data: Path, sampler: str = "infonoise") -> list[str]:
    return cli_command(
        "run",
        "--task",
        "bfashion",
        "--sampler",
        sampler,
        "--results",
        str(results),
        f"task.root={data}",
        *TINY,
    )


def final_rows(results: Path) -> list[dict]:
    (records,) = results.glob("runs/*/*/seed0/records.jsonl")
    return read_jsonl(records)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, data) -> Path:
    results = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run(run_cmd(results, data), env=cli_env(), check=True, timeout=600)
    return results


def test_run_writes_records(reference_run):
    rows = final_rows(reference_run)
    assert [r["kimg"] for r in rows] == [0.192, 0.384]
    assert all(r["metric"] == "fd-rand-test" and r["substitute_metric"] for r in rows)
    (run_dir,) = reference_run.glob("runs/*/infonoise/seed0")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "done" and info["sampler_hyperparameters"]["name"] == "infonoise"
    assert len(read_jsonl(run_dir / "sampler.jsonl")) >= 2  # warm-up prior, then rebuilds
    assert (run_dir / "config.yaml").is_file()


def test_rerun_of_finished_run_does_nothing(reference_run, data):
    out = subprocess.run(
        run_cmd(reference_run, data), env=cli_env(), check=True, timeout=300, capture_output=True, text=True
    )
    assert "done already" in out.stdout
