"""How sure a comparison is: 95% confidence intervals over seeds on the metric's own scale, paired
comparisons against a target fixed in advance (or against every baseline with Holm's correction), the
time-to-target ratio over seed pairs with right-censoring, a verdict per comparison, and seed planning.

Design. Seed k of every sampler in one comparison starts from the same initial weights
(``torch.manual_seed(seed)`` in ``suite.run.state``) and draws the same data order (``suite.stream``), so
samplers are compared in pairs by seed: pair k is seed k of the sampler and seed k of the target, inside one
comparison row of ``suite.report.table`` (task × budget × comparison hash × metric × data kind × origin).

Target (``target_method``). A study file may declare ``target: <sampler label>`` (``suite.launch.study``):
that sampler is the target of every row it finished in, whatever its final value ("declared"). Without a
declaration, picking the best of the baselines on the very seeds it is compared on favours it (winner's
curse: an equally good candidate is called "worse" more often than the nominal rate), so every
sampler is compared with *each* baseline of ``targets`` that finished ("holm"), one line per pair of
samplers, and its verdicts use Holm's step-down adjusted p-values over those m baselines (Holm 1979;
``statsmodels.stats.multitest.multipletests(method="holm")`` is the reference ``holm`` is tested against),
separately for the quality difference and for the time ratio. Intervals stay per-comparison 95% intervals.

Scale (``suite.report.time_to_target.scale_of``, declared per metric by ``MetricSpec.scale``). Positive
right-skewed metrics (FID, Sei-FID, Fréchet distances, SP-MSE) are compared on g = ln, bounded ones (MAUVE, in
(0, 1])
on g = logit, the rest on g = identity; every number is reported back in the metric's units:

* Final quality of a sampler, n seeds: g⁻¹ of the t interval ū ± t_{(1+c)/2, n−1}·s_u/√n of u_k = g(x_k)
  (on ln: the geometric mean with its interval; Student 1908). With one seed there is no interval.
* Paired comparison: d_k = g(x_k(sampler)) − g(x_k(target)); the t interval (m, lo, hi) of the mean d,
  with its two-sided p-value, is reported as the difference at the target's centre ū_T (mean of its g over
  the pairs): g⁻¹(ū_T + m) − g⁻¹(ū_T) [g⁻¹(ū_T + lo) − g⁻¹(ū_T), g⁻¹(ū_T + hi) − g⁻¹(ū_T)]. On ln that is
  the ratio of geometric means e^m (paired differences of logs) times the target's geometric mean, minus
  it. On lognormal seeds the t interval on the logs is exact, where one on raw FIDs is not.
* Time-to-target ratio of pair k, r_k = k*(T_k, q_k)/k*(S_k, q_k)
  (``suite.report.time_to_target.pair_log_ratios``; q_k the target's seed-k final value on the curves'
  protocol: ``suite.report.rows.curve_rows``, a final point
  scored another way left out). A sampler that never reaches q_k within its run is right-censored at
  its last evaluation L_k, so ln r_k ≤ ln k*(T_k) − ln L_k is left-censored, never dropped. ln r_k ~ N(μ,
  σ²) with a censored-data normal likelihood (Tobit 1958; an accelerated-failure-time model with one
  group): uncensored pairs contribute ln φ((y−μ)/σ) − ln σ, censored ones ln Φ((c−μ)/σ). The speed-up is
  e^μ̂ and its interval the profile-likelihood set {μ: 2(ℓ(μ̂, σ̂) − max_σ ℓ(μ, σ)) ≤ n·ln(1 + t²/(n−1))},
  t = t_{(1+c)/2, n−1}: with no censored pair this set *is* the t interval of the mean of ln r (the
  profile likelihood ratio of a normal mean is n·ln(1 + T²/(n−1)), T the t statistic), so the cut-off
  carries the t interval's small-sample calibration over to censored data; its p-value for μ = 0 inverts
  the same relation. Every pair is used; an all-censored study gets an interval unbounded below (speed-up
  at most …) and no point estimate. ``censored_normal`` computes it (vectorised; profile over σ by golden
  section in ln σ, where the Tobit likelihood is unimodal, on a 49-point μ grid refined by bisection).
  Why not Kaplan–Meier: with 3–10 pairs a non-parametric median has no 95% interval at all (3 pairs: the
  widest order-statistic interval covers 1 − 2·0.5³ = 0.75), and half the pairs are censored when the
  speed-up is 1. Coverage of all three intervals under the suite's curve model: docs/statistics.md
  (``suite bench statistics``).

Verdict of a sampler S against a target T (``verdict``): with one seed pair "1 seed: no interval; run ≥
3 seeds"; otherwise "S better than T by d FID, 95% CI [a, b], n seed pairs" (or "worse"), or "not
distinguishable from T with n seed pairs" when the (Holm-adjusted) p-value is ≥ 0.05; then the time to
T's final quality, "reaches T's final FID 1.60× sooner, 95% CI [a, b]" (or "takes … longer", or "not
distinguishable"), with "k of n censored" whenever a pair never reached.

Seeds a difference needs (``seeds_needed``, ``suite plan-seeds``): the standard paired-t sample size for a
difference D the user states (never the one just measured: that is post hoc power) on the metric's scale,
from an upper confidence bound of the pilot's standard deviation, s·√((n−1)/χ²_{1−γ, n−1}) with γ = 0.8
(Browne 1995, "On the use of a pilot sample for sample size determination", Stat. Med. 14: 1933–1940):
planning from s itself falls short of the nominal power on average; from the 80% upper bound the mean
power is ≥ 0.8 (``suite bench statistics``, seed-plan table in docs/statistics.md).
The smallest n whose power P(|T| > t_{1−α/2, n−1}), T ~ noncentral t(n − 1, D·√n/s), reaches 1 − β is
R's ``power.t.test(type = "paired", strict = TRUE)`` rounded up (D = s: 10 seeds at power 0.8); the power
is statsmodels' ``TTestPower``, searched over whole n (its own solver returns NaN where n falls below 2).

Columns of ``comparison_intervals``: ``row``, the row keys, ``sampler``, ``target_sampler``, ``method``
("declared" | "holm"), ``baselines`` (m, the comparisons Holm adjusts over; 1 when declared), ``scale``,
``final`` (Interval, metric units), ``difference`` (Interval, metric units), ``difference_sd`` (sd of d_k on
the scale), ``difference_p`` (adjusted), ``ratio`` (Interval of e^μ; None below 1 pair), ``ratio_p``
(adjusted), ``pairs``, ``ratio_reached`` (pairs not censored) and ``censored``.
Columns of ``statistics_table`` (strings): task, budget, metric, sampler, seeds, "final, 95% CI", target,
"sampler − target (paired by seed), 95% CI", "time-to-target ratio, 95% CI", verdict, and added after them
``scale`` (the metric's comparison scale), ``method`` (declared | holm over m baselines) and ``censored``
("k of n").
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from suite.report.rendering import NO_ROWS, render
from suite.report.rows import (
    ROW_KEYS,
    TARGET_BASELINES,
    curve_rows,
    final_rows,
    finished,
    format_value,
    is_adaptive,
    load_records,
    metric_of,
    parse_targets,
    recorded_adaptive,
    sampler_order,
    sort_rows,
    with_row_labels,
)
from suite.report.time_to_target import from_scale, paired_speedups, row_scale, same_row, to_scale

CONFIDENCE = 0.95
POWER = 0.8
SPREAD_CONFIDENCE = 0.8
ONE_SEED = "1 seed: no interval"
SEEDS_ADVISED = 3
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_GRID, _SIGMA_STEPS, _BISECTIONS = 49, 16, 14


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval from n values; ``low``/``high`` are NaN below 2 values,
    ±inf where the interval is unbounded (an all-censored time ratio), ``estimate`` NaN where none exists."""

    estimate: float
    low: float
    high: float
    n: int

    @property
    def defined(self) -> bool:
        return self.n >= 2 and not (math.isnan(self.low) or math.isnan(self.high))

    def covers(self, value: float) -> bool:
        """Whether ``value`` lies in [low, high] (an undefined interval covers everything)."""
        return not self.defined or self.low <= value <= self.high

    def text(self, scale: float | None = None, signed: bool = False) -> str:
        """ "71.17 [68.20, 74.14]", or "71.17 (1 seed: no interval)"; ``signed`` writes "+" before positive
        numbers (differences); ``scale`` (default the estimate) picks the decimals as
        ``suite.report.rows.format_value``."""
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


# -- intervals, vectorised over leading axes ----------------------------------------------------------
def t_limits(
    values: np.ndarray, confidence: float = CONFIDENCE, null: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over the last axis: mean, the t interval's low and high, and the two-sided p-value of mean = ``null``
    (NaN below 2 values)."""
    _check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    n = x.shape[-1]
    mean = x.mean(-1) if n else np.full(x.shape[:-1], np.nan)
    if n < 2:
        nan = np.full(x.shape[:-1], np.nan)
        return mean, nan, nan.copy(), nan.copy()
    se = x.std(-1, ddof=1) / math.sqrt(n)
    half = float(stats.t.ppf((1.0 + confidence) / 2.0, n - 1)) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(se > 0, (mean - null) / se, np.where(mean == null, 0.0, np.inf))
    return mean, mean - half, mean + half, 2.0 * stats.t.sf(np.abs(statistic), n - 1)


def _log_likelihood(y: np.ndarray, censored: np.ndarray, mu: np.ndarray, log_sigma: np.ndarray) -> np.ndarray:
    """Censored normal log-likelihood summed over the last axis (y, censored broadcast against mu, σ):
    ln φ(z) − ln σ for an exact value, ln Φ(z) for an upper bound (−1), ln Φ(−z) for a lower bound (+1)."""
    z = (y - mu) * np.exp(-log_sigma)
    exact = -0.5 * z * z - log_sigma
    return np.where(censored == 0, exact, special.log_ndtr(np.where(censored < 0, z, -z))).sum(-1)


def _golden_max(
    f: Callable[[np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise maximum of a unimodal ``f`` on [a, b] by golden section: (argmax, max)."""
    x1, x2 = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    f1, f2 = f(x1), f(x2)
    for _ in range(steps):
        left = f1 >= f2
        a, b = np.where(left, a, x1), np.where(left, x2, b)
        n1, n2 = np.where(left, b - GOLDEN * (b - a), x2), np.where(left, x1, a + GOLDEN * (b - a))
        new = f(np.where(left, n1, n2))
        f1, f2 = np.where(left, new, f2), np.where(left, f1, new)
        x1, x2 = n1, n2
    return np.where(f1 >= f2, x1, x2), np.maximum(f1, f2)


def censored_normal(
    values: np.ndarray, censored: np.ndarray, confidence: float = CONFIDENCE, null: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """μ̂, the profile-likelihood interval and the p-value of μ = ``null`` for normal values censored where
    ``censored`` is −1 (the value is an upper bound) or +1 (a lower bound), over the last axis (module
    docstring). Without a censored value: exactly ``t_limits``; with one, the t quantile has (exact values
    − 1) degrees of freedom, at least 1, since a censored value says little about the spread. μ̂ is NaN
    where the likelihood is highest at an end of the μ grid (every value censored one way); a limit beyond
    the grid, min − 12 s … max + 12 s, is ±inf."""
    y = np.asarray(values, dtype=float)
    cut = np.broadcast_to(np.sign(np.asarray(censored, dtype=int)), y.shape)
    mean, low, high, p = (np.array(a, dtype=float) for a in t_limits(y, confidence, null))
    n = y.shape[-1]
    todo = np.nonzero((cut != 0).any(-1).reshape(-1))[0] if n >= 2 else np.array([], dtype=int)
    if todo.size == 0:
        return mean, low, high, p
    ys, cs = y.reshape(-1, n)[todo], cut.reshape(-1, n)[todo]
    df = np.maximum((cs == 0).sum(-1) - 1, 1)
    t = stats.t.ppf((1.0 + confidence) / 2.0, df)
    cutoff = n * np.log1p(t * t / (n - 1))
    rows = np.arange(len(todo))
    spread = np.maximum(ys.std(-1, ddof=1), 1e-6 * np.maximum(1.0, np.abs(ys).max(-1)))

    def profile(mu: np.ndarray) -> np.ndarray:  # mu (B, G) → max over σ of ℓ(μ, σ)
        a = np.broadcast_to((np.log(spread) - math.log(100.0))[:, None], mu.shape)
        b = np.broadcast_to((np.log(spread) + math.log(100.0))[:, None], mu.shape)
        at = (ys[:, None, :], cs[:, None, :], mu[..., None])
        return _golden_max(lambda q: _log_likelihood(*at, q[..., None]), a, b, _SIGMA_STEPS)[1]

    start, stop = ys.min(-1) - 12 * spread, ys.max(-1) + 12 * spread
    grid = start[:, None] + (stop - start)[:, None] * np.linspace(0.0, 1.0, _GRID)
    on_grid = profile(np.concatenate([grid, np.full((len(todo), 1), null)], axis=1))
    curve, at_null = on_grid[:, :-1], on_grid[:, -1]
    k = curve.argmax(-1)
    below, above = grid[rows, np.maximum(k - 1, 0)], grid[rows, np.minimum(k + 1, _GRID - 1)]
    estimate, best = _golden_max(lambda m: profile(m[:, None])[:, 0], below, above, _BISECTIONS + 6)
    best = np.maximum(best, curve[rows, k])
    inside = 2.0 * (best[:, None] - curve) <= cutoff[:, None]
    first, last = inside.argmax(-1), _GRID - 1 - inside[:, ::-1].argmax(-1)

    def limit(outside: np.ndarray, within: np.ndarray) -> np.ndarray:
        for _ in range(_BISECTIONS):
            middle = 0.5 * (outside + within)
            keep = 2.0 * (best - profile(middle[:, None])[:, 0]) <= cutoff
            within, outside = np.where(keep, middle, within), np.where(keep, outside, middle)
        return 0.5 * (outside + within)

    lows = np.where(first == 0, -np.inf, limit(grid[rows, np.maximum(first - 1, 0)], grid[rows, first]))
    highs = np.where(
        last == _GRID - 1, np.inf, limit(grid[rows, np.minimum(last + 1, _GRID - 1)], grid[rows, last])
    )
    flat = curve[:, 0] >= best - 1e-9
    estimate = np.where(flat | (k == _GRID - 1), np.nan, estimate)
    ratio = np.maximum(2.0 * (best - at_null), 0.0)
    p_null = 2.0 * stats.t.sf(np.sqrt((n - 1) * np.expm1(np.minimum(ratio / n, 700.0))), df)
    for out, value in ((mean, estimate), (low, lows), (high, highs), (p, p_null)):
        out.reshape(-1)[todo] = value
    return mean, low, high, p


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values over the last axis: p_(i) ↦ max_{j ≤ i} min(1, (m − j + 1)·p_(j))
    for the m finite values (NaN stays NaN and does not count)."""
    p = np.asarray(pvalues, dtype=float)
    finite = np.isfinite(p)
    m = finite.sum(-1, keepdims=True)
    order = np.argsort(np.where(finite, p, np.inf), axis=-1)
    ranked = np.take_along_axis(p, order, -1)
    factor = m - np.arange(p.shape[-1])
    adjusted = np.minimum(1.0, np.maximum.accumulate(np.where(np.isfinite(ranked), ranked * factor, 0), -1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, adjusted, -1)
    return np.where(finite, out, np.nan)


# -- intervals of one comparison ---------------------------------------------------------------------
def t_interval(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """Mean of ``values`` with the t interval x̄ ± t_{(1+c)/2, n−1}·s/√n (no interval for n < 2)."""
    x = np.asarray(values, dtype=float)
    mean, low, high, _ = t_limits(x, confidence)
    return Interval(float(mean), float(low), float(high), x.size)


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


def scaled_interval(
    values: Sequence[float] | np.ndarray, scale: str, confidence: float = CONFIDENCE
) -> Interval:
    """g⁻¹ of the t interval of g(values), in the metric's units (on ln: the geometric mean)."""
    u = to_scale(np.asarray(values, dtype=float), scale)
    mean, low, high, _ = t_limits(u, confidence)
    back = from_scale(np.array([mean, low, high]), scale)
    return Interval(float(back[0]), float(back[1]), float(back[2]), u.size)


def difference_on_scale(
    sampler: np.ndarray, target: np.ndarray, scale: str, confidence: float = CONFIDENCE
) -> tuple[Interval, float, float]:
    """Paired comparison over seed pairs on the metric's scale (module docstring): the difference in the
    metric's units at the target's centre as an ``Interval``, the sd of the paired d_k on the scale, and
    the raw two-sided p-value of mean d = 0."""
    u_s, u_t = to_scale(sampler, scale), to_scale(target, scale)
    d = u_s - u_t
    mean, low, high, p = t_limits(d, confidence)
    centre = float(np.mean(u_t))
    base = float(from_scale(centre, scale))
    back = from_scale(centre + np.array([mean, low, high]), scale) - base
    sd = float(np.std(d, ddof=1)) if d.size > 1 else math.nan
    return Interval(float(back[0]), float(back[1]), float(back[2]), d.size), sd, float(p)


def censored_ratio_interval(
    log_ratios: np.ndarray, censored: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[Interval, float]:
    """The time-to-target ratio e^μ̂ over seed pairs with its censored-data interval, and the raw p-value of
    μ = 0 (``censored_normal``)."""
    y = np.asarray(log_ratios, dtype=float)
    mean, low, high, p = censored_normal(y, censored, confidence)
    return Interval(float(np.exp(mean)), float(np.exp(low)), float(np.exp(high)), y.size), float(p)


# -- sample size -------------------------------------------------------------------------------------
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
    "method",
    "baselines",
    "scale",
    "final",
    "difference",
    "difference_sd",
    "difference_p",
    "ratio",
    "ratio_p",
    "pairs",
    "ratio_reached",
    "censored",
]


def _seed_finals(final: pd.DataFrame) -> dict[str, pd.Series]:
    """Per sampler label, its final value per seed (mean over duplicate rows of one seed)."""
    return {
        str(sampler): part.groupby("seed")["value"].mean().sort_index()
        for sampler, part in final.groupby("sampler")
    }


def target_method(declared: str | None) -> str:
    return "declared" if declared is not None else "holm"


def _baselines(
    finals: dict[str, pd.Series], adaptive: Mapping[str, bool], targets: Sequence[str], declared: str | None
) -> list[str]:
    """The samplers a row's others are compared with: the declared one, else every finished fixed sampler
    of ``targets`` with a finite final mean, in sampler order."""
    wanted = [declared] if declared is not None else list(targets)
    return [
        label
        for label in sampler_order(list(finals))
        if label in wanted and not adaptive[label] and np.isfinite(finals[label].mean())
    ]


def comparison_intervals(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """One line per comparison row × sampler × target (columns in the module docstring). The targets are
    ``declared`` (a study's ``target:``) or, without one, every baseline of ``targets`` that finished, with
    Holm's adjustment over them; a target's own line has ``target_sampler`` = itself. A row where no target
    finished has one line per sampler with ``target_sampler`` "" and no comparison."""
    rows = with_row_labels(finished(df, budget))
    if rows.empty:
        return pd.DataFrame(columns=INTERVAL_COLUMNS)
    final, curves = final_rows(rows), curve_rows(rows)
    method = target_method(declared)
    lines = []
    for _, part in final.groupby(ROW_KEYS, sort=False, dropna=False):
        first = part.iloc[0]
        higher = bool(first["higher_is_better"])
        scale = row_scale(part)
        finals = _seed_finals(part)
        recorded = recorded_adaptive(part)
        adaptive = {
            str(label): is_adaptive(str(name), recorded.get(str(label)))
            for label, name in zip(part["sampler"], part["sampler_name"], strict=True)
        }
        baselines = _baselines(finals, adaptive, targets, declared)
        evaluations = curves[same_row(curves, first)]
        for sampler in sampler_order(list(finals)):
            base = {
                "row": first["row"],
                **first[ROW_KEYS].to_dict(),
                "sampler": sampler,
                "method": method,
                "baselines": len(baselines),
                "scale": scale,
                "final": scaled_interval(finals[sampler].to_numpy(), scale),
                "difference": None,
                "difference_sd": math.nan,
                "difference_p": math.nan,
                "ratio": None,
                "ratio_p": math.nan,
                "pairs": 0,
                "ratio_reached": 0,
                "censored": 0,
            }
            if sampler in baselines or not baselines:
                lines.append(base | {"target_sampler": sampler if baselines else ""})
                continue
            group = []
            for target in baselines:
                seeds = finals[sampler].index.intersection(finals[target].index)
                line = base | {"target_sampler": target, "pairs": len(seeds)}
                if len(seeds):
                    difference, sd, p = difference_on_scale(
                        finals[sampler][seeds].to_numpy(), finals[target][seeds].to_numpy(), scale
                    )
                    line |= {"difference": difference, "difference_sd": sd, "difference_p": p}
                logs, censored = paired_speedups(evaluations, target, sampler, higher, scale)
                if len(logs):
                    ratio, p = censored_ratio_interval(logs, censored)
                    line |= {
                        "ratio": ratio,
                        "ratio_p": p,
                        "ratio_reached": int((censored >= 0).sum()),
                        "censored": int((censored != 0).sum()),
                    }
                group.append(line)
            for key in ("difference_p", "ratio_p"):
                adjusted = holm(np.array([line[key] for line in group]))
                for line, value in zip(group, adjusted, strict=True):
                    line[key] = float(value)
            lines.extend(group)
    return pd.DataFrame(lines, columns=INTERVAL_COLUMNS)


def _times(x: float) -> str:
    """A ratio as "1.60", "∞" or "–" (none)."""
    if math.isnan(x):
        return "–"
    return "∞" if math.isinf(x) else f"{x:.2f}"


def _censored_text(line: Mapping) -> str:
    censored = int(line.get("censored", 0) or 0)
    return f"{censored} of {int(line['pairs'])} censored" if censored else ""


def _adjusted(line: Mapping, key: str) -> str:
    """ ", Holm-adjusted p = 0.012 over 4 baselines" for a Holm line, "" for a declared target."""
    m = int(line.get("baselines", 1) or 1)
    if line.get("method", "declared") != "holm" or m < 2:
        return ""
    return f", Holm-adjusted p = {line[key]:.3g} over {m} baselines"


def _significant(line: Mapping, key: str, interval: Interval, null: float) -> bool:
    """Whether a comparison is distinguishable: its (adjusted) p-value below 1 − confidence where one was
    computed, else its interval excludes ``null``."""
    p = line.get(key, math.nan)
    if p is not None and not math.isnan(p):
        return p < 1.0 - CONFIDENCE
    return not interval.covers(null)


def verdict(line: Mapping) -> str:
    """The plain-words verdict of one ``comparison_intervals`` line (see the module docstring)."""
    sampler, target = line["sampler"], line["target_sampler"]
    metric = str(line["metric"]).upper()
    level = f"{100 * CONFIDENCE:g}%"
    if not target:
        return "no target sampler finished in this row"
    if sampler == target:
        if line.get("method", "declared") == "holm":
            return f"baseline: every other sampler is compared with it (Holm over {int(line['baselines'])})"
        return f"target: declared in the study file ({metric})"
    pairs = int(line["pairs"])
    if pairs == 0:
        return f"no seed in common with {target}: no pairs"
    if pairs == 1:
        return f"{ONE_SEED}; run ≥ {SEEDS_ADVISED} seeds"
    d: Interval = line["difference"]
    if not _significant(line, "difference_p", d, 0.0):
        text = (
            f"not distinguishable from {target} with {pairs} seed pairs ({metric} difference "
            f"{d.estimate:+.2f}, {level} CI [{d.low:+.2f}, {d.high:+.2f}]{_adjusted(line, 'difference_p')})"
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
            f"{_adjusted(line, 'difference_p')}"
        )
    r: Interval | None = line["ratio"]
    if r is None or not r.defined:
        return text
    censored = _censored_text(line)
    note = f"; {censored}" if censored else ""
    if not _significant(line, "ratio_p", r, 1.0):
        return (
            f"{text}; time to {target}'s final {metric} not distinguishable ({_times(r.estimate)}×, "
            f"{level} CI [{_times(r.low)}, {_times(r.high)}]{note}{_adjusted(line, 'ratio_p')})"
        )
    if r.low > 1:
        return (
            f"{text}; reaches {target}'s final {metric} {_times(r.estimate)}× sooner, {level} CI "
            f"[{_times(r.low)}, {_times(r.high)}]{note}{_adjusted(line, 'ratio_p')}"
        )
    inverse = (
        1 / r.estimate if r.estimate > 0 else math.inf,
        1 / r.high,
        1 / r.low if r.low > 0 else math.inf,
    )
    return (
        f"{text}; takes {_times(inverse[0])}× longer to reach {target}'s final {metric}, {level} CI "
        f"[{_times(inverse[1])}, {_times(inverse[2])}]{note}{_adjusted(line, 'ratio_p')}"
    )


def _in_paper_order(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in the table's order of comparisons (``suite.report.table``), samplers in their order within
    each."""
    if table.empty:
        return table
    order = sort_rows(table[["task", "budget"]].drop_duplicates())
    ranked = table.merge(order.assign(_rank=range(len(order))), on=["task", "budget"])
    return ranked.sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


def _pairs(n: int) -> str:
    return f"{n} seed pair{'s' * (n != 1)}"


def statistics_table(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """String table of ``comparison_intervals``: one line per comparison row × sampler × target with the
    final quality and its 95% CI, the paired difference to the target and the time-to-target ratio with
    theirs, the verdict, and the scale, method and censored pairs (module docstring)."""
    intervals = comparison_intervals(df, budget, targets, declared)
    lines = []
    for _, line in intervals.iterrows():
        d, r = line["difference"], line["ratio"]
        pairs = int(line["pairs"])
        difference, ratio = "–", "–"
        counted = f", {_pairs(pairs)}" if pairs > 1 else ""
        if d is not None:
            difference = d.text(abs(line["final"].estimate), signed=True) + counted
        censored = _censored_text(line)
        if r is not None:
            interval = f" [{_times(r.low)}, {_times(r.high)}]" if r.defined else f" ({ONE_SEED})"
            ratio = f"{_times(r.estimate)}×{interval}{counted}" + (f"; {censored}" if censored else "")
        method = str(line["method"])
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
                "scale": line["scale"],
                "method": f"holm over {int(line['baselines'])}" if method == "holm" else method,
                "censored": f"{int(line['censored'])} of {pairs}" if r is not None else "–",
            }
        )
    return _in_paper_order(pd.DataFrame(lines))


SCALE_WORDS = {
    "log": "on the log scale (geometric means, paired differences of logs = ratios of geometric means)",
    "logit": "on the logit scale (bounded in (0, 1))",
    "linear": "on the metric's own scale",
}


def statistics_caption(declared: str | None = None, scales: Sequence[str] = ()) -> str:
    """The caption of ``statistics_table``: the target's method, the scales and the censoring rule."""
    if declared is not None:
        method = f"target {declared}, declared in the study file before the runs"
    else:
        method = (
            "no target declared: every sampler is compared with each finished baseline and its verdicts "
            "are Holm-adjusted over those baselines (the best baseline chosen on the same seeds would be "
            "favoured by its luck)"
        )
    used = [scale for scale in ("log", "logit", "linear") if scale in set(scales)] or ["log"]
    kinds = {"log": "FID-type", "logit": "MAUVE-type", "linear": "other"}
    on = "; ".join(f"for {kinds[scale]} metrics {SCALE_WORDS[scale]}" for scale in used)
    return (
        f"How sure each comparison is ({method}). Intervals are 95% t intervals over seeds, computed {on}; "
        "all reported back in the metric's units: final quality (none with one seed); the paired difference "
        "sampler − target over the seeds both ran (seed k of both starts from the same weights and data "
        "order); the time-to-target ratio k_target/k_sampler over the same pairs, a pair whose sampler never "
        "reached being censored at its last evaluation (censored-normal likelihood on log ratios, "
        'profile-likelihood interval; "k of n censored"). `suite plan-seeds --difference D` says how many '
        "seeds a stated difference needs"
    )


STATISTICS_CAPTION = statistics_caption()


# -- seed planning -----------------------------------------------------------------------------------
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
            needed = f"spread unknown from {_pairs(pairs)}: run ≥ {SEEDS_ADVISED} seeds"
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
    return _in_paper_order(pd.DataFrame(lines))


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
