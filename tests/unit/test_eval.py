"""Evaluation failures in-process: a metric value that is not finite fails the evaluation naming it, and NaN
statistics in the cache fail it in one line with the run not done."""

import json

import pytest

from suite import cli
from suite.records import read_jsonl
from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test", which TINY names)
from tests.helpers.datagen import write_mnist_format
from tests.helpers.tiny import TINY


def test_a_metric_value_that_is_not_finite_fails_the_evaluation_naming_it():
    from suite.run.evaluation import InvalidMetricValue, finite_result

    assert finite_result({"value": 2.5, "range_std": 0.1}, "fid", 1000) == {"value": 2.5, "range_std": 0.1}
    for value in (float("nan"), float("inf"), None):
        with pytest.raises(InvalidMetricValue) as err:
            finite_result({"value": value}, "fid", 2560)
        assert (
            str(err.value)
            == f"fid at kimg 2.56 is {value!r}, not a finite number; the evaluation wrote no row"
        )


@pytest.mark.slow
def test_nan_statistics_in_the_cache_fail_the_evaluation_in_one_line_and_the_run_is_not_done(
    tmp_path, monkeypatch, capsys
):
    import numpy as np

    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    data = write_mnist_format(tmp_path / "idx")
    tiny = [*TINY, "budget.kimg=0.032", "budget.eval_points=1", "budget.checkpoint_kimg=0.032"]

    def run(seed: str) -> int:
        argv = ["run", "--task", "bfashion", "--sampler", "edm", "--seeds", seed, "--results", str(tmp_path)]
        return cli.main([*argv, f"task.root={data}", *tiny])

    assert run("0-0") == 0  # writes the reference statistics into the cache
    (cached,) = (tmp_path / "cache" / "fid-stats").glob("*.npz")
    with np.load(cached) as archive:
        np.savez(cached, mu=np.full_like(archive["mu"], np.nan), sigma=archive["sigma"])
    capsys.readouterr()
    assert run("1-1") == 1
    out, err = capsys.readouterr()
    refusal = f"ValueError: refusing cached FID reference statistics {cached}: its mu holds 32 non-finite"
    assert f"  failed       bfashion/smoke/edm/seed1  {refusal}" in out
    assert err.count(refusal) == 1 and "Traceback" not in err
    (folder,) = tmp_path.glob("runs/*/edm/seed1")
    assert read_jsonl(folder / "records.jsonl") == []
    assert json.loads((folder / "run.json").read_text())["status"] == "failed"
