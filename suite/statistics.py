"""How sure a comparison is: 95% confidence intervals over seeds, paired differences against the target
baseline, the time-to-target ratio over seed pairs, a verdict per sampler, and the seeds a difference needs.

Design. Seed k of every sampler in one comparison starts from the same initial weights
(``torch.manual_seed(seed)`` in ``suite.state``) and draws the same data order (``suite.schedule``), so
samplers are compared in pairs by seed: pair k is seed k of the sampler and seed k of the target, inside one
comparison row of ``suite.table`` (task × budget × comparison hash × metric × data kind × origin). Runs of
another budget or comparison hash are another row and never pair. The target is the one of the
time-to-target table: the sampler of ``TARGET_BASELINES`` (LogU, Cos, FM, EDM) with the best final
seed-mean quality (``suite.table.time_to_target``).

Intervals (confidence 1 − α = 0.95; quantiles from ``scipy.stats.t``):

* Final quality of a sampler, n seeds x_1…x_n: the t interval of the mean,
  x̄ ± t_{1−α/2, n−1}·s/√n with s the sample standard deviation (ddof = 1) (Student 1908; any statistics
  text). Exact when the seed-to-seed spread is normal, and robust for the mean of a few seeds; with one seed
  there is no interval.
* Paired difference d_k = x_k(sampler) − x_k(target) over the seeds both ran: the same t interval on the
  d_k (the paired t interval). Pairing removes the spread the two share through weights and data order.
* Time-to-target ratio of pair k, r_k = k*(T_k)/k*(S_k) (``suite.table.paired_speedups``: the processed
  examples the target's seed k needs to first reach its own final value, over those the sampler's seed k
  needs to reach it): the geometric mean exp(mean ln r_k) with the t interval of the mean of ln r_k,
  exponentiated, the interval for a ratio endpoint used in bioequivalence (Schuirmann 1987; FDA guidance
  "Statistical Approaches to Establishing Bioequivalence", 2001). It treats "2× sooner" and "2× later"
  symmetrically and is exact when ln r_k is normal. A pair whose sampler never reaches the target has no
  finite ratio, so then there is no ratio interval (the verdict says how many pairs never reached).

Why no bootstrap. A bootstrap interval (``scipy.stats.bootstrap``) assumes the resamples of the observed
seeds stand for the seed distribution, which fails at the seed counts a benchmark affords: on 1 000
log-normal studies (ln r ~ N(ln 1.5, 0.3²)), the 95% percentile / BCa bootstrap of the geometric mean
(999 resamples) covered the true ratio in 75.7 % / 73.6 % of studies with 3 pairs, 82.5 % / 83.3 % with 5
and 91.2 % / 90.7 % with 10, against 94.5 %, 93.8 % and 95.3 % for the t interval on ln r. The t interval
is used throughout.

Verdict of a sampler S against the target T (``verdict``): with one seed pair "1 seed: no interval; run ≥
3 seeds" (with 2 the half-width is t_{0.975,1} = 12.7 standard errors); otherwise "S better than T by d
FID, 95% CI [a, b], n seed pairs" (or "worse"), or "not distinguishable from T with n seed pairs" when the
interval of the paired difference covers 0; then the time to T's final quality: "reaches T's final FID
1.60× sooner, 95% CI [a, b]" (or "takes … longer"), or "not distinguishable" when the ratio's interval
covers 1.

Seeds a difference needs (``seeds_needed``, ``suite plan-seeds``): the standard paired-t sample size. For a
difference D to detect, the measured standard deviation s of the paired differences, a two-sided test at
level α and power 1 − β, the smallest n whose power

    P(|T| > t_{1−α/2, n−1}),   T ~ noncentral t(df = n − 1, noncentrality D·√n/s),

reaches 1 − β, found by iterating n (with the t quantile at each n) from the normal approximation
n₀ = ((z_{1−α/2} + z_{1−β})·s/D)². This is R's ``power.t.test(type = "paired", strict = TRUE)`` rounded up
(D = s: 10 seeds at power 0.8; D = s/2: 34). s comes from the seeds already run, so with few pairs it is
itself uncertain.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from suite.table import (
    NO_ROWS,
    ROW_KEYS,
    TARGET_BASELINES,
    final_rows,
    finished,
    format_value,
    load_records,
    metric_of,
    paired_speedups,
    parse_targets,
    render,
    same_row,
    sampler_order,
    sort_rows,
    time_to_target,
    with_row_labels,
)

CONFIDENCE = 0.95
POWER = 0.8
ONE_SEED = "1 seed: no interval"
SEEDS_ADVISED = 3


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval from n values; ``low``/``high`` are NaN below 2 values."""

    estimate: float
    low: float
    high: float
    n: int

    @property
    def defined(self) -> bool:
        return self.n >= 2 and math.isfinite(self.low) and math.isfinite(self.high)

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies in [low, high] (an undefined interval covers everything)."""
        return not self.defined or self.low <= value <= self.high

    def text(self, scale: float | None = None, signed: bool = False) -> str:
        """ "71.17 [68.20, 74.14]", or "71.17 (1 seed: no interval)"; ``signed`` writes "+" before positive
        numbers (differences); ``scale`` (default the estimate) picks the decimals as
        ``suite.table.format_value``."""
        at = abs(self.estimate) if scale is None else scale

        def number(x: float) -> str:
            return ("+" if signed and x > 0 else "") + format_value(x, at)

        if self.n == 0:
            return "–"
        if not self.defined:
            return f"{number(self.estimate)} ({ONE_SEED})"
        return f"{number(self.estimate)} [{number(self.low)}, {number(self.high)}]"


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1 (e.g. 0.95), got {confidence!r}")


def t_interval(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """Mean of ``values`` with the t interval x̄ ± t_{(1+c)/2, n−1}·s/√n (no interval for n < 2)."""
    _check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    n = x.size
    mean = float(x.mean()) if n else math.nan
    if n < 2:
        return Interval(mean, math.nan, math.nan, n)
    half = float(stats.t.ppf((1.0 + confidence) / 2.0, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def t_band(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """(low, high) of the 95% ``t_interval`` of the mean of ``values``: the band of the quality figure, in the
    form seaborn's ``errorbar`` callable takes (NaN, i.e. no band, below 2 values)."""
    interval = t_interval(values)
    return interval.low, interval.high


def ratio_interval(ratios: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """Geometric mean of positive ``ratios`` with the exponentiated t interval of the mean of their logs."""
    r = np.asarray(ratios, dtype=float)
    if not (np.isfinite(r) & (r > 0)).all():
        raise ValueError(f"ratios must be positive and finite, got {r.tolist()}")
    logs = t_interval(np.log(r), confidence)
    return Interval(math.exp(logs.estimate), math.exp(logs.low), math.exp(logs.high), logs.n)


# -- sample size -------------------------------------------------------------------------------------
def paired_t_power(n: int, difference: float, spread: float, confidence: float = CONFIDENCE) -> float:
    """Power of the two-sided paired t test with n pairs: P(|T| > t_{(1+c)/2, n−1}) with T noncentral t
    of n − 1 degrees of freedom and noncentrality difference·√n/spread."""
    df, shift = n - 1, abs(difference) * math.sqrt(n) / spread
    critical = stats.t.ppf((1.0 + confidence) / 2.0, df)
    return float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


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
    _check_confidence(confidence)
    z = stats.norm.ppf((1.0 + confidence) / 2.0) + stats.norm.ppf(power)
    n = max(2, math.ceil((z * spread / abs(difference)) ** 2))
    while n > 2 and paired_t_power(n - 1, difference, spread, confidence) >= power:
        n -= 1
    while paired_t_power(n, difference, spread, confidence) < power:
        n += 1
    return n


# -- the comparison ----------------------------------------------------------------------------------
INTERVAL_COLUMNS = [
    "row",
    *ROW_KEYS,
    "sampler",
    "target_sampler",
    "final",
    "difference",
    "difference_sd",
    "ratio",
    "pairs",
    "ratio_reached",
]


def _seed_finals(final: pd.DataFrame) -> dict[str, pd.Series]:
    """Per sampler label, its final value per seed (mean over duplicate rows of one seed)."""
    return {
        str(sampler): part.groupby("seed")["value"].mean().sort_index()
        for sampler, part in final.groupby("sampler")
    }


def comparison_intervals(
    df: pd.DataFrame, budget: str | None = None, targets: Sequence[str] = TARGET_BASELINES
) -> pd.DataFrame:
    """One line per comparison row × sampler: ``final`` (``Interval`` of the final quality over seeds) and,
    against the row's target (the time-to-target target of ``targets``; "" when none of them finished),
    ``difference`` (paired t ``Interval`` of sampler − target over the seeds both ran), ``difference_sd``
    (standard deviation of those differences, NaN below 2 pairs), ``ratio`` (``ratio_interval`` of the
    time-to-target ratios; ``None`` when a pair never reached), ``pairs`` and ``ratio_reached`` (pairs
    whose sampler reached the target's final value). The target's own line and lines without a target
    carry ``None`` and 0 there."""
    rows = with_row_labels(finished(df, budget))
    if rows.empty:
        return pd.DataFrame(columns=INTERVAL_COLUMNS)
    final = final_rows(rows)
    target_lines = time_to_target(df, budget, targets)
    lines = []
    for _, part in final.groupby(ROW_KEYS, sort=False, dropna=False):
        first = part.iloc[0]
        higher = bool(first["higher_is_better"])
        mine = target_lines[same_row(target_lines, first)] if not target_lines.empty else target_lines
        target = str(mine["target_sampler"].iloc[0]) if not mine.empty else ""
        finals = _seed_finals(part)
        evaluations = rows[same_row(rows, first)]
        for sampler in sampler_order(list(finals)):
            line = {
                "row": first["row"],
                **first[ROW_KEYS].to_dict(),
                "sampler": sampler,
                "target_sampler": target,
                "final": t_interval(finals[sampler].to_numpy()),
                "difference": None,
                "difference_sd": math.nan,
                "ratio": None,
                "pairs": 0,
                "ratio_reached": 0,
            }
            if target and sampler != target:
                seeds = finals[sampler].index.intersection(finals[target].index)
                differences = (finals[sampler][seeds] - finals[target][seeds]).to_numpy()
                ratios, pairs = paired_speedups(evaluations, target, sampler, higher)
                complete = pairs >= 1 and len(ratios) == pairs and all(r > 0 for r in ratios)
                line |= {
                    "difference": t_interval(differences),
                    "difference_sd": float(np.std(differences, ddof=1)) if len(seeds) > 1 else math.nan,
                    "ratio": ratio_interval(ratios) if complete else None,
                    "pairs": len(seeds),
                    "ratio_reached": len(ratios),
                }
            lines.append(line)
    return pd.DataFrame(lines, columns=INTERVAL_COLUMNS)


def verdict(line: Mapping) -> str:
    """The plain-words verdict of one ``comparison_intervals`` line (see the module docstring)."""
    sampler, target = line["sampler"], line["target_sampler"]
    metric = str(line["metric"]).upper()
    level = f"{100 * CONFIDENCE:g}%"
    if not target:
        return "no target sampler finished in this row"
    if sampler == target:
        return f"target: the best final {metric} among the target samplers"
    pairs = int(line["pairs"])
    if pairs == 0:
        return f"no seed in common with {target}: no pairs"
    if pairs == 1:
        return f"{ONE_SEED}; run ≥ {SEEDS_ADVISED} seeds"
    d: Interval = line["difference"]
    if d.covers(0.0):
        text = (
            f"not distinguishable from {target} with {pairs} seed pairs ({metric} difference "
            f"{d.estimate:+.2f}, {level} CI [{d.low:+.2f}, {d.high:+.2f}])"
        )
    else:
        # the gain g = ±d is positive when the sampler is better; "worse by" states −g and its interval
        sign = 1.0 if line["higher_is_better"] else -1.0
        gain = sorted([sign * d.low, sign * d.high])
        better = sign * d.estimate > 0
        word, low, high = ("better", *gain) if better else ("worse", -gain[1], -gain[0])
        size = abs(d.estimate)
        text = (
            f"{sampler} {word} than {target} by {format_value(size)} {metric}, {level} CI "
            f"[{format_value(low, size)}, {format_value(high, size)}], {pairs} seed pairs"
        )
    reached = int(line["ratio_reached"])
    if reached < pairs:
        return f"{text}; {target}'s final {metric} never reached in {_never(reached, pairs)}"
    r: Interval | None = line["ratio"]
    if r is None or not r.defined:
        return text
    if r.covers(1.0):
        return (
            f"{text}; time to {target}'s final {metric} not distinguishable ({r.estimate:.2f}×, "
            f"{level} CI [{r.low:.2f}, {r.high:.2f}])"
        )
    if r.estimate > 1:
        return (
            f"{text}; reaches {target}'s final {metric} {r.estimate:.2f}× sooner, {level} CI "
            f"[{r.low:.2f}, {r.high:.2f}]"
        )
    return (
        f"{text}; takes {1 / r.estimate:.2f}× longer to reach {target}'s final {metric}, {level} CI "
        f"[{1 / r.high:.2f}, {1 / r.low:.2f}]"
    )


def _in_paper_order(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in the table's order of comparisons (``suite.table``), samplers in their order within each."""
    if table.empty:
        return table
    order = sort_rows(table[["task", "budget"]].drop_duplicates())
    ranked = table.merge(order.assign(_rank=range(len(order))), on=["task", "budget"])
    return ranked.sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


def _pairs(n: int) -> str:
    return f"{n} seed pair{'s' * (n != 1)}"


def _never(reached: int, pairs: int) -> str:
    """ "1 of 3 seed pairs": the pairs whose sampler never reached the target's final value."""
    return f"{pairs - reached} of {_pairs(pairs)}"


def statistics_table(
    df: pd.DataFrame, budget: str | None = None, targets: Sequence[str] = TARGET_BASELINES
) -> pd.DataFrame:
    """String table of ``comparison_intervals``: one line per comparison row × sampler with the final
    quality and its 95% CI, the paired difference to the target and the time-to-target ratio with theirs,
    and the verdict."""
    intervals = comparison_intervals(df, budget, targets)
    lines = []
    for _, line in intervals.iterrows():
        d, r = line["difference"], line["ratio"]
        pairs = int(line["pairs"])
        difference, ratio = "–", "–"
        counted = f", {_pairs(pairs)}" if pairs > 1 else ""
        if pairs:
            difference = d.text(abs(line["final"].estimate), signed=True) + counted
        if r is not None:
            interval = f" [{r.low:.2f}, {r.high:.2f}]" if r.defined else f" ({ONE_SEED})"
            ratio = f"{r.estimate:.2f}×{interval}{counted}"
        elif pairs:
            ratio = f"never reached in {_never(int(line['ratio_reached']), pairs)}"
        lines.append(
            {
                "task": line["row"],
                "budget": line["budget"],
                "metric": metric_of(line),
                "sampler": line["sampler"],
                "seeds": line["final"].n,
                "final, 95% CI": line["final"].text(),
                "target": line["target_sampler"] or "–",
                "sampler − target (paired by seed), 95% CI": difference,
                "time-to-target ratio, 95% CI": ratio,
                "verdict": verdict(line),
            }
        )
    return _in_paper_order(pd.DataFrame(lines))


STATISTICS_CAPTION = (
    "How sure each comparison is: final quality with its 95% confidence interval over seeds (t interval of "
    "the mean, x̄ ± t·s/√n; none with one seed); the paired difference sampler − target over the seeds both "
    "ran (seed k of both starts from the same weights and data order; t interval of the mean difference); "
    "the time-to-target ratio k_target/k_sampler over the same seed pairs (geometric mean with the t "
    "interval of its logarithm); the target is the time-to-target table's (best final seed mean of the "
    "target samplers, by default the paper's fixed baselines); a difference whose interval covers 0 (a "
    "ratio whose interval covers 1) is not distinguishable. `suite plan-seeds` says how many seeds a "
    "difference needs"
)


# -- seed planning -----------------------------------------------------------------------------------
def seed_plan(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    difference: float | None = None,
    power: float = POWER,
) -> pd.DataFrame:
    """Per comparison row × sampler other than the target: the seed pairs run, the measured mean paired
    difference and its standard deviation, the difference to detect (``difference`` in the metric's units,
    default the measured one) and the seeds it needs at ``power`` (``seeds_needed``)."""
    intervals = comparison_intervals(df, budget, targets)
    lines = []
    for _, line in intervals.iterrows():
        d = line["difference"]
        if d is None:
            continue
        spread, pairs = float(line["difference_sd"]), int(line["pairs"])
        wanted = abs(d.estimate) if difference is None else abs(difference)
        if pairs < 2:
            needed = f"spread unknown from {_pairs(pairs)}: run ≥ {SEEDS_ADVISED} seeds"
        elif spread == 0:
            needed = "no spread measured (identical paired differences)"
        elif wanted == 0:
            needed = "a difference of 0 cannot be detected: give --difference"
        else:
            needed = str(seeds_needed(wanted, spread, power))
        lines.append(
            {
                "task": line["row"],
                "budget": line["budget"],
                "metric": metric_of(line),
                "sampler": line["sampler"],
                "target": line["target_sampler"],
                "seed pairs": pairs,
                "mean of sampler − target": format_value(d.estimate) if pairs else "–",
                "sd of differences": format_value(spread) if pairs > 1 else "–",
                "difference to detect": format_value(wanted) if pairs else "–",
                f"seeds needed (power {power:g})": needed,
            }
        )
    return _in_paper_order(pd.DataFrame(lines))


def plan_caption(power: float, difference: float | None) -> str:
    """Caption of the ``suite plan-seeds`` table, naming the method and the difference it plans for."""
    size = "the measured mean paired difference" if difference is None else f"{abs(difference):g}"
    return (
        f"Seeds needed to detect a difference of {size} (metric units) against the target with power "
        f"{power:g} in a two-sided paired t test at the 5% level: the standard paired-t sample size "
        "(noncentral t power, iterating n with the t quantile), from the measured standard deviation of the "
        "paired differences (seed k of sampler and target), itself uncertain with few pairs"
    )


def plan_main(args: argparse.Namespace) -> int:
    """``suite plan-seeds``: print the seed plan of the records under ``args.results``."""
    df = load_records(args.results)
    if df.empty:
        print(f"no records under {args.results}", file=sys.stderr)
        return 1
    targets = parse_targets(args.target_samplers)
    plan = seed_plan(df, None, targets, args.difference, args.power)
    print(render(plan, "md", plan_caption(args.power, args.difference), NO_ROWS))
    return 0
