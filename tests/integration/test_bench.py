"""``suite bench train|sampler|eval|sweep`` on the CPU for a smoke-sized task: each runs, prints its table
and writes figures that are positive and finite (their speed is not tested)."""

import json
import math
import statistics

import pytest

from suite.cli import main
from tests.helpers import fid_extractor  # noqa: F401  (registers the "rand-test" feature extractor)
from tests.helpers.datagen import write_mnist_format

TINY = [
    "task.network.model_channels=8",
    "task.solver_steps=4",
    "task.metrics.fid.feature_extractor=rand-test",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_mnist_format(tmp_path_factory.mktemp("fashion-idx"))


def bench(what, tmp_path, data, capsys, *options):
    out = tmp_path / f"{what}.json"
    argv = [
        "bench",
        what,
        "--task",
        "bfashion",
        "--budget",
        "smoke",
        "--device",
        "cpu",
        "--out",
        str(out),
        *options,
        f"task.root={data}",
        *TINY,
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"suite bench {what}" in printed and f"wrote {out}" in printed
    return json.loads(out.read_text()), printed


def assert_positive_finite(row, keys):
    for key in keys:
        value = row[key]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (key, value)


def test_bench_train(tmp_path, data, capsys):
    report, printed = bench("train", tmp_path, data, capsys, "--steps", "1")
    assert report["device"] == "cpu" and report["batch"] == 64
    assert_positive_finite(report["matmul_tflops"], ["bf16", "fp32"])
    measured = {row["variant"]: row for row in report["rows"] if "skipped" not in row}
    assert set(measured) == {"fp32", "bf16"}
    for row in measured.values():
        assert_positive_finite(
            row,
            [
                "examples_per_s",
                "step_ms",
                "first_step_s",
                "gflop_per_example",
                "tflops",
                "pct_of_bf16_matmul",
                "pct_of_fp32_matmul",
                "peak_memory_mib",
            ],
        )
    (compiled,) = [row for row in report["rows"] if "skipped" in row]
    assert compiled["variant"] == "bf16+compile" and "CUDA" in compiled["skipped"]
    assert "ex/s" in printed and "bf16+compile: skipped" in printed


def test_bench_sampler(tmp_path, data, capsys):
    report, printed = bench("sampler", tmp_path, data, capsys, "--steps", "1")
    assert report["batch"] == 512  # σ drawn for a batch of 512, the overhead target's batch
    assert_positive_finite(report, ["train_step_ms", "max_pct_of_train_step"])
    rows = {row["sampler"]: row for row in report["rows"]}
    assert set(rows) == {"edm", "logu", "cos", "fm", "laplace", "cauchy", "kg", "kg-uncorrected", "infonoise"}
    for row in rows.values():
        assert_positive_finite(row, ["draw_us", "step_us", "pct_of_train_step", "timed_steps"])
    for name in ("kg", "kg-uncorrected", "infonoise"):
        row = rows[name]
        assert_positive_finite(row, ["rebuild_ms", "amortised_rebuild_us", "rebuilds_timed"])
        assert row["rebuilds_timed"] == row["timed_steps"] // row["refresh_every"]
    for row in rows.values():  # each percentage is its step time over the measured training step
        assert row["pct_of_train_step"] == pytest.approx(row["step_us"] / 10 / report["train_step_ms"])
    within = all(row["pct_of_train_step"] <= report["overhead_limit_pct"] for row in rows.values())
    assert report["verdict"] == ("PASS" if within else "FAIL")  # no GPU time on the CPU
    assert "% of train step" in printed


def test_bench_eval(tmp_path, data, capsys):
    report, printed = bench("eval", tmp_path, data, capsys, "--samples", "4")
    generate, metric, *precision_rows = report["rows"]
    assert generate["what"] == "generate" and generate["n"] == 4 and generate["nfe"] == 7
    assert metric["what"] == "fd-rand-test" and metric["n"] == 4
    assert_positive_finite(generate, ["seconds", "rate"])
    assert_positive_finite(metric, ["seconds", "rate", "value"])
    assert "samples/s" in printed and "fd-rand-test" in printed
    (check,) = report["precision"]  # fp32 vs bf16 generation of the same network, against the seed spread
    assert check["metric"] == "fd-rand-test" and check["fp32"] == metric["value"]  # the same latents
    assert check["samples_max_abs_difference"] > 0  # bf16 really generated (a sign decode may hide it)
    assert check["difference"] == check["bf16"] - check["fp32"]
    assert check["fp32_sd"] == statistics.stdev(check["fp32_seeds"]) and len(set(check["fp32_seeds"])) == 3
    assert check["inside_spread"] == (abs(check["difference"]) <= check["fp32_sd"])
    assert [row["what"] for row in precision_rows] == [
        "fd-rand-test fp32 (seed 0)",
        "fd-rand-test bf16 (seed 0)",
        "fd-rand-test bf16 − fp32",
        "fd-rand-test fp32 sd over 3 seeds",
    ]
    assert "fd-rand-test: bf16 generation" in printed and "the default" in printed


def test_bench_sweep_sets_one_and_two_concurrent_runs_against_the_single_run(
    tmp_path, data, capsys, monkeypatch
):
    monkeypatch.setenv("SUITE_PLUGINS", "tests.helpers.fid_extractor")  # the spawned processes: "rand-test"
    report, printed = bench(
        "sweep", tmp_path, data, capsys, "--runs", "2,1", "--steps", "1", "--samples", "2"
    )
    assert report["runs"] == [1, 2] and report["batch"] == 64 and report["samples"] == 2
    one, two = report["rows"]
    assert (one["runs"], two["runs"]) == (1, 2)
    for row in (one, two):
        assert_positive_finite(
            row, ["train_examples_per_s", "samples_per_s", "peak_memory_mib", "threads_per_run"]
        )
        assert row["train_ratio"] == row["train_examples_per_s"] / one["train_examples_per_s"]
    assert one["train_ratio"] == one["samples_ratio"] == one["memory_ratio"] == 1
    assert two["peak_memory_mib"] > one["peak_memory_mib"]  # two processes' peaks, summed
    assert two["threads_per_run"] == max(1, one["threads_per_run"] // 2)
    assert "| runs | threads/run | train ex/s | × 1 run | samples/s |" in printed


def test_unknown_variant_is_refused(capsys):
    assert main(["bench", "train", "--device", "cpu", "--variants", "fp8"]) == 2
    assert "valid variants: fp32, bf16, bf16+compile" in capsys.readouterr().err
