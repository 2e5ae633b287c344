"""How many seeds a comparison needs.

Seeds a difference needs (``seeds_needed``, ``suite plan-seeds``): the standard paired-t sample size for a
difference D the user states (never the one just measured: that is post hoc power) on the metric's scale,
from an upper confidence bound of the pilot's standard deviation, s·√((n−1)/χ²_{1−γ, n−1}) (Browne 1995,
"On the use of a pilot sample for sample size determination", Stat. Med. 14: 1933–1940): planning from s
itself falls short of the nominal power on average. γ = 0.7 is the smallest of 0.5, 0.6, 0.7, 0.8 whose
plans for the Holm verdict over 4 baselines deliver a mean power ≥ 0.8 from 3- and 5-pair pilots (0.84–0.89
measured; γ = 0.8 gives 0.89–0.95 with plans 1.3–1.7× larger, γ = 0.6 falls to 0.795): ``suite bench
statistics``, seed-plan table in docs/statistics.md. The plan is for the verdict the table prints: the
declared target at 5%, or Holm over m baselines at 5%/m, the level of Holm's first step.
The smallest n whose power P(|T| > t_{1−α/2, n−1}), T ~ noncentral t(n − 1, D·√n/s), reaches 1 − β is
R's ``power.t.test(type = "paired", strict = TRUE)`` rounded up (D = s: 10 seeds at power 0.8); the power
is statsmodels' ``TTestPower``, searched over whole n (its own solver returns NaN where n falls below 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
from scipy import stats

from suite.report.comparisons import SEEDS_ADVISED, comparison_intervals, in_paper_order, pairs_text
from suite.report.rows import (
    TARGET_BASELINES,
    format_value,
    metric_of,
)
from suite.report.statistics import CONFIDENCE, check_confidence
from suite.report.time_to_target import from_scale, to_scale

POWER = 0.8


SPREAD_CONFIDENCE = 0.7


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


def holm_level(comparisons: int, confidence: float = CONFIDENCE) -> float:
    """The confidence a plan for a Holm verdict over ``comparisons`` lines uses: 1 − α/m, the level of
    Holm's first step (Bonferroni's), which every later step relaxes, so a plan at it reaches its power
    under Holm too."""
    return 1.0 - (1.0 - confidence) / max(1, comparisons)


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
    speedup: float | None = None,
) -> pd.DataFrame:
    """Per comparison line other than a target's own: the verdict planned for (the declared target at
    5%, or Holm over the m baselines at 5%/m: ``holm_level``), the seed pairs run, the sd of the paired
    differences on the metric's scale, its ``level`` upper confidence bound, the stated ``difference``
    (metric units) on that scale at the target's centre, and the seeds it needs at ``power``
    (``seeds_needed`` from the bound); with ``speedup``, also the seeds the time ratio needs to detect it,
    from the sd of the pairs' log ratios."""
    if not (math.isfinite(difference) and difference != 0):
        raise ValueError(f"the difference to detect must be finite and non-zero, got {difference!r}")
    if speedup is not None and not (math.isfinite(speedup) and speedup > 0 and speedup != 1):
        raise ValueError(f"the speed-up to detect must be positive, finite and not 1, got {speedup!r}")
    intervals = comparison_intervals(df, budget, targets, declared)
    lines = []
    for _, line in intervals.iterrows():
        d = line["difference"]
        if d is None:
            continue
        spread, pairs, scale = float(line["difference_sd"]), int(line["pairs"]), str(line["scale"])
        m = int(line["baselines"]) if line["method"] == "holm" else 1
        confidence = holm_level(m)
        final = line["final"]
        centre = float(to_scale(final.estimate - d.estimate, scale)) if pairs else math.nan
        wanted = _on_scale(abs(difference), centre, scale) if pairs else math.nan
        needed = _needed(wanted, spread, pairs, power, confidence, level, f"a difference of {difference:g}")
        plan = {
            "task": line["row"],
            "budget": line["budget"],
            "metric": metric_of(line),
            "sampler": line["sampler"],
            "target": line["target_sampler"],
            "verdict planned for": f"Holm over {m} ({100 * (1 - confidence):.3g}% first step)"
            if line["method"] == "holm"
            else "declared target (5%)",
            "scale": scale,
            "seed pairs": pairs,
            "sd of differences": format_value(spread) if pairs > 1 else "–",
            f"{100 * level:g}% upper bound of the sd": format_value(spread_bound(spread, pairs, level))
            if pairs > 1
            else "–",
            "difference on the scale": format_value(wanted) if pairs else "–",
            f"seeds needed (power {power:g})": needed,
        }
        if speedup is not None:
            ratio = line["ratio"]
            ratio_sd = float(line.get("ratio_sd", math.nan))
            plan[f"seeds for a {speedup:g}× speed-up"] = (
                _needed(
                    abs(math.log(speedup)),
                    ratio_sd,
                    int(line["ratio_reached"]),
                    power,
                    confidence,
                    level,
                    f"a speed-up of {speedup:g}",
                )
                if ratio is not None
                else "–"
            )
        lines.append(plan)
    return in_paper_order(pd.DataFrame(lines))


def _needed(
    wanted: float, spread: float, pairs: int, power: float, confidence: float, level: float, what: str
) -> str:
    """The seeds a stated effect on the scale needs, from the ``level`` upper bound of ``spread`` measured
    from ``pairs`` values, or why there is no plan."""
    if pairs < 2:
        return f"spread unknown from {pairs_text(pairs)}: run ≥ {SEEDS_ADVISED} seeds"
    if spread == 0:
        return "no spread measured (identical paired values)"
    if not math.isfinite(wanted) or wanted == 0:
        return f"{what} is not defined on this scale here"
    return str(seeds_needed(wanted, spread_bound(spread, pairs, level), power, confidence))


def plan_caption(
    power: float, difference: float, level: float = SPREAD_CONFIDENCE, speedup: float | None = None
) -> str:
    """Caption of the ``suite plan-seeds`` table, naming the verdict, the method and what it plans for."""
    ratio = (
        f"; the time ratio's column plans for a {speedup:g}× speed-up the same way, from the sd of the "
        "observed log ratios"
        if speedup is not None
        else ""
    )
    return (
        f"Seeds needed to detect a difference of {abs(difference):g} (metric units, stated in advance) "
        f"against the target with power {power:g} for the verdict the table prints: a two-sided paired t "
        "test at 5% against a declared target, or at 5%/m, the first step of Holm's adjustment over the m "
        "baselines (every later step is laxer), on the metric's comparison scale (the difference is "
        "converted there at the target's centre, in the harder direction): the standard paired-t sample "
        f"size (noncentral t power) from the {100 * level:g}% upper confidence bound of the standard "
        f"deviation of the paired differences measured so far (Browne 1995){ratio}"
    )
