"""The intervals a comparison is built from, vectorised over leading axes: t intervals on the metric's scale,
the
censored-normal profile likelihood of the time-to-target ratio, and Holm's step-down adjustment.

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
* Time-to-target ratio of pair k, r_k = k*(T_k, q_k)/k*(S_k, q_k), with q_k the *worse* of the two runs'
  final values on the curves' protocol (``suite.report.time_to_target.pair_log_ratios``;
  ``suite.report.rows.curve_rows``: a final point scored another way left out). Both runs reach q_k within
  their runs (each reaches its own final value by its last evaluation), so r_k is observed whichever is
  faster: r_k > 1 when the sampler gets there sooner, r_k < 1 when the target does, and exchanging the two
  negates ln r_k: neither direction is censored away, and "longer" is found with the power the data allow
  as "sooner" is (docs/statistics.md). Where the sampler ends better,
  q_k is the target's final, the paper's "reaches the final quality of the baseline". A crossing that lies
  before a run's first evaluation k₀ makes ln r_k a bound (left- or right-censored at k₀), never a dropped
  pair. ln r_k ~ N(μ, σ²) with a censored-data normal likelihood (Tobit 1958; an accelerated-failure-time
  model with one group): exact pairs contribute ln φ((y−μ)/σ) − ln σ, censored ones ln Φ of their side of
  the bound. The speed-up is e^μ̂ and its interval the profile-likelihood set {μ: 2(ℓ(μ̂, σ̂) − max_σ ℓ(μ,
  σ)) ≤ n·ln(1 + t²/(n−1))}, t = t_{(1+c)/2, m−1}, n the pairs, m the exact ones: with no censored pair
  this set *is* the t interval of the mean of ln r (the profile likelihood ratio of a normal mean is
  n·ln(1 + T²/(n−1)), T the t statistic), so the cut-off carries the t interval's small-sample calibration
  over to censored data; its p-value for μ = 0 inverts the same relation. Below two exact pairs the spread
  is unknown: no estimate, no p-value, only the bound the pairs put on their mean. ``censored_normal``
  computes it (vectorised; profile over σ by golden section in ln σ, the peak over μ by golden section,
  the limits by bisection).
  Why not Kaplan–Meier: with 3–10 pairs a non-parametric median has no 95% interval at all (3 pairs: the
  widest order-statistic interval covers 1 − 2·0.5³ = 0.75). Coverage of all three intervals under the
  suite's curve model: docs/statistics.md (``suite bench statistics``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from suite.report.rows import (
    format_value,
)
from suite.report.time_to_target import from_scale, to_scale

CONFIDENCE = 0.95


ONE_SEED = "1 seed: no interval"


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


_PEAK_STEPS, _SIGMA_STEPS, _BISECTIONS, _EXPANSIONS = 60, 16, 50, 12


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


def check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1 (e.g. 0.95), got {confidence!r}")


def t_limits(
    values: np.ndarray, confidence: float = CONFIDENCE, null: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over the last axis: mean, the t interval's low and high, and the two-sided p-value of mean = ``null``
    (NaN below 2 values, and where the values do not vary: a constant is not tested)."""
    check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    n = x.shape[-1]
    mean = x.mean(-1) if n else np.full(x.shape[:-1], np.nan)
    if n < 2:
        nan = np.full(x.shape[:-1], np.nan)
        return mean, nan, nan.copy(), nan.copy()
    se = x.std(-1, ddof=1) / math.sqrt(n)
    half = float(stats.t.ppf((1.0 + confidence) / 2.0, n - 1)) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = (mean - null) / se
    p = np.where(se > 0, 2.0 * stats.t.sf(np.abs(statistic), n - 1), np.nan)
    return mean, mean - half, mean + half, p


def _log_likelihood(
    y: np.ndarray, censored: np.ndarray, weight: np.ndarray, mu: np.ndarray, log_sigma: np.ndarray
) -> np.ndarray:
    """Censored normal log-likelihood summed over the last axis (y, censored, weight broadcast against mu,
    σ): ln φ(z) − ln σ for an exact value, ln Φ(z) for an upper bound (−1), ln Φ(−z) for a lower bound (+1),
    each times its weight (0 leaves a value out)."""
    z = (y - mu) * np.exp(-log_sigma)
    exact = -0.5 * z * z - log_sigma
    terms = np.where(censored == 0, exact, special.log_ndtr(np.where(censored < 0, z, -z)))
    return (weight * terms).sum(-1)


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
    docstring); a value whose code is ±2 or beyond carries no information and is left out. Without a
    censored or left-out value: exactly ``t_limits``. Otherwise the t quantile of the cut-off has (exact
    values − 1) degrees of freedom, since a censored value says little about the spread (with 3 evaluations
    a third of the pairs cross before the first, where n − 1 degrees of freedom cover only 0.78–0.88:
    docs/statistics.md). The peak is found by golden section over the whole range min − 12 s … max + 12 s
    (the profile is unimodal: the Tobit likelihood is concave in (μ/σ, 1/σ), Olsen 1978, so its superlevel
    sets are convex in (μ, σ)), each limit by bisection between the peak and an end of the range, an end
    still inside the interval first moved out 4× from the peak at a time (12 times at most, then the limit
    is ±inf). Below two exact values the spread is not measured: no estimate and no
    p-value, and the interval is the bound the values put on their own mean (``bound_of_mean``); the
    p-value is NaN also where the exact values do not vary or the likelihood peaks at an end of the range."""
    y = np.asarray(values, dtype=float)
    code = np.broadcast_to(np.asarray(censored, dtype=int), y.shape)
    mean, low, high, p = (np.array(a, dtype=float) for a in t_limits(y, confidence, null))
    n = y.shape[-1]
    flat_y, flat_code = y.reshape(-1, n), code.reshape(-1, n)
    weight = (np.abs(flat_code) < 2).astype(float)
    cut = np.where(weight > 0, np.sign(flat_code), 0)
    exact = (flat_code == 0).sum(-1)
    special_rows = (flat_code != 0).any(-1) if n else np.zeros(len(flat_y), dtype=bool)
    few = np.nonzero(special_rows & (exact < 2))[0]
    if few.size:
        bounds = bound_of_mean(flat_y[few], flat_code[few])
        for out, value in zip((mean, low, high, p), (np.nan, bounds[0], bounds[1], np.nan), strict=True):
            out.reshape(-1)[few] = value
    todo = np.nonzero(special_rows & (exact >= 2))[0]
    if todo.size == 0:
        return mean, low, high, p
    ys, cs, ws = flat_y[todo], cut[todo], weight[todo]
    counted = ws.sum(-1)
    df = exact[todo] - 1
    t = stats.t.ppf((1.0 + confidence) / 2.0, df)
    cutoff = counted * np.log1p(t * t / (counted - 1))
    informative = np.where(ws > 0, ys, np.nan)
    spread = np.maximum(
        np.nanstd(informative, -1, ddof=1), 1e-6 * np.maximum(1.0, np.nanmax(np.abs(informative), -1))
    )
    ys = np.where(ws > 0, ys, 0.0)

    def profile(mu: np.ndarray) -> np.ndarray:  # mu (B,) → max over σ of ℓ(μ, σ)
        a, b = np.log(spread) - math.log(100.0), np.log(spread) + math.log(100.0)
        at = (ys, cs, ws, mu[:, None])
        return _golden_max(lambda q: _log_likelihood(*at, q[:, None]), a, b, _SIGMA_STEPS)[1]

    start, stop = np.nanmin(informative, -1) - 12 * spread, np.nanmax(informative, -1) + 12 * spread
    estimate, best = _golden_max(profile, start, stop, _PEAK_STEPS)
    at_start, at_stop = profile(start), profile(stop)
    best = np.maximum.reduce([best, at_start, at_stop])

    def limit(end: np.ndarray, at_end: np.ndarray) -> np.ndarray:
        outside, within = end, estimate.copy()
        for _ in range(_BISECTIONS):
            middle = 0.5 * (outside + within)
            keep = 2.0 * (best - profile(middle)) <= cutoff
            within, outside = np.where(keep, middle, within), np.where(keep, outside, middle)
        unbounded = 2.0 * (best - at_end) <= cutoff
        return np.where(unbounded, np.copysign(np.inf, end - estimate), 0.5 * (outside + within))

    at_edge = np.maximum(at_start, at_stop) >= best - 1e-9
    for _ in range(_EXPANSIONS):  # widen an end still inside the interval: its limit lies beyond
        inside = 2.0 * (best - at_start) <= cutoff
        start = np.where(inside, estimate - 4.0 * (estimate - start), start)
        at_start = np.where(inside, profile(start), at_start)
        inside = 2.0 * (best - at_stop) <= cutoff
        stop = np.where(inside, estimate + 4.0 * (stop - estimate), stop)
        at_stop = np.where(inside, profile(stop), at_stop)
    lows, highs = limit(start, at_start), limit(stop, at_stop)
    estimate = np.where(at_edge, np.nan, estimate)
    ratio = np.maximum(2.0 * (best - profile(np.full(len(todo), float(null)))), 0.0)
    p_null = 2.0 * stats.t.sf(np.sqrt((counted - 1) * np.expm1(np.minimum(ratio / counted, 700.0))), df)
    exact_values = np.where(cs == 0, np.where(ws > 0, ys, np.nan), np.nan)
    varies = np.nanmax(exact_values, -1) > np.nanmin(exact_values, -1)
    p_null = np.where(varies & ~at_edge, p_null, np.nan)
    for out, value in ((mean, estimate), (low, lows), (high, highs), (p, p_null)):
        out.reshape(-1)[todo] = value
    return mean, low, high, p


def bound_of_mean(values: np.ndarray, censored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) that values and their censoring (``censored_normal``'s codes) put on the mean of the
    informative ones, over the last axis: that mean is an upper bound where some values are upper bounds
    (−1) and none lower bounds, a lower bound in the mirror case; ±inf on a side where values are censored
    that way, and both without an informative value."""
    y, code = np.asarray(values, dtype=float), np.asarray(censored)
    informative = np.abs(code) < 2
    with np.errstate(invalid="ignore"):
        mean = np.where(informative, y, 0.0).sum(-1) / informative.sum(-1)
    none = ~informative.any(-1)
    return (
        np.where(((code == -1).any(-1)) | none, -np.inf, mean),
        np.where(((code == 1).any(-1)) | none, np.inf, mean),
    )


OUTLIER_Z, OUTLIER_MIN_SEEDS = 7.0, 8


def outliers(values: np.ndarray) -> np.ndarray:
    """Over the last axis, whether each value is a gross outlier: a modified z-score
    |0.6745·(x − median)/MAD| above 7 (Iglewicz & Hoaglin 1993 use 3.5 for a screen; a single diverged seed
    cannot mask itself in the median and MAD as it does in a mean and sd), from 8 values on, and never
    where the MAD is 0. The threshold is set by the bench: at 3.5 (or from 5 values) a clean study of 10
    seeds gets a flag in 12–23% of studies, at 7 in ≤ 2% (``suite bench statistics``, "outlier named")."""
    x = np.asarray(values, dtype=float)
    if x.shape[-1] < OUTLIER_MIN_SEEDS:
        return np.zeros(x.shape, dtype=bool)
    median = np.median(x, axis=-1, keepdims=True)
    mad = np.median(np.abs(x - median), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = 0.6745 * np.abs(x - median) / mad
    return np.where(mad > 0, z > OUTLIER_Z, False)


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
