"""Evaluation failures in-process: a metric value that is not finite fails the evaluation naming it, and NaN
statistics in the cache fail it in one line with the run not done."""

import pytest

from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test", which TINY names)


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
