"""Confidence intervals, the paired design, the verdicts and the seed plan of ``suite.statistics``.

Intervals are checked against closed forms (tabulated t quantiles) and by their coverage over simulated
studies with fixed seeds; the paired design and the verdicts on run folders written in the runner's layout
(``test_table.write_run``) with known finals and crossings.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.figure import Figure
from scipy import stats
from test_table import write_run

from suite.cli import main as cli_main
from suite.statistics import (
    Interval,
    comparison_intervals,
    paired_t_power,
    ratio_interval,
    seeds_needed,
    statistics_table,
    t_band,
    t_interval,
    verdict,
)
from suite.table import load_records
from suite.table_command import main as table_main

REPO = Path(__file__).resolve().parent.parent
# t_{0.975, df}, as tabulated (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.2)
T975 = {1: 12.706204736174698, 2: 4.302652729749464, 4: 2.7764451051977987}


def standardised(n: int, seed: int = 0) -> np.ndarray:
    """n numbers with mean exactly 0 and sample standard deviation (ddof = 1) exactly 1."""
    z = np.random.default_rng(seed).normal(size=n)
    return (z - z.mean()) / z.std(ddof=1)


# -- intervals ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 5])
def test_t_interval_half_width_is_the_t_quantile_times_s_over_root_n(n: int):
    values = 40.0 + 3.0 * standardised(n)  # mean 40, s = 3
    interval = t_interval(values)
    half = T975[n - 1] * 3.0 / math.sqrt(n)
    assert interval.n == n and interval.estimate == pytest.approx(40.0, abs=1e-12)
    assert interval.low == pytest.approx(40.0 - half, rel=1e-12)
    assert interval.high == pytest.approx(40.0 + half, rel=1e-12)


def test_t_interval_covers_the_true_mean_in_95_percent_of_2000_normal_studies():
    studies = np.random.default_rng(1).normal(10.0, 4.0, size=(2000, 4))
    covered = np.mean([t_interval(seeds).covers(10.0) for seeds in studies])
    assert abs(covered - 0.95) <= 0.02, covered


def test_one_seed_has_no_interval():
    interval = t_interval([71.17])
    assert not interval.defined and interval.estimate == 71.17 and math.isnan(interval.low)
    assert interval.text() == "71.17 (1 seed: no interval)"
    assert t_band([71.17]) == pytest.approx((math.nan, math.nan), nan_ok=True)


def test_ratio_interval_is_the_exponentiated_t_interval_of_the_log_ratios():
    logs = math.log(1.5) + 0.2 * standardised(3)  # geometric mean 1.5, sd of ln r 0.2
    interval = ratio_interval(np.exp(logs))
    half = T975[2] * 0.2 / math.sqrt(3)
    assert interval.estimate == pytest.approx(1.5, rel=1e-12)
    assert interval.low == pytest.approx(1.5 * math.exp(-half), rel=1e-12)
    assert interval.high == pytest.approx(1.5 * math.exp(half), rel=1e-12)


def test_ratio_interval_covers_the_true_ratio_in_95_percent_of_1000_log_normal_studies():
    studies = np.exp(np.random.default_rng(2).normal(math.log(1.4), 0.3, size=(1000, 5)))
    covered = np.mean([ratio_interval(pairs).covers(1.4) for pairs in studies])
    assert abs(covered - 0.95) <= 0.02, covered


def test_a_ratio_of_zero_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"positive and finite, got \[1.2, 0.0\]"):
        ratio_interval([1.2, 0.0])


def test_quality_band_is_the_t_interval_of_the_seed_mean():
    """The quality figure passes ``t_band`` to seaborn as its errorbar: the drawn band is that interval."""
    finals = [30.0, 34.0, 29.0]
    rows = pd.DataFrame({"kimg": [10.0] * 3 + [20.0] * 3, "value": [50.0, 52.0, 47.0, *finals]})
    ax = Figure().subplots()
    sns.lineplot(data=rows, x="kimg", y="value", errorbar=t_band, ax=ax)
    band = ax.collections[0].get_paths()[0].vertices
    at_20 = band[band[:, 0] == 20.0, 1]
    interval = t_interval(finals)
    assert sorted(set(at_20)) == pytest.approx([interval.low, interval.high], rel=1e-12)  # closed polygon


# -- seeds needed ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("difference", "spread", "n"), [(1.0, 1.0, 10), (0.5, 1.0, 34), (2.0, 4.0, 34)])
def test_seeds_needed_is_r_power_t_test_paired_rounded_up(difference: float, spread: float, n: int):
    """R: power.t.test(delta = d, sd = s, power = 0.8, type = "paired") gives n = 9.94 for d/s = 1 and
    33.37 for d/s = 1/2."""
    assert seeds_needed(difference, spread) == n


def test_seeds_needed_reach_the_power_in_simulated_paired_studies():
    n = seeds_needed(2.0, 2.5, power=0.8)
    assert paired_t_power(n - 1, 2.0, 2.5) < 0.8 <= paired_t_power(n, 2.0, 2.5)
    differences = np.random.default_rng(3).normal(2.0, 2.5, size=(4000, n))
    rejected = np.mean(stats.ttest_1samp(differences, 0.0, axis=1).pvalue < 0.05)
    assert abs(rejected - paired_t_power(n, 2.0, 2.5)) <= 0.025, rejected


def test_seeds_needed_refuses_a_zero_difference_and_an_unknown_spread():
    with pytest.raises(ValueError, match="non-zero, got 0.0"):
        seeds_needed(0.0, 1.0)
    with pytest.raises(ValueError, match="got nan; it is measured from at least 2 seed pairs"):
        seeds_needed(1.0, math.nan)


# -- the paired design -------------------------------------------------------------------------------
def by_sampler(intervals: pd.DataFrame) -> dict[str, pd.Series]:
    """The lines of one comparison row by sampler label."""
    return {line["sampler"]: line for _, line in intervals.iterrows()}


def test_pairs_are_only_by_seed_within_one_budget_and_comparison_hash(tmp_path: Path):
    """InfoNoise seeds 0–2 in (smoke, A); EDM seeds 0, 1 in (smoke, A), seed 2 only in (smoke, B) and
    (short, A): the (smoke, A) row pairs seeds 0 and 1, and nothing pairs across budgets or hashes."""
    for seed, final in enumerate([7.0, 9.5, 10.5]):
        write_run(tmp_path, "bfashion", "infonoise", seed, [(10, 50.0), (20, final)], comparison="a")
    for seed, final in enumerate([10.0, 12.0]):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, final)], comparison="a")
    write_run(tmp_path, "bfashion", "edm", 2, [(10, 50.0), (20, 1.0)], comparison="b")
    write_run(tmp_path, "bfashion", "edm", 2, [(10, 50.0), (20, 1.0)], budget="short", comparison="a")
    intervals = comparison_intervals(load_records(tmp_path))
    smoke_a = intervals[(intervals["budget"] == "smoke") & (intervals["comparison_hash"] == "a")]
    info = by_sampler(smoke_a)["infonoise"]
    assert info["target_sampler"] == "edm" and info["pairs"] == 2
    assert info["final"].n == 3 and info["final"].estimate == pytest.approx(9.0)
    assert info["difference"].estimate == pytest.approx(((7.0 - 10.0) + (9.5 - 12.0)) / 2)
    assert info["difference_sd"] == pytest.approx(np.std([-3.0, -2.5], ddof=1))
    others = intervals[(intervals["budget"] != "smoke") | (intervals["comparison_hash"] != "a")]
    assert others["sampler"].tolist() == ["edm", "edm"] and (others["pairs"] == 0).all()
    write_run(tmp_path, "bfashion", "cos", 5, [(10, 50.0), (20, 30.0)], comparison="a")
    cos = by_sampler(comparison_intervals(load_records(tmp_path)))["cos"]
    assert verdict(cos) == "no seed in common with edm: no pairs"


@pytest.fixture
def three_pairs(tmp_path: Path) -> Path:
    """EDM (the target) finals 10, 12, 14 at 20 kimg. InfoNoise 3 FID better per seed (differences −3,
    −2.5, −3.5), reaching EDM's seed-k final at 10, 8, 12.5 kimg (ratios 2, 2.5, 1.6: geometric mean 2);
    Cos worse (differences 2, 2.5, 1.5), never reaching; Laplace ±1 around EDM (differences −1, 1, 0.5)."""
    edm = [10.0, 12.0, 14.0]
    for seed, (target, reach, info, cos, laplace) in enumerate(
        zip(edm, [10.0, 8.0, 12.5], [7.0, 9.5, 10.5], [12.0, 14.5, 15.5], [9.0, 13.0, 14.5], strict=True)
    ):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, target)])
        write_run(tmp_path, "bfashion", "infonoise", seed, [(5, 50.0), (reach, target), (20, info)])
        write_run(tmp_path, "bfashion", "cos", seed, [(10, 50.0), (20, cos)])
        write_run(tmp_path, "bfashion", "laplace", seed, [(10, 50.0), (20, laplace)])
    return tmp_path


def test_verdicts_state_the_paired_difference_and_the_time_ratio(three_pairs: Path):
    lines = by_sampler(comparison_intervals(load_records(three_pairs)))
    half = T975[2] * 0.5 / math.sqrt(3)  # the three differences have s = 0.5
    logs = np.log([2.0, 2.5, 1.6])
    low, high = np.exp(logs.mean() + np.array([-1, 1]) * T975[2] * logs.std(ddof=1) / math.sqrt(3))
    assert verdict(lines["infonoise"]) == (
        f"infonoise better than edm by 3.00 FID, 95% CI [{3 - half:.2f}, {3 + half:.2f}], 3 seed pairs; "
        f"reaches edm's final FID 2.00× sooner, 95% CI [{low:.2f}, {high:.2f}]"
    )
    assert verdict(lines["cos"]) == (
        f"cos worse than edm by 2.00 FID, 95% CI [{2 - half:.2f}, {2 + half:.2f}], 3 seed pairs; "
        "edm's final FID never reached in 3 of 3 seed pairs"
    )
    assert verdict(lines["laplace"]).startswith(
        "not distinguishable from edm with 3 seed pairs (FID difference +0.17, 95% CI ["
    )
    assert verdict(lines["laplace"]).endswith("edm's final FID never reached in 2 of 3 seed pairs")
    assert verdict(lines["edm"]) == "target: the best final FID among the target samplers"


def line(difference: Interval, ratio: Interval | None, higher: bool = False, metric: str = "fid") -> dict:
    """A ``comparison_intervals`` line of infonoise against edm with the given intervals."""
    pairs = difference.n
    return {
        "sampler": "infonoise",
        "target_sampler": "edm",
        "metric": metric,
        "higher_is_better": higher,
        "pairs": pairs,
        "difference": difference,
        "ratio": ratio,
        "ratio_reached": pairs,
    }


def test_verdicts_of_the_time_ratio_and_of_a_higher_is_better_metric():
    better = Interval(-3.0, -4.0, -2.0, 4)
    assert verdict(line(better, Interval(1.1, 0.8, 1.5, 4))).endswith(
        "; time to edm's final FID not distinguishable (1.10×, 95% CI [0.80, 1.50])"
    )
    assert verdict(line(better, Interval(0.5, 0.4, 0.625, 4))).endswith(
        "; takes 2.00× longer to reach edm's final FID, 95% CI [1.60, 2.50]"
    )
    assert verdict(line(Interval(0.05, 0.02, 0.08, 3), None, higher=True, metric="mauve")) == (
        "infonoise better than edm by 0.05 MAUVE, 95% CI [0.02, 0.08], 3 seed pairs"
    )
    assert verdict(line(Interval(2.0, 1.0, 3.0, 2), None)) == (
        "infonoise worse than edm by 2.00 FID, 95% CI [1.00, 3.00], 2 seed pairs"
    )
    assert verdict(line(Interval(2.0, math.nan, math.nan, 1), None)) == "1 seed: no interval; run ≥ 3 seeds"
    assert verdict(line(better, None) | {"target_sampler": ""}) == "no target sampler finished in this row"


# -- the commands ------------------------------------------------------------------------------------
def test_committed_cpu_smoke_table_says_one_seed_no_interval(capsys):
    results = REPO / "results" / "cpu-smoke"
    table = statistics_table(load_records(results))
    others = table[table["sampler"] != table["target"]]
    assert len(others) == 8 and (others["verdict"] == "1 seed: no interval; run ≥ 3 seeds").all()
    assert (table["final, 95% CI"].str.endswith("(1 seed: no interval)")).all()
    assert table_main(argparse.Namespace(results=str(results), budget=None, format="md")) == 0
    assert "| infonoise | 1 | 71.17 (1 seed: no interval) | edm |" in capsys.readouterr().out


def test_plan_seeds_uses_the_measured_spread_of_the_paired_differences(three_pairs: Path, capsys):
    """Cos − EDM differences 2, 2.5, 1.5 have s = 0.5: a difference of 0.5 needs R's 10 seeds."""
    assert cli_main(["plan-seeds", "--results", str(three_pairs), "--difference", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "| bfashion | smoke | fid ↓ | cos | edm | 3 | 2.00 | 0.50 | 0.50 | 10 |" in out
    assert cli_main(["plan-seeds", "--results", str(three_pairs)]) == 0
    measured = seeds_needed(2.0, 0.5)
    assert f"| cos | edm | 3 | 2.00 | 0.50 | 2.00 | {measured} |" in capsys.readouterr().out
