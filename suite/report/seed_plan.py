"""How many seeds a comparison needs.

Seeds a difference needs (``seeds_needed``, ``suite plan-seeds``): the standard paired-t sample size for a
difference D the user states (never the one just measured: that is post hoc power) on the metric's scale,
from an upper confidence bound of the pilot's standard deviation, s·√((n−1)/χ²_{1−γ, n−1}) with γ = 0.8
(Browne 1995, "On the use of a pilot sample for sample size determination", Stat. Med. 14: 1933–1940):
planning from s itself falls short of the nominal power on average; from the 80% upper bound the mean
power is ≥ 0.8 (``suite bench statistics``, seed-plan table in docs/statistics.md).
The smallest n whose power P(|T| > t_{1−α/2, n−1}), T ~ noncentral t(n − 1, D·√n/s), reaches 1 − β is
R's ``power.t.test(type = "paired", strict = TRUE)`` rounded up (D = s: 10 seeds at power 0.8); the power
is statsmodels' ``TTestPower``, searched over whole n (its own solver returns NaN where n falls below 2)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import pandas as pd
from scipy import stats

from suite.report.comparisons import SEEDS_ADVISED, comparison_intervals, in_paper_order, pairs_text
from suite.report.rendering import NO_ROWS, render
from suite.report.rows import (
    TARGET_BASELINES,
    format_value,
    load_records,
    metric_of,
    parse_targets,
)
from suite.report.statistics import CONFIDENCE, check_confidence
from suite.report.time_to_target import from_scale, to_scale

POWER = 0.8


SPREAD_CONFIDENCE = 0.8


def paired_t_power(n: int, difference: float, spread: float, confidence: float = CONFIDENCE) -> float:
    """Power of the two-sided paired t test with n pairs: P(|T| > t_{(1+c)/2, n−1}) with T noncentral t
    of n − 1 degrees of freedom and noncentrality difference·√n/spread (statsmodels' ``TTestPower``, both
    tails counted)."""
    from statsmodels.stats.power import TTestPower

    effect = abs(difference) / spread
    power = float(TTestPower().power(effect, n, 1.0 - confidence, alternative="two-sided"))
    if math.isnan(power) and effect * math.sqrt(n) > stats.t.ppf((1.0 + confidence) / 2.0, n - 1):
        return 1.0  # the noncentral t gives NaN far in the tail, where the power is 1
    return power


def spread_bound(spread: float, pairs: int, level: float = SPREAD_CONFIDENCE) -> float:
    """The one-sided ``level`` upper confidence bound of a standard deviation s measured from ``pairs``
    values: s·√((n−1)/χ²_{1−level, n−1}) (Browne 1995)."""
    df = pairs - 1
    return spread * math.sqrt(df / float(stats.chi2.ppf(1.0 - level, df)))


def seeds_needed(
    difference: float, spread: float, power: float = POWER, confidence: float = CONFIDENCE
) -> int:
    """Smallest number of seed pairs n ≥ 2 whose paired t test detects ``difference`` with ``power``, given
    the standard deviation ``spread`` of the paired differences (see the module docstring)."""
    if not (math.isfinite(difference) and difference != 0):
        raise ValueError(f"the difference to detect must be finite and non-zero, got {difference!r}")
    if not (math.isfinite(spread) and spread > 0):
        raise ValueError(
            f"the spread of the paired differences must be positive and finite, got {spread!r}; "
            f"it is measured from at least 2 seed pairs"
        )
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1 (e.g. 0.8), got {power!r}")
    check_confidence(confidence)
    z = stats.norm.ppf((1.0 + confidence) / 2.0) + stats.norm.ppf(power)
    n = max(2, math.ceil((z * spread / abs(difference)) ** 2))
    while n > 2 and paired_t_power(n - 1, difference, spread, confidence) >= power:
        n -= 1
    while paired_t_power(n, difference, spread, confidence) < power:
        n += 1
    return n


def _on_scale(difference: float, centre: float, scale: str) -> float:
    """A difference stated in the metric's units, on the scale at the target's centre g⁻¹(ū_T): the smaller
    of |g(x + D) − g(x)| and |g(x − D) − g(x)| (where defined), so the plan is for the harder direction."""
    x = float(from_scale(centre, scale))
    steps = [abs(float(to_scale(x + sign * difference, scale)) - centre) for sign in (1.0, -1.0)]
    finite = [step for step in steps if math.isfinite(step)]
    return min(finite) if finite else math.nan


def seed_plan(
    df: pd.DataFrame,
    difference: float,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    power: float = POWER,
    declared: str | None = None,
    level: float = SPREAD_CONFIDENCE,
) -> pd.DataFrame:
    """Per comparison line other than a target's own: the seed pairs run, the sd of the paired differences
    on the metric's scale, its ``level`` upper confidence bound, the stated ``difference`` (metric units) on
    that scale at the target's centre, and the seeds it needs at ``power`` (``seeds_needed`` from the
    bound)."""
    if not (math.isfinite(difference) and difference != 0):
        raise ValueError(f"the difference to detect must be finite and non-zero, got {difference!r}")
    intervals = comparison_intervals(df, budget, targets, declared)
    lines = []
    for _, line in intervals.iterrows():
        d = line["difference"]
        if d is None:
            continue
        spread, pairs, scale = float(line["difference_sd"]), int(line["pairs"]), str(line["scale"])
        final = line["final"]
        centre = float(to_scale(final.estimate - d.estimate, scale)) if pairs else math.nan
        wanted = _on_scale(abs(difference), centre, scale) if pairs else math.nan
        bound = spread_bound(spread, pairs, level) if pairs > 1 else math.nan
        if pairs < 2:
            needed = f"spread unknown from {pairs_text(pairs)}: run ≥ {SEEDS_ADVISED} seeds"
        elif spread == 0:
            needed = "no spread measured (identical paired differences)"
        elif not math.isfinite(wanted) or wanted == 0:
            needed = f"a difference of {difference:g} is not defined on the {scale} scale here"
        else:
            needed = str(seeds_needed(wanted, bound, power))
        lines.append(
            {
                "task": line["row"],
                "budget": line["budget"],
                "metric": metric_of(line),
                "sampler": line["sampler"],
                "target": line["target_sampler"],
                "scale": scale,
                "seed pairs": pairs,
                "sd of differences": format_value(spread) if pairs > 1 else "–",
                f"{100 * level:g}% upper bound of the sd": format_value(bound) if pairs > 1 else "–",
                "difference on the scale": format_value(wanted) if pairs else "–",
                f"seeds needed (power {power:g})": needed,
            }
        )
    return in_paper_order(pd.DataFrame(lines))


def plan_caption(power: float, difference: float, level: float = SPREAD_CONFIDENCE) -> str:
    """Caption of the ``suite plan-seeds`` table, naming the method and the difference it plans for."""
    return (
        f"Seeds needed to detect a difference of {abs(difference):g} (metric units, stated in advance) "
        f"against the target with power {power:g} in a two-sided paired t test at the 5% level, on the "
        "metric's comparison scale (the difference is converted there at the target's centre, in the "
        "harder direction): the standard paired-t sample size (noncentral t power) from the "
        f"{100 * level:g}% upper confidence bound of the standard deviation of the paired differences "
        "measured so far (Browne 1995), so that the plan delivers its power on average"
    )


def print_seed_plan(
    results: str, difference: float, power: float = 0.8, target_samplers: str | None = None
) -> int:
    """``suite plan-seeds``: print the seed plan of the records under ``results`` for a stated
    ``difference`` at ``power``, against ``target_samplers`` (a comma list; default the paper's baselines)."""
    df = load_records(results)
    if df.empty:
        print(f"no records under {results}", file=sys.stderr)
        return 1
    targets = parse_targets(target_samplers)
    plan = seed_plan(df, difference, None, targets, power)
    print(render(plan, "md", plan_caption(power, difference), NO_ROWS))
    return 0
