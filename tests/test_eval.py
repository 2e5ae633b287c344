"""``suite eval``: re-scoring a finished run's saved snapshots without the trainer."""

import subprocess
from pathlib import Path

import pytest
from datagen import write_mnist_format
from subprocesses import cli_command, cli_env
from test_training import TINY

from suite.records import read_jsonl


def suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    data = write_mnist_format(tmp_path_factory.mktemp("idx"))
    results = tmp_path_factory.mktemp("results")
    done = suite("run", "--task", "bfashion", "--sampler", "infonoise", "--results", str(results),
                 f"task.root={data}", *TINY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder,) = results.glob("runs/*/infonoise/seed0")
    return folder


def test_eval_recomputes_a_recorded_point_exactly_and_adds_no_row(run_dir):
    before = read_jsonl(run_dir / "records.jsonl")
    out = suite("eval", str(run_dir), "--kimg", "0.192")
    assert out.returncode == 0, out.stderr
    (recorded,) = [r for r in before if r["kimg"] == 0.192]
    assert f"{recorded['value']:.6g} (recorded {recorded['value']:.6g})" in out.stdout
    assert read_jsonl(run_dir / "records.jsonl") == before


def test_eval_on_the_infogrid_writes_labelled_rows_beside_the_karras_rows_once(run_dir):
    for _ in range(2):
        out = suite("eval", str(run_dir), "--grid", "infogrid", "--steps", "3")
        assert out.returncode == 0, out.stderr
    rows = read_jsonl(run_dir / "records.jsonl")
    karras = [(r["kimg"], r["nfe"]) for r in rows if r["grid"] == "karras"]
    infogrid = [(r["kimg"], r["nfe"]) for r in rows if r["grid"] == "infogrid"]
    # InfoNoise learned its first profile at the end (a batch of 16 fills its bins slowly): the earlier
    # snapshot has none and is skipped on the InfoGrid.
    assert karras == [(0.192, 7), (0.384, 7)] and infogrid == [(0.384, 5)]
    assert "kimg 0.192: no learned profile yet" in out.stdout
    out = suite("eval", str(run_dir), "--grid", "infogrid-rescaled", "--steps", "3", "--kimg", "0.384")
    assert out.returncode == 0, out.stderr
    rescaled = [r for r in read_jsonl(run_dir / "records.jsonl") if r["grid"] == "infogrid-rescaled"]
    assert [(r["kimg"], r["nfe"]) for r in rescaled] == [(0.384, 5)]


def test_eval_names_the_valid_choices_for_a_bad_point_metric_or_grid(run_dir):
    for args, message in (
        (["--kimg", "0.3"], "valid kimg: 0.192, 0.384"),
        (["--metric", "mauve"], "unknown metric 'mauve' for task bfashion; valid metrics: fd-rand-test"),
        (["--grid", "linear"], "unknown solver grid 'linear'; valid grids: karras, infogrid"),
    ):
        out = suite("eval", str(run_dir), *args)
        assert out.returncode == 2 and message in out.stderr, out.stderr
