"""Confidence intervals, the paired design, the verdicts and the seed plan of ``suite.report.statistics``.

Intervals are checked against closed forms (tabulated t quantiles) and by their coverage over simulated
studies with fixed seeds; the paired design and the verdicts on run folders written in the runner's layout
(``test_table.write_run``) with known finals and crossings.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.figure import Figure
from scipy import stats

from suite.cli import main as cli_main
from suite.report.comparisons import comparison_intervals, statistics_table, verdict
from suite.report.rows import format_value, load_records
from suite.report.seed_plan import holm_level, paired_t_power, seeds_needed, spread_bound
from suite.report.statistics import (
    Interval,
    censored_normal,
    difference_on_scale,
    holm,
    outliers,
    ratio_interval,
    scaled_interval,
    t_band,
    t_interval,
    t_limits,
)
from suite.report.table_command import print_tables
from tests.unit.test_table import write_run

REPO = Path(__file__).resolve().parents[2]
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


# -- censored time ratios, Holm, scales ----------------------------------------------------------
def test_censored_normal_without_censoring_is_the_t_interval_and_t_test():
    logs = np.log([2.0, 2.5, 1.6])
    mean, low, high, p = censored_normal(logs, np.zeros(3, dtype=int))
    half = T975[2] * logs.std(ddof=1) / math.sqrt(3)
    assert (low, high) == pytest.approx((logs.mean() - half, logs.mean() + half), rel=1e-12)
    assert p == pytest.approx(stats.ttest_1samp(logs, 0.0).pvalue, rel=1e-10)


def test_censored_normal_limits_are_where_the_profile_likelihood_ratio_meets_its_cutoff():
    """At each limit, 2(ℓ̂ − max_σ ℓ(μ, σ)) equals n·ln(1 + t²/(n−1)), t on (exact values − 1) df, with
    the profile over σ taken here by scipy's bounded scalar minimiser."""
    from scipy import optimize

    y, cut = np.array([0.9, 0.4, 0.0, 0.0, 1.3]), np.array([0, 0, -1, -1, 0])

    def profile(mu: float) -> float:
        def negative(log_sigma: float) -> float:
            z = (y - mu) / math.exp(log_sigma)
            exact = stats.norm.logpdf(z) - log_sigma
            return -float(np.where(cut == 0, exact, stats.norm.logcdf(z)).sum())

        return -optimize.minimize_scalar(negative, bounds=(-8, 4), method="bounded").fun

    estimate, low, high, _ = censored_normal(y, cut)
    best = profile(float(estimate))
    cutoff = 5 * math.log1p(T975[2] ** 2 / 4)
    for limit in (low, high):
        assert 2 * (best - profile(float(limit))) == pytest.approx(cutoff, rel=2e-3)


def test_censored_ratio_intervals_cover_in_95_percent_of_studies_censored_at_the_median():
    """ln r ~ N(0, 1), left-censored at 0 (a speed-up of 1: half the pairs never reach), 5 pairs."""
    y = np.random.default_rng(4).normal(0.0, 1.0, size=(600, 5))
    cut = np.where(y < 0, -1, 0)
    _, low, high, _ = censored_normal(np.where(cut < 0, 0.0, y), cut)
    covered = np.mean((low <= 0) & (0 <= high))
    assert covered >= 0.93, covered


def test_holm_equals_statsmodels_multipletests():
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(5).uniform(0, 0.1, size=(10, 4))  # statsmodels takes ~0.1 s a row
    expected = np.array([multipletests(row, method="holm")[1] for row in p])
    assert holm(p) == pytest.approx(expected, rel=1e-12)
    assert np.isnan(holm(np.array([0.01, np.nan]))[1]) and holm(np.array([0.01, np.nan]))[0] == 0.01


def test_log_scale_fid_comparison_covers_in_at_least_93_percent_of_lognormal_studies_of_5_seeds():
    """Seeds lognormal (σ = 0.5, skewness 1.75), the same geometric mean 4 for both samplers: the
    difference ``difference_on_scale`` reports (FID units at the target's centre) covers 0, and the
    final interval covers the true geometric mean 4, in ≥ 93% of 1000 studies."""
    rng = np.random.default_rng(6)
    sampler, target = 4.0 * np.exp(0.5 * rng.normal(size=(2, 1000, 5)))
    covered = np.mean(
        [difference_on_scale(a, b, "log")[0].covers(0.0) for a, b in zip(sampler, target, strict=True)]
    )
    finals = np.mean([scaled_interval(a, "log").covers(4.0) for a in sampler])
    assert covered >= 0.93 and finals >= 0.93, (covered, finals)


def test_scales_of_the_metric_specs_are_the_ones_the_table_knows():
    from suite.metrics import SCALES, MetricSpec

    assert set(SCALES) == {"log", "logit", "linear"}
    with pytest.raises(ValueError, match="scale='square'; valid: log, logit, linear"):
        MetricSpec("x", False, "x", scale="square")


# -- the paired design -------------------------------------------------------------------------------
def by_sampler(intervals: pd.DataFrame, target: str | None = None) -> dict[str, pd.Series]:
    """The lines of one comparison row by sampler label (against ``target`` where given)."""
    if target is not None:
        intervals = intervals[intervals["target_sampler"] == target]
    return {line["sampler"]: line for _, line in intervals.iterrows()}


def test_pairs_are_only_by_seed_within_one_budget_and_comparison_hash(tmp_path: Path):
    """InfoNoise seeds 0–2 in (smoke, A); EDM seeds 0, 1 in (smoke, A), seed 2 only in (smoke, B) and
    (short, A): the (smoke, A) row pairs seeds 0 and 1, and nothing pairs across budgets or hashes. FID is
    compared on the log scale: geometric means, and the mean log ratio at EDM's geometric mean."""
    for seed, final in enumerate([7.0, 9.5, 10.5]):
        write_run(tmp_path, "bfashion", "infonoise", seed, [(10, 50.0), (20, final)], comparison="a")
    for seed, final in enumerate([10.0, 12.0]):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, final)], comparison="a")
    write_run(tmp_path, "bfashion", "edm", 2, [(10, 50.0), (20, 1.0)], comparison="b")
    write_run(tmp_path, "bfashion", "edm", 2, [(10, 50.0), (20, 1.0)], budget="short", comparison="a")
    intervals = comparison_intervals(load_records(tmp_path))
    smoke_a = intervals[(intervals["budget"] == "smoke") & (intervals["comparison_hash"] == "a")]
    info = by_sampler(smoke_a)["infonoise"]
    assert info["target_sampler"] == "edm" and info["pairs"] == 2 and info["scale"] == "log"
    assert info["final"].n == 3 and info["final"].estimate == pytest.approx((7.0 * 9.5 * 10.5) ** (1 / 3))
    logs = np.log([7.0 / 10.0, 9.5 / 12.0])
    centre = math.sqrt(10.0 * 12.0)
    assert info["difference"].estimate == pytest.approx(centre * (math.exp(logs.mean()) - 1))
    assert info["difference_sd"] == pytest.approx(np.std(logs, ddof=1))
    others = intervals[(intervals["budget"] != "smoke") | (intervals["comparison_hash"] != "a")]
    assert others["sampler"].tolist() == ["edm", "edm"] and (others["pairs"] == 0).all()
    write_run(tmp_path, "bfashion", "laplace", 5, [(10, 50.0), (20, 30.0)], comparison="a")
    laplace = by_sampler(comparison_intervals(load_records(tmp_path)))["laplace"]
    assert verdict(laplace) == "no seed in common with edm: no pairs"


@pytest.fixture
def three_pairs(tmp_path: Path) -> Path:
    """EDM finals 10, 12, 14 at 20 kimg. InfoNoise better per seed (7, 9.5, 10.5), reaching EDM's seed-k
    final at 10, 8, 12.5 kimg (ratios 2, 2.5, 1.6: geometric mean 2); Cos worse (12, 14.5, 15.5), never
    reaching; Laplace around EDM (9, 13, 14.5), reaching in 1 of 3 pairs."""
    edm = [10.0, 12.0, 14.0]
    for seed, (target, reach, info, cos, laplace) in enumerate(
        zip(edm, [10.0, 8.0, 12.5], [7.0, 9.5, 10.5], [12.0, 14.5, 15.5], [9.0, 13.0, 14.5], strict=True)
    ):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, target)])
        write_run(tmp_path, "bfashion", "infonoise", seed, [(5, 50.0), (reach, target), (20, info)])
        write_run(tmp_path, "bfashion", "cos", seed, [(10, 50.0), (20, cos)])
        write_run(tmp_path, "bfashion", "laplace", seed, [(10, 50.0), (20, laplace)])
    return tmp_path


def common_level_log_ratio(edm: float, other: float) -> float:
    """ln r of a pair of two-point curves (10, 50), (20, final) whose other sampler ends worse than EDM: EDM
    crosses the other's final between 10 and 20 kimg (log kimg × ln FID), the other reaches it at 20."""
    crossing = math.log(10) + math.log(other / 50) / math.log(edm / 50) * math.log(2)
    return crossing - math.log(20)


def test_verdicts_against_a_declared_target_state_the_log_scale_difference_and_the_time_ratio(
    three_pairs: Path,
):
    """InfoNoise ends better in every pair: its ratio is the time to EDM's final FID. Cos ends worse in every
    pair: its ratio is observed at its own final FID, which EDM reaches first, so it "takes longer" (never
    censored, never unreachable); Laplace ends behind in 2 of 3 pairs."""
    lines = by_sampler(comparison_intervals(load_records(three_pairs), declared="edm"))
    assert {line["method"] for line in lines.values()} == {"declared"}
    d = np.log([7.0 / 10.0, 9.5 / 12.0, 10.5 / 14.0])
    half = T975[2] * d.std(ddof=1) / math.sqrt(3)
    centre = (10.0 * 12.0 * 14.0) ** (1 / 3)
    size, low, high = (centre * (1 - math.exp(x)) for x in (d.mean(), d.mean() + half, d.mean() - half))
    logs = np.log([2.0, 2.5, 1.6])
    r_low, r_high = np.exp(logs.mean() + np.array([-1, 1]) * T975[2] * logs.std(ddof=1) / math.sqrt(3))
    assert verdict(lines["infonoise"]) == (
        f"infonoise better than edm by {size:.2f} FID, 95% CI [{low:.2f}, {high:.2f}], 3 seed pairs; "
        f"reaches edm's final FID 2.00× sooner, 95% CI [{r_low:.2f}, {r_high:.2f}]"
    )
    cos = np.array(
        [common_level_log_ratio(e, c) for e, c in zip([10, 12, 14], [12, 14.5, 15.5], strict=True)]
    )
    slower = np.exp(-(cos.mean() + np.array([0, 1, -1]) * T975[2] * cos.std(ddof=1) / math.sqrt(3)))
    assert verdict(lines["cos"]).startswith("cos worse than edm by ")
    assert verdict(lines["cos"]).endswith(
        f"; takes {slower[0]:.2f}× longer to reach the worse final FID of each pair, 95% CI "
        f"[{slower[1]:.2f}, {slower[2]:.2f}]; ends behind edm's final FID in 3 of 3 pairs: run longer than "
        "20 kimg to see when it reaches it"
    )
    assert lines["cos"]["censored"] == 0 and lines["cos"]["behind"] == 3
    assert verdict(lines["laplace"]).startswith(
        "not distinguishable from edm with 3 seed pairs (FID difference"
    )
    assert "ends behind edm's final FID in 2 of 3 pairs" in verdict(lines["laplace"])
    assert verdict(lines["edm"]) == "target: declared in the study file (FID)"


def test_without_a_declared_target_every_baseline_is_compared_with_holm_adjusted_p_values(three_pairs: Path):
    """EDM and Cos both finished: InfoNoise and Laplace get a line against each, and each line's p-value is
    Holm's adjustment of the two raw paired-t p-values on the log scale."""
    from statsmodels.stats.multitest import multipletests

    intervals = comparison_intervals(load_records(three_pairs))
    info = intervals[intervals["sampler"] == "infonoise"].set_index("target_sampler")
    assert sorted(info.index) == ["cos", "edm"] and (info["method"] == "holm").all()
    assert (info["baselines"] == 2).all()
    finals = {"edm": [10.0, 12.0, 14.0], "cos": [12.0, 14.5, 15.5]}
    raw = [stats.ttest_rel(np.log([7.0, 9.5, 10.5]), np.log(finals[t])).pvalue for t in ("cos", "edm")]
    assert info.loc[["cos", "edm"], "difference_p"].to_numpy() == pytest.approx(
        multipletests(raw, method="holm")[1], rel=1e-9
    )
    against_edm = by_sampler(intervals, "edm")["infonoise"]
    assert "Holm-adjusted p = " in verdict(against_edm) and "over 2 baselines" in verdict(against_edm)
    cos = intervals[intervals["sampler"] == "cos"].iloc[0]
    assert verdict(cos) == "baseline: every other sampler is compared with it (Holm over 2)"


def write_reaching(root: Path, reach: list[float | str | None]) -> None:
    """EDM seeds end at 10, 12, … (at 20 kimg); InfoNoise's seed k reaches EDM's seed-k final at ``reach[k]``
    kimg, already at its first evaluation (2 kimg; "first"), or never (None: it ends 1 FID above it)."""
    for seed, at in enumerate(reach):
        target = 10.0 + 2 * seed
        write_run(root, "bfashion", "edm", seed, [(2, 60.0), (10, 30.0), (20, target)])
        if at is None:
            write_run(root, "bfashion", "infonoise", seed, [(2, 60.0), (20, target + 1)])
        elif at == "first":
            write_run(root, "bfashion", "infonoise", seed, [(2, target), (20, target - 3)])
        else:
            write_run(root, "bfashion", "infonoise", seed, [(2, 60.0), (at, target), (20, target - 3)])


def test_a_pair_ending_behind_the_target_is_timed_at_its_own_final_level_never_censored(tmp_path: Path):
    """InfoNoise reaches EDM's final in 2 pairs and ends 1 FID behind it in the third: that pair's ratio is
    EDM's time to InfoNoise's final over InfoNoise's (20 kimg), observed, so nothing is censored and the
    verdict says in how many pairs the sampler ends behind the target and how long the runs were."""
    write_reaching(tmp_path, [10.0, 8.0, None])
    table = statistics_table(load_records(tmp_path), declared="edm")
    row = table[table["sampler"] == "infonoise"].iloc[0]
    assert row["censored"] == "0 of 3"
    line = (
        comparison_intervals(load_records(tmp_path), declared="edm").query("sampler == 'infonoise'").iloc[0]
    )
    crossing = math.log(10) + math.log(15 / 30) / math.log(14 / 30) * math.log(2)
    logs = np.array([math.log(2.0), math.log(2.5), crossing - math.log(20)])
    assert line["ratio"].estimate == pytest.approx(math.exp(logs.mean()), rel=1e-9)
    assert line["ratio_reached"] == 3 and line["censored"] == 0 and line["behind"] == 1
    assert "ends behind edm's final FID in 1 of 3 pairs: run longer than 20 kimg" in verdict(line)


def test_a_pair_reaching_the_level_at_its_first_evaluation_is_a_lower_bound_that_raises_the_estimate(
    tmp_path: Path,
):
    """Ratios 2, 2.5, 1.6, 2 and one pair whose sampler is already at EDM's final at its first evaluation
    (2 kimg: ln r ≥ ln 10): the pair enters the likelihood as a bound, the estimate lies above the
    geometric mean of the four exact ratios (dropping it would understate the speed-up), the interval is
    bounded and its p-value consistent with it."""
    write_reaching(tmp_path, [10.0, 8.0, 12.5, 10.0, "first"])
    line = (
        comparison_intervals(load_records(tmp_path), declared="edm").query("sampler == 'infonoise'").iloc[0]
    )
    ratio = line["ratio"]
    reached = math.exp(np.mean(np.log([2.0, 2.5, 1.6, 2.0])))
    assert 0 < ratio.low < reached < ratio.estimate < ratio.high < math.inf
    assert line["censored"] == 1 and line["pairs"] == 5
    assert (ratio.low > 1) == (line["ratio_p"] < 0.05)


def line(difference: Interval, ratio: Interval | None, higher: bool = False, metric: str = "fid") -> dict:
    """A ``comparison_intervals`` line of infonoise against a declared edm with the given intervals, and
    p-values below 0.05 where they exclude no difference (0, or a ratio of 1)."""
    pairs = difference.n
    return {
        "sampler": "infonoise",
        "target_sampler": "edm",
        "metric": metric,
        "higher_is_better": higher,
        "pairs": pairs,
        "difference": difference,
        "difference_p": 0.5 if difference.covers(0.0) else 0.01,
        "ratio": ratio,
        "ratio_p": math.nan if ratio is None else (0.5 if ratio.covers(1.0) else 0.01),
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
    assert len(others) == 5 * 4 and (others["verdict"] == "1 seed: no interval; run ≥ 3 seeds").all()
    assert (others["method"] == "holm over 4").all()
    assert (table["final, 95% CI"].str.endswith("(1 seed: no interval)")).all()
    assert print_tables(str(results), fmt="md") == 0
    assert "| infonoise | 1 | 71.17 (1 seed: no interval) | logu |" in capsys.readouterr().out


def test_plan_seeds_plans_a_stated_difference_from_the_upper_bound_of_the_log_scale_spread(
    three_pairs: Path, capsys
):
    """Laplace/EDM log ratios have sd s from 3 pairs; the plan for 1 FID uses the 70% upper bound of s and
    the difference ln(1 + 1/G) at EDM's geometric mean G; without --difference the command refuses."""
    with pytest.raises(SystemExit):
        cli_main(["plan-seeds", "--results", str(three_pairs)])
    capsys.readouterr()
    assert cli_main(["plan-seeds", "--results", str(three_pairs), "--difference", "1"]) == 0
    out = capsys.readouterr().out
    d = np.log([9.0 / 10.0, 13.0 / 12.0, 14.5 / 14.0])
    bound = d.std(ddof=1) * math.sqrt(2 / stats.chi2.ppf(0.3, 2))
    assert bound == pytest.approx(spread_bound(d.std(ddof=1), 3))
    wanted = math.log1p(1 / (10.0 * 12.0 * 14.0) ** (1 / 3))
    needed = seeds_needed(wanted, bound, 0.8, holm_level(2))
    assert needed > seeds_needed(wanted, bound) > seeds_needed(wanted, d.std(ddof=1))
    assert (
        f"| laplace | edm | Holm over 2 (2.5% first step) | log | 3 | {format_value(d.std(ddof=1))} | "
        f"{format_value(bound)} | {format_value(wanted)} | {needed} |"
    ) in out
    assert cli_main(["plan-seeds", "--results", str(three_pairs), "--difference", "1", "--speedup", "1"]) == 2
    assert "--speedup 1: give the speed-up worth detecting" in capsys.readouterr().err
    assert (
        cli_main(["plan-seeds", "--results", str(three_pairs), "--difference", "1", "--speedup", "1.5"]) == 0
    )
    assert "seeds for a 1.5× speed-up" in capsys.readouterr().out


def test_quick_bench_reports_every_cell_both_directions_the_assembly_and_the_holm_seed_plans():
    """A tiny quick run: 12 cells with PASS/FAIL, powers per direction, the symmetry table, studies written
    as records and read back through the table's assembly (some with censored pairs, all equal), the bias
    table and the seed plans for the Holm verdict."""
    from suite.measure.statistics import run

    bench = run(replications=20, seed=1, pilots=20, quick=True)
    assert len(bench.cells) == 12 and bench.cells["result"].str.match("PASS|FAIL").all()
    slower = bench.cells[bench.cells["true speed-up"] < 1]
    assert slower["power longer"].notna().all() and slower["power sooner"].isna().all()
    assert set(bench.symmetry["seeds"]) == {5}
    checked, censored, differences = bench.assembly
    assert checked == 8 and censored >= 1 and differences == []
    assert set(bench.bias["grid"]) == {"3", "dense", "short"} and len(bench.plans) == 8
    dense = bench.bias[(bench.bias["grid"] != "3") & bench.bias["value axis"].str.startswith("log")]
    assert dense.filter(like="bias").abs().to_numpy().max() < 0.02


def test_the_bench_fails_when_the_table_drops_censored_pairs(monkeypatch, capsys):
    """The assembly check reads written records through ``comparison_intervals``: a table that drops its
    censored pairs (as a broken ``paired_speedups`` would) no longer equals the bench, and the bench says
    FAIL."""
    from suite.measure import statistics as bench_statistics
    from suite.report import comparisons

    original = comparisons.paired_speedups

    def dropping(*args, **kwargs):
        logs, censored = original(*args, **kwargs)
        return logs[censored == 0], censored[censored == 0]

    monkeypatch.setattr(comparisons, "paired_speedups", dropping)
    checked, censored, differences = bench_statistics.assembly_check(2, np.random.default_rng(3))
    assert censored >= 1 and differences
    monkeypatch.setattr(
        bench_statistics,
        "seed_plan_power",
        lambda pilots, rng: pd.DataFrame({"result": ["PASS"]}),
    )
    assert bench_statistics.print_simulation(20, 20, 0, quick=True) == 1
    out = capsys.readouterr().out
    assert "Assembly: 8 studies" in out and "FAIL:" in out and "in the table" in out


def test_one_simulated_study_gets_the_same_numbers_from_the_bench_and_from_its_records(tmp_path: Path):
    """The bench's vectorised path and ``comparison_intervals`` on the same values written as run records
    by the test's own writer (4 baselines, InfoNoise as the candidate, 5 seeds on the dense grid, no declared
    target: Holm)."""
    from suite.measure.statistics import BASELINES, Cell, simulate_values, study_statistics

    kimg, values = simulate_values(Cell("power", "lognormal", 5, "dense", 1.5), 1, np.random.default_rng(7))
    labels = ["logu", "cos", "fm", "edm", "infonoise"]
    for j, label in enumerate(labels):
        for seed in range(5):
            write_run(tmp_path, "bfashion", label, seed, list(zip(kimg, values[0, j, seed], strict=True)))
    bench = study_statistics(kimg, values)
    lines = comparison_intervals(load_records(tmp_path))
    info = lines[lines["sampler"] == "infonoise"].set_index("target_sampler").loc[labels[:BASELINES]]
    assert info["difference_p"].to_numpy() == pytest.approx(bench["difference_p"][0], rel=1e-9)
    assert info["difference_sd"].to_numpy() == pytest.approx(bench["difference"][3][0], rel=1e-9)
    assert info["ratio_p"].to_numpy() == pytest.approx(bench["ratio_p"][0], rel=1e-9)
    for k, key in enumerate(("estimate", "low", "high")):
        ours = [getattr(ratio, key) for ratio in info["ratio"]]
        assert ours == pytest.approx(np.exp(bench["ratio"][k][0]), rel=1e-9)
    finals = lines.drop_duplicates("sampler").set_index("sampler").loc[labels, "final"]
    assert [f.estimate for f in finals] == pytest.approx(np.exp(bench["final"][0][0]), rel=1e-12)


def test_a_log_spaced_grid_covers_the_last_two_decades_at_a_constant_ratio():
    from suite.run.schedule import evaluation_points

    points = np.array(evaluation_points(200_000_000, 512, 20, "log"), dtype=float)
    steps = points / 512
    assert len(points) == 20 and points[-1] == 512 * math.ceil(200_000_000 / 512)
    assert steps[0] == math.ceil(steps[-1] / 100)
    assert np.diff(np.log(steps)) == pytest.approx(math.log(100) / 19, rel=1e-3)
    with pytest.raises(ValueError, match="eval_spacing='cubic': valid: linear, log"):
        evaluation_points(1000, 10, 5, "cubic")


# -- lines that cannot contradict themselves -----------------------------------------------------------
def test_a_comparison_whose_pairs_are_all_censored_gets_a_bound_and_no_p_value(tmp_path: Path):
    """Every InfoNoise seed is at EDM's final at its first evaluation: no crossing is observed, so the
    ratio has no estimate and no p-value, the interval is the bound the pairs put on the mean log ratio,
    and the verdict says it was not tested."""
    write_reaching(tmp_path, ["first", "first", "first"])
    line = (
        comparison_intervals(load_records(tmp_path), declared="edm").query("sampler == 'infonoise'").iloc[0]
    )
    assert math.isnan(line["ratio_p"]) and math.isnan(line["ratio"].estimate)
    assert line["ratio"].low == pytest.approx(10.0) and math.isinf(line["ratio"].high)
    assert "time to edm's final FID: not tested, 0 of 3 pairs observed both crossings" in verdict(line)
    assert "p = " not in verdict(line)
    table = statistics_table(load_records(tmp_path), declared="edm")
    assert (
        "(bound, not tested)" in table.set_index("sampler").loc["infonoise", "time-to-target ratio, 95% CI"]
    )


def test_a_narrow_likelihood_peak_gets_a_finite_interval_consistent_with_its_p_value():
    """Two nearly equal exact log ratios and one lower bound above them: the likelihood's peak is far
    narrower than the data's range, and the interval found around it is finite, holds the estimate, and
    excludes 0 exactly when p < 0.05."""
    for y, cut in (
        ([0.40, 0.40001, 0.45], [0, 0, 1]),
        ([0.40, 0.40001, 0.30], [0, 0, -1]),
        ([-0.2, -0.20002, 0.9], [0, 0, -1]),
    ):
        estimate, low, high, p = censored_normal(np.array(y), np.array(cut))
        assert np.isfinite([estimate, low, high]).all() and low <= estimate <= high, (y, low, high)
        assert (low > 0 or high < 0) == (p < 0.05), (y, low, high, p)


def test_a_constant_difference_is_stated_as_constant_without_a_p_value():
    """Paired differences with no seed variance (a fixed sampler's exact pi-tv against another's): the t
    test has nothing to test, so no p-value and the verdict says "constant"."""
    _, low, high, p = t_limits(np.array([0.3, 0.3, 0.3]))
    assert math.isnan(p) and low == high == pytest.approx(0.3)
    constant = line(Interval(0.3, 0.3, 0.3, 3), None) | {"difference_sd": 0.0, "difference_p": math.nan}
    assert (
        verdict(constant)
        == "constant: infonoise − edm = +0.3 FID in each of 3 seed pairs (no seed variance: no test)"
    )


def test_a_diverged_seed_is_named_as_an_outlier_on_the_log_scale_and_kept(tmp_path: Path):
    """Eight EDM seeds near 10 FID and eight InfoNoise seeds near 9, one of which doubled (a diverged run):
    the verdict names that seed as an outlier on the log scale, and the seed stays in every number; seven
    seeds are too few to name one."""
    edm = [10.0, 10.4, 9.8, 10.1, 10.3, 9.9, 10.2, 10.0]
    info = [9.0, 9.2, 18.6, 8.9, 9.1, 9.3, 8.8, 9.05]
    for seed, (e, i) in enumerate(zip(edm, info, strict=True)):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, e)])
        write_run(tmp_path, "bfashion", "infonoise", seed, [(10, 50.0), (20, i)])
    line = (
        comparison_intervals(load_records(tmp_path), declared="edm").query("sampler == 'infonoise'").iloc[0]
    )
    assert line["outliers"] == (2,) and line["final"].n == 8
    assert verdict(line).endswith("; infonoise's seed 2 an outlier on the log scale: check the run")
    assert outliers(np.log(info[:7])).tolist() == [False] * 7
