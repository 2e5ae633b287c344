"""The ground-truth task fitted to real data runs end to end at ``--budget demo`` through the CLI, scored by
every exact metric (the metrics' sample sizes shrunk so the test takes seconds; the task's own sizes took
86 s on one idle core)."""

import subprocess

from suite.records import read_jsonl
from tests.helpers.subprocesses import cli_command, cli_env

SMALL = [
    "budget.kimg=2",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=4",
    "budget.eval.samples=128",
    "task.metrics.kl-bound.samples=8192",
    "+task.metrics.kl-bound.control_samples=8192",
    "task.metrics.fd-exact.floor_draws=2",
    "task.metrics.pi-tv.mmse_samples=64",
]


def test_the_fitted_fashion_mixture_runs_at_the_demo_budget_and_records_every_exact_metric(tmp_path):
    args = [
        "run",
        "--task",
        "fashion_gmm",
        "--sampler",
        "infonoise",
        "--budget",
        "demo",
        "--results",
        str(tmp_path),
    ]
    done = subprocess.run(
        cli_command(*args, *SMALL), env=cli_env(), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    (folder,) = tmp_path.glob("runs/fashion_gmm-demo-*/infonoise/seed0")
    rows = read_jsonl(folder / "records.jsonl")
    assert {row["metric"] for row in rows} == {"kl-bound", "fd-exact", "sliced-w2", "pi-tv"}
    bound = [row for row in rows if row["metric"] == "kl-bound"][-1]
    assert bound["value"] > 0 and bound["extra"]["quadrature_error"] >= 0 and bound["extra"]["mc_se"] > 0
