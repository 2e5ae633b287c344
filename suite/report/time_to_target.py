"""Time to target. Two targets per comparison, each the best final seed-mean quality q* among a set of
*fixed* (non-adaptive) samplers:

* the paper's fixed baselines (``TARGET_BASELINES``: LogU, Cos, FM, EDM at their configured defaults, i.e.
  exactly those labels; configurable), the reference of the paper's claim that InfoNoise "reaches the
  final quality of the strongest fixed schedule" with up to 3× less training compute;
* every fixed sampler that ran (Laplace, Cauchy, swept labels such as ``edm[p_mean=0.0]`` included).

For every sampler, with seed-mean curve (k_i, v_i) over the evaluation points, the processed examples to
target are the first crossing of q*, interpolated between evaluation points in log kimg × g(value), with g
the metric's scale (``MetricSpec.scale``: ln for FID-type values, logit for MAUVE, identity otherwise),

    ln k* = ln k_{i−1} + (g(q*) − g(v_{i−1}))·(ln k_i − ln k_{i−1})/(g(v_i) − g(v_{i−1})),

with i the first point whose v_i is finite and at least as good as q* (k* = k_0 when the first evaluation
already reaches q*, k* = k_i when v_{i−1} is NaN or ±inf, linear in kimg when k_{i−1} = 0), and "not
reached" when no point does. The curves are read on one protocol: a final point that the budget scores another
way (``final_protocol``, ``suite.report.results``: under ``budget=paper`` the minimum over three 50k-sample
FIDs after 10k-sample FIDs) is left out of them, so the target and every crossing come from the curves'
protocol while the comparison table's final values keep the final protocol. A power law v = a·k^(−b) is a
straight line there, so its crossing is exact; on the suite's curve model 2 + 8·(K/k)^0.7 the ratio's bias
without noise is at most 0.3% on the paper budget's log-spaced grid and up to 2.2% on 3 evenly spaced points
(docs/statistics.md, ``suite bench statistics``). NaN and
±inf values are shown as such and never ranked: they are never best, never a target, never a crossing, and
a seed mean with one of them is one too. A sampler with runs whose records are incomplete
(``suite.report.results``) has its cells marked "records incomplete", and ``suite table`` lists each such run
and why below the tables. The speed-up of a sampler is k*(T)/k*(sampler), whose
numerator is the target sampler T's first crossing of its own final value (its last evaluation, or earlier
when its curve reached that value before). With several seeds the spread comes from seed pairs: seed k of T
and seed k of the sampler (the same data order and initialisation), each pair's ratio taken against T's
seed-k final quality; the table gives the seed-mean speed-up with mean ± std over the pairs that reached
(the interval over every pair, censored ones included, is ``suite.report.statistics``'s).
The paper reports about 1.4× for InfoNoise on CIFAR-10 and up to 3× under modality shift."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from suite.report.rows import (
    NOT_REACHED,
    ROW_KEYS,
    TARGET_BASELINES,
    curve_rows,
    finished,
    format_value,
    is_adaptive,
    metric_of,
    recorded_adaptive,
    sampler_order,
    sort_rows,
    with_row_labels,
)

SCALES = ("log", "logit", "linear")


LOGIT_CLIP = 1e-6  # a bounded metric at 0 or 1 is read as 1e-6 or 1 − 1e-6 on the logit scale


_LOG_SCALE = ("fid", "sei-fid", "sp-mse", "random-feature-fd")


def scale_of(metric: str, recorded: object = None) -> str:
    """The scale a metric is compared on: the ``scale`` its record carries (``MetricSpec.scale``), else, for
    records written before they carried it, the scale its metric declares today (log for FID, Sei-FID, SP-MSE
    and Fréchet distances, logit for MAUVE, linear otherwise)."""
    if isinstance(recorded, str) and recorded in SCALES:
        return recorded
    name = str(metric)
    if name in _LOG_SCALE or name.startswith("fd-"):
        return "log"
    return "logit" if name.startswith("mauve") else "linear"


def to_scale(values: np.ndarray | float, scale: str) -> np.ndarray:
    """g(x) of the metric's scale: ln x (log; NaN at x ≤ 0), logit x clipped to [1e-6, 1 − 1e-6], or x."""
    x = np.asarray(values, dtype=float)
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.nan)
    if scale == "logit":
        c = np.clip(x, LOGIT_CLIP, 1 - LOGIT_CLIP)
        return np.log(c) - np.log1p(-c)
    if scale == "linear":
        return x
    raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")


def from_scale(values: np.ndarray | float, scale: str) -> np.ndarray:
    """g⁻¹: back from the scale to the metric's units."""
    u = np.asarray(values, dtype=float)
    if scale == "log":
        return np.exp(u)
    if scale == "logit":
        return 1.0 / (1.0 + np.exp(-u))
    if scale == "linear":
        return u
    raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")


def crossings(
    kimg: np.ndarray, values: np.ndarray, target: np.ndarray | float, higher_is_better: bool, scale: str
) -> np.ndarray:
    """Vectorised ``first_crossing`` over leading axes: curves ``kimg``, ``values`` of shape (…, P), targets
    of shape (…); NaN where a curve never reaches its target."""
    v = np.asarray(values, dtype=float)
    k = np.broadcast_to(np.asarray(kimg, dtype=float), v.shape)
    q = np.asarray(target, dtype=float)[..., None]
    sign = 1.0 if higher_is_better else -1.0
    tolerance = 1e-12 * np.maximum(1.0, np.abs(q))
    with np.errstate(invalid="ignore"):
        reached = np.isfinite(v) & (sign * (v - q) >= -tolerance)
    i = np.argmax(reached, axis=-1)[..., None]
    prev = np.maximum(i - 1, 0)
    k1, k0 = np.take_along_axis(k, i, -1)[..., 0], np.take_along_axis(k, prev, -1)[..., 0]
    v1, v0 = np.take_along_axis(v, i, -1)[..., 0], np.take_along_axis(v, prev, -1)[..., 0]
    u0, u1, uq = to_scale(v0, scale), to_scale(v1, scale), to_scale(q[..., 0], scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip((uq - u0) / (u1 - u0), 0.0, 1.0)
        in_log = np.exp(np.log(k0) + frac * (np.log(k1) - np.log(k0)))
    between = np.where(k0 > 0, in_log, k0 + frac * (k1 - k0))
    plain = (i[..., 0] == 0) | ~np.isfinite(u0) | ~np.isfinite(u1) | ~np.isfinite(frac)
    out = np.where(plain, k1, between)
    return np.where(reached.any(axis=-1), out, np.nan)


def first_crossing(
    kimg: np.ndarray, values: np.ndarray, target: float, higher_is_better: bool, scale: str = "linear"
) -> float:
    """kimg where a curve (increasing kimg) first reaches ``target``, interpolated in log kimg × the metric's
    ``scale`` (see the module docstring); NaN if never. Non-finite values never reach; after one, the
    crossing is the next point that does."""
    return float(crossings(kimg, values, target, higher_is_better, scale))


def seed_mean_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of each sampler's quality at each evaluation point, per comparison row."""
    rows = df if "row" in df else with_row_labels(df)
    return (
        rows.groupby(["row", *ROW_KEYS, "sampler", "sampler_name", "kimg"], dropna=False)["value"]
        .mean(skipna=False)
        .reset_index()
        .sort_values(["row", "sampler", "kimg"])
        .reset_index(drop=True)
    )


def _seed_curves(part: pd.DataFrame, sampler: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per seed, the (kimg, value) curve of ``sampler`` in one comparison row's rows."""
    mine = part[part["sampler"] == sampler]
    curves = {}
    for seed, rows in mine.groupby("seed"):
        curve = rows.groupby("kimg")["value"].mean().sort_index()
        curves[int(seed)] = (curve.index.to_numpy(dtype=float), curve.to_numpy(dtype=float))
    return curves


def same_row(frame: pd.DataFrame, line: pd.Series) -> pd.Series:
    """Rows of ``frame`` in the comparison row of ``line``: same row label, budget and metric (unique per
    comparison, and free of the missing values that make key-by-key equality fail)."""
    keys = ["row", "budget", "metric"]
    return (frame[keys] == line[keys]).all(axis=1)


LEVELS = ("common", "target")


UNINFORMATIVE = 2  # censoring code of a pair whose two curves reach the level at their first evaluations


def pair_log_ratios(
    target: tuple[np.ndarray, np.ndarray],
    sampler: tuple[np.ndarray, np.ndarray],
    higher_is_better: bool,
    scale: str,
    level: str = "common",
) -> tuple[np.ndarray, np.ndarray]:
    """ln r and its censoring for seed pairs (vectorised over leading axes): ``target`` and ``sampler`` are
    (kimg, values) curves of shape (…, P); r = k*(T, q)/k*(S, q), the processed examples each needs to
    first reach the level q.

    ``level="common"``: q is the worse of the two final values, a level both curves reach within their
    runs (each reaches its own final value at its last evaluation at the latest), so r is observed whichever
    sampler is faster: r > 1 when the sampler reaches it sooner, r < 1 when the target does.
    ``level="target"``: q is the target's final value (the paper's "reaches the final quality of the
    baseline"); a sampler that never reaches it is right-censored at its last evaluation L.

    ``censored``: 0 where both crossings are observed (interpolated between evaluations, or the last one);
    −1 where ln r is an upper bound: the sampler never reaches q (the bound ln k*(T, q) − ln L is returned)
    or the target already reaches q at its first evaluation k₀, whose crossing lies somewhere before; +1
    where ln r is a lower bound: the sampler reaches q at its first evaluation; ``UNINFORMATIVE`` (2) where
    both reach q at their first evaluations, which says nothing of the ratio. A non-finite final value
    gives a NaN ratio."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; valid: {', '.join(LEVELS)}")
    (tk, tv), (sk, sv) = target, sampler
    tv, sv = np.asarray(tv, dtype=float), np.asarray(sv, dtype=float)
    tk = np.broadcast_to(np.asarray(tk, dtype=float), tv.shape)
    sk = np.broadcast_to(np.asarray(sk, dtype=float), sv.shape)
    q = tv[..., -1]
    if level == "common":
        with np.errstate(invalid="ignore"):
            q = np.where(np.isfinite(sv[..., -1]), worse(q, sv[..., -1], higher_is_better), np.nan)
    numerator = crossings(tk, tv, q, higher_is_better, scale)
    denominator = crossings(sk, sv, q, higher_is_better, scale)
    never = np.isnan(denominator) & np.isfinite(q)
    target_first, sampler_first = (
        _at_first(tk, tv, q, higher_is_better),
        _at_first(sk, sv, q, higher_is_better),
    )
    censored = np.select(
        [never, target_first & sampler_first, sampler_first, target_first], [-1, UNINFORMATIVE, 1, -1], 0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(numerator) - np.log(np.where(never, sk[..., -1], denominator))
    return log_ratio, censored


def worse(a: np.ndarray, b: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Elementwise the worse of two values."""
    return np.minimum(a, b) if higher_is_better else np.maximum(a, b)


def _at_first(kimg: np.ndarray, values: np.ndarray, level: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Whether a curve already reaches ``level`` at its first evaluation, after kimg 0 (its crossing is
    then only known to lie before that evaluation)."""
    sign = 1.0 if higher_is_better else -1.0
    first = values[..., 0]
    with np.errstate(invalid="ignore"):
        reached = np.isfinite(first) & (sign * (first - level) >= -1e-12 * np.maximum(1.0, np.abs(level)))
    return reached & (kimg[..., 0] > 0) & (kimg.shape[-1] > 1)


def paired_speedups(
    part: pd.DataFrame,
    target_sampler: str,
    sampler: str,
    higher_is_better: bool,
    scale: str = "linear",
    level: str = "common",
) -> tuple[np.ndarray, np.ndarray]:
    """ln speed-up of ``sampler`` over ``target_sampler`` per seed pair with its censoring
    (``pair_log_ratios`` at ``level``), over the seeds both ran (seed order); pairs whose ratio is undefined
    (a non-finite final, a crossing at kimg 0) are left out."""
    target_curves, curves = _seed_curves(part, target_sampler), _seed_curves(part, sampler)
    logs, censored = [], []
    for seed in sorted(set(target_curves) & set(curves)):
        log_ratio, cut = pair_log_ratios(target_curves[seed], curves[seed], higher_is_better, scale, level)
        if np.isfinite(log_ratio):
            logs.append(float(log_ratio))
            censored.append(int(cut))
    return np.asarray(logs, dtype=float), np.asarray(censored, dtype=int)


def behind_pairs(part: pd.DataFrame, target_sampler: str, sampler: str, higher_is_better: bool) -> int:
    """Seed pairs in which ``sampler``'s curve ends worse than ``target_sampler``'s: there the level both
    reach (``pair_log_ratios``, "common") is the sampler's final value, not the target's."""
    target_curves, curves = _seed_curves(part, target_sampler), _seed_curves(part, sampler)
    sign = 1.0 if higher_is_better else -1.0
    count = 0
    for seed in sorted(set(target_curves) & set(curves)):
        q, last = target_curves[seed][1][-1], curves[seed][1][-1]
        count += bool(np.isfinite(q) and np.isfinite(last) and sign * (last - q) < 0)
    return count


def _incomplete(rows: pd.DataFrame, sampler: str) -> bool:
    """Whether a run of ``sampler`` among ``rows`` has incomplete records."""
    return bool((rows.loc[rows["sampler"] == sampler, "records_incomplete"].fillna("") != "").any())


def row_scale(part: pd.DataFrame) -> str:
    """The scale of a comparison row's metric (``scale_of`` of its first record)."""
    first = part.iloc[0]
    return scale_of(first["metric"], first["scale"] if "scale" in part else None)


def time_to_target(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] | None = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """Processed examples (kimg) each sampler needs to reach the best final quality of ``targets``.

    ``targets``: sampler labels whose best final seed-mean quality is the target (default the paper's
    fixed baselines LogU, Cos, FM, EDM); ``None`` takes every fixed sampler that ran. Adaptive samplers never
    set the target. ``declared``: a sampler label fixed in advance (a study's ``target:``), which is then the
    target wherever it finished, whatever its final quality. One line per comparison row × sampler:
    ``target_sampler`` and ``target`` (its final seed-mean quality), ``target_kimg`` (the speed-up's
    numerator: the target sampler's first crossing of that value), ``kimg_to_target`` (NaN when never
    reached), ``reached``, ``result`` ("12.3" or "not reached"), ``speedup`` = target_kimg/kimg_to_target on
    seed-mean curves, and over seed pairs (``paired_speedups``) ``pair_mean``, ``pair_std`` (ddof = 1) of
    the pairs that reached, ``pair_reached`` and ``pairs``. Rows with
    no finished sampler of the target set are left out.
    """
    columns = [
        "row",
        *ROW_KEYS,
        "target_sampler",
        "target",
        "target_kimg",
        "sampler",
        "sampler_name",
        "kimg_to_target",
        "reached",
        "result",
        "speedup",
        "pair_mean",
        "pair_std",
        "pair_reached",
        "pairs",
    ]
    rows = curve_rows(with_row_labels(finished(df, budget)))
    curves = seed_mean_curves(rows)
    recorded = recorded_adaptive(rows)
    lines = []
    for _, part in curves.groupby(ROW_KEYS, sort=False, dropna=False):
        higher = bool(part["higher_is_better"].iloc[0])
        finals = part.groupby(["sampler", "sampler_name"])["value"].last(skipna=False).reset_index()
        adaptive = [
            is_adaptive(name, recorded.get(label))
            for label, name in zip(finals["sampler"], finals["sampler_name"], strict=True)
        ]
        fixed = finals[~np.asarray(adaptive, dtype=bool) & np.isfinite(finals["value"])]
        if declared is not None:
            fixed = fixed[fixed["sampler"] == declared]
        elif targets is not None:
            fixed = fixed[fixed["sampler"].isin(list(targets))]
        if fixed.empty:
            continue
        best = fixed.loc[fixed["value"].idxmax() if higher else fixed["value"].idxmin()]
        seeds = rows[same_row(rows, part.iloc[0])]
        scale = row_scale(seeds)
        crossing = {}
        for (sampler, name), curve in part.groupby(["sampler", "sampler_name"]):
            crossing[sampler] = (
                name,
                first_crossing(
                    curve["kimg"].to_numpy(), curve["value"].to_numpy(), float(best["value"]), higher, scale
                ),
            )
        reference = crossing[best["sampler"]][1]
        keys = part.iloc[0][ROW_KEYS].to_dict()
        for sampler in sampler_order(list(crossing)):
            name, k = crossing[sampler]
            logs, censored = paired_speedups(seeds, best["sampler"], sampler, higher, scale, "target")
            ratios = np.exp(logs[censored >= 0])
            lines.append(
                {
                    "row": part["row"].iloc[0],
                    **keys,
                    "target_sampler": best["sampler"],
                    "target": float(best["value"]),
                    "target_kimg": reference,
                    "sampler": sampler,
                    "sampler_name": name,
                    "kimg_to_target": k,
                    "reached": not math.isnan(k),
                    "result": (NOT_REACHED if math.isnan(k) else format_value(k))
                    + (" [records incomplete]" if _incomplete(seeds, sampler) else ""),
                    "speedup": reference / k if k > 0 else math.nan,
                    "pair_mean": float(np.mean(ratios)) if len(ratios) else math.nan,
                    "pair_std": float(np.std(ratios, ddof=1)) if len(ratios) > 1 else math.nan,
                    "pair_reached": len(ratios),
                    "pairs": len(logs),
                }
            )
    return pd.DataFrame(lines, columns=columns)


def speedup_text(line: pd.Series | dict) -> str:
    """ "1.33×", with the seed-pair spread when there are several pairs: "1.33× (pairs 1.30 ± 0.05, n=2)",
    "; 1 of 3 not reached" when some pairs never reach, and "not reached" without a seed-mean crossing."""
    if not line["reached"]:
        text = NOT_REACHED
    else:
        text = f"{line['speedup']:.2f}×"
    pairs, reached = int(line["pairs"]), int(line["pair_reached"])
    if pairs < 2:
        return text
    spread = f"{line['pair_mean']:.2f}" if reached else "–"
    if reached > 1:
        spread += f" ± {line['pair_std']:.2f}"
    missing = f"; {pairs - reached} of {pairs} not reached" if reached < pairs else ""
    return f"{text} (pairs {spread}, n={reached}{missing})"


def _infonoise_speedups(part: pd.DataFrame) -> str:
    """InfoNoise's speed-up cell of one comparison row (each InfoNoise label when there are several)."""
    info = part[part["sampler_name"] == "infonoise"]
    texts = [
        (label, speedup_text(line)) for label, (_, line) in zip(info["sampler"], info.iterrows(), strict=True)
    ]
    if not texts:
        return "–"
    if len(texts) == 1:
        return texts[0][1]
    return "; ".join(f"{label}: {text}" for label, text in texts)


def time_to_target_table(
    df: pd.DataFrame,
    budget: str | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    declared: str | None = None,
) -> pd.DataFrame:
    """Wide view of ``time_to_target``: rows comparisons, columns the kimg each sampler needs.

    ``target (<targets>)`` is the target sampler and its final quality, the sampler columns the kimg to it,
    ``InfoNoise speed-up`` the speed-up over it ("1.40×", "not reached", or "–" without an InfoNoise run,
    with the seed-pair spread when there are several seeds); ``target (all fixed)`` and ``InfoNoise
    speed-up (all fixed)`` do the same against the best of every fixed sampler. A comparison without a
    sampler of ``targets`` shows "–" in those columns. With ``declared`` (a study's ``target:``) the first
    target is that sampler, named ``target (declared)``.
    """
    against = time_to_target(df, budget, targets, declared)
    against_all = time_to_target(df, budget, None)
    samplers = sampler_order(against_all["sampler"].tolist())
    name = "target (declared)" if declared is not None else f"target ({', '.join(targets)})"
    lines = []
    for _, part_all in against_all.groupby(ROW_KEYS, sort=False, dropna=False):
        first = part_all.iloc[0]
        part = against[same_row(against, first)] if not against.empty else against
        line = {"task": first["row"], "budget": first["budget"], "metric": metric_of(first)}
        if part.empty:
            line[name] = "–"
            line |= dict.fromkeys(samplers, "–")
            line["InfoNoise speed-up"] = "–"
        else:
            line[name] = f"{part.iloc[0]['target_sampler']}: {format_value(part.iloc[0]['target'])}"
            by_sampler = part.set_index("sampler")
            for sampler in samplers:
                line[sampler] = by_sampler.loc[sampler, "result"] if sampler in by_sampler.index else "–"
            line["InfoNoise speed-up"] = _infonoise_speedups(part)
        line["target (all fixed)"] = f"{first['target_sampler']}: {format_value(first['target'])}"
        line["InfoNoise speed-up (all fixed)"] = _infonoise_speedups(part_all)
        lines.append(line)
    columns = [
        "task",
        "budget",
        "metric",
        name,
        *samplers,
        "InfoNoise speed-up",
        "target (all fixed)",
        "InfoNoise speed-up (all fixed)",
    ]
    return sort_rows(pd.DataFrame(lines, columns=columns))
