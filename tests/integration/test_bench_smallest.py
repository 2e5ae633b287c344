"""``suite bench train`` in-process at its smallest size: one timed fp32 step of bfashion's smoke network
(narrowed to 8 channels) at batch 2 on the CPU, on the task's own example data, reports figures that are
positive and finite and consistent with each other (throughput = batch / step time). The benches at their
real sizes, every kind and variant, are in tests/test_bench.py."""

import json
import math

from suite.cli import main
from suite.task import TASKS


def test_the_smallest_train_bench_reports_one_consistent_row(tmp_path, capsys):
    data = TASKS.get("bfashion").example_data(tmp_path / "data", 8)
    out = tmp_path / "train.json"
    argv = ["bench", "train", "--task", "bfashion", "--budget", "smoke", "--device", "cpu", "--batch", "2",
            "--steps", "1", "--variants", "fp32", "--out", str(out),
            "task.network.model_channels=8", *(f"task.{k}={v}" for k, v in data.items())]  # fmt: skip
    assert main(argv) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert (report["device"], report["batch"]) == ("cpu", 2)
    (row,) = report["rows"]
    assert row["variant"] == "fp32"
    for key in (
        "examples_per_s",
        "step_ms",
        "first_step_s",
        "gflop_per_example",
        "tflops",
        "peak_memory_mib",
    ):
        assert isinstance(row[key], (int, float)) and math.isfinite(row[key]) and row[key] > 0, (
            key,
            row[key],
        )
    assert math.isclose(row["examples_per_s"], 2 / (row["step_ms"] / 1e3), rel_tol=1e-2)
