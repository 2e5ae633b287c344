"""How sure a comparison is: 95% confidence intervals over seeds on the metric's own scale, paired
comparisons against a target fixed in advance (or against every baseline with Holm's correction), the
time-to-target ratio over seed pairs with right-censoring, a verdict per comparison
(``suite.report.statistics`` holds the intervals, ``suite.report.seed_plan`` the seed planning).

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

Verdict of a sampler S against a target T (``verdict``): with one seed pair "1 seed: no interval; run ≥
3 seeds"; paired differences that do not vary "constant: S − T = d" (no test); otherwise "S better than T
by d FID, 95% CI [a, b], n seed pairs" (or "worse"), or "not distinguishable from T with n seed pairs" when
the (Holm-adjusted) p-value is ≥ 0.05; then the time to the level both runs of each pair reach (T's final
value where S ends at least as good in every pair, else the worse final of each pair;
``suite.report.statistics``): "reaches T's final FID 1.60× sooner, 95% CI [a, b]" (or "takes … longer", or
"not distinguishable", an interval [0, ∞] marked "uninformative"), "not tested" with the bound where fewer
than two pairs observed both crossings, "k of n censored" whenever a crossing lay before a first
evaluation, and "ends behind T's final FID in k of n pairs: run longer than L kimg" where S never caught up.
Only a p-value makes a statement: a comparison without one is never "better", "worse", "sooner" or "longer".

Columns of ``comparison_intervals``: ``row``, the row keys, ``sampler``, ``target_sampler``, ``method``
("declared" | "holm"), ``baselines`` (m, the comparisons Holm adjusts over; 1 when declared), ``scale``,
``final`` (Interval, metric units), ``difference`` (Interval, metric units), ``difference_sd`` (sd of d_k on
the scale), ``difference_p`` (adjusted), ``ratio`` (Interval of e^μ; None below 1 pair), ``ratio_p``
(adjusted), ``ratio_sd`` (sd of the observed log ratios), ``pairs``, ``ratio_reached`` (pairs not
censored), ``censored``, ``behind`` (pairs whose sampler ends worse than the target), ``last_kimg`` (the
sampler's last evaluation) and ``outliers`` (the sampler's seeds whose final is an outlier on the scale:
``suite.report.statistics.outliers``, named in the verdict, never dropped).

Columns of ``statistics_table`` (strings): task, budget, metric, sampler, seeds, "final, 95% CI", target,
"sampler − target (paired by seed), 95% CI", "time-to-target ratio, 95% CI", verdict, and added after them
``scale`` (the metric's comparison scale), ``method`` (declared | holm over m baselines) and ``censored``
("k of n").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from suite.report.rows import (
    ROW_KEYS,
    TARGET_BASELINES,
    curve_rows,
    final_rows,
    finished,
    format_value,
    is_adaptive,
    metric_of,
    recorded_adaptive,
    sampler_order,
    sort_rows,
    with_row_labels,
)
from suite.report.statistics import (
    CONFIDENCE,
    ONE_SEED,
    Interval,
    censored_ratio_interval,
    difference_on_scale,
    holm,
    outliers,
    scaled_interval,
)
from suite.report.time_to_target import behind_pairs, paired_speedups, row_scale, same_row, to_scale

SEEDS_ADVISED = 3


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
    "ratio_sd",
    "pairs",
    "ratio_reached",
    "censored",
    "behind",
    "last_kimg",
    "outliers",
]


def _seed_finals(final: pd.DataFrame) -> dict[str, pd.Series]:
    """Per sampler label, its final value per seed (mean over duplicate rows of one seed)."""
    return {
        str(sampler): part.groupby("seed")["value"].mean().sort_index()
        for sampler, part in final.groupby("sampler")
    }


def _outlier_seeds(finals: pd.Series, scale: str) -> tuple[int, ...]:
    """The seeds whose final value is an outlier on the metric's scale (``outliers``)."""
    flags = outliers(to_scale(finals.to_numpy(dtype=float), scale))
    return tuple(int(seed) for seed, flag in zip(finals.index, flags, strict=True) if flag)


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
                "ratio_sd": math.nan,
                "pairs": 0,
                "ratio_reached": 0,
                "censored": 0,
                "behind": 0,
                "last_kimg": math.nan,
                "outliers": _outlier_seeds(finals[sampler], scale),
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
                        "ratio_sd": float(np.std(logs[censored == 0], ddof=1))
                        if (censored == 0).sum() > 1
                        else math.nan,
                        "ratio_reached": int((censored == 0).sum()),
                        "censored": int((censored != 0).sum()),
                        "behind": behind_pairs(evaluations, target, sampler, higher),
                        "last_kimg": float(evaluations.loc[evaluations["sampler"] == sampler, "kimg"].max()),
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


def _significant(line: Mapping, key: str) -> bool:
    """Whether a comparison is distinguishable: its (adjusted) p-value below 1 − confidence; a comparison
    with no p-value (a constant, or a time ratio with fewer than two observed crossings) is never a
    statement."""
    p = line.get(key, math.nan)
    return p is not None and not math.isnan(p) and p < 1.0 - CONFIDENCE


def uninformative(interval: Interval) -> bool:
    """A ratio interval that excludes no value: [0, ∞]."""
    return interval.low <= 0.0 and math.isinf(interval.high)


def _level_words(line: Mapping, target: str, metric: str) -> str:
    """The level a time ratio is measured at: the target's final value where the sampler ends at least as
    good in every pair, else the worse final of each pair."""
    if int(line.get("behind", 0) or 0) == 0:
        return f"{target}'s final {metric}"
    return f"the worse final {metric} of each pair"


def _ratio_text(line: Mapping, target: str, metric: str) -> str:
    """The time-to-level clause of a verdict (module docstring), "" when there is no ratio."""
    r: Interval | None = line["ratio"]
    if r is None or r.n < 2:
        return ""
    level = f"{100 * CONFIDENCE:g}%"
    pairs, observed = int(line["pairs"]), int(line.get("ratio_reached", line["pairs"]))
    notes = [_censored_text(line)]
    behind = int(line.get("behind", 0) or 0)
    if behind:
        last = float(line.get("last_kimg", math.nan))
        notes.append(
            f"ends behind {target}'s final {metric} in {behind} of {pairs} pairs: run longer than {last:g} "
            "kimg to see when it reaches it"
        )
    note = "".join(f"; {text}" for text in notes if text)
    to = _level_words(line, target, metric)
    if math.isnan(line.get("ratio_p", math.nan)) and math.isnan(r.estimate):
        bound = (
            f"at most {_times(r.high)}×"
            if math.isfinite(r.high)
            else (f"at least {_times(r.low)}×" if r.low > 0 else "unbounded")
        )
        return (
            f"; time to {to}: not tested, {observed} of {pairs} pairs observed both crossings "
            f"(mean speed-up {bound}; evaluate earlier and longer to tell){note}"
        )
    interval = f"{level} CI [{_times(r.low)}, {_times(r.high)}]"
    if uninformative(r):
        interval += ": uninformative"
    if not _significant(line, "ratio_p"):
        return (
            f"; time to {to} not distinguishable ({_times(r.estimate)}×, {interval}{note}"
            f"{_adjusted(line, 'ratio_p')})"
        )
    if r.low > 1:
        return f"; reaches {to} {_times(r.estimate)}× sooner, {interval}{note}{_adjusted(line, 'ratio_p')}"
    inverse = (
        1 / r.estimate if r.estimate > 0 else math.inf,
        1 / r.high,
        1 / r.low if r.low > 0 else math.inf,
    )
    return (
        f"; takes {_times(inverse[0])}× longer to reach {to}, {level} CI "
        f"[{_times(inverse[1])}, {_times(inverse[2])}]{note}{_adjusted(line, 'ratio_p')}"
    )


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
    if line.get("difference_sd", math.nan) == 0:
        return (
            f"constant: {sampler} − {target} = {d.estimate:+.4g} {metric} in each of {pairs} seed pairs "
            "(no seed variance: no test)"
        )
    if not _significant(line, "difference_p"):
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
    return text + _ratio_text(line, target, metric) + _outlier_text(line)


def _outlier_text(line: Mapping) -> str:
    """ "; seed 4 an outlier on the log scale: check its run" where a final is one (``outliers``)."""
    seeds = tuple(line.get("outliers", ()) or ())
    if not seeds:
        return ""
    named = ", ".join(str(seed) for seed in seeds)
    plural = "s" if len(seeds) > 1 else ""
    scale = line.get("scale", "log")
    return (
        f"; {line['sampler']}'s seed{plural} {named} an outlier on the {scale} scale: check the run{plural}"
    )


def in_paper_order(table: pd.DataFrame) -> pd.DataFrame:
    """Rows in the table's order of comparisons (``suite.report.table``), samplers in their order within
    each."""
    if table.empty:
        return table
    order = sort_rows(table[["task", "budget"]].drop_duplicates())
    ranked = table.merge(order.assign(_rank=range(len(order))), on=["task", "budget"])
    return ranked.sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)


def pairs_text(n: int) -> str:
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
        counted = f", {pairs_text(pairs)}" if pairs > 1 else ""
        if d is not None:
            difference = d.text(abs(line["final"].estimate), signed=True) + counted
        censored = _censored_text(line)
        if r is not None:
            interval = f" [{_times(r.low)}, {_times(r.high)}]" if r.defined else f" ({ONE_SEED})"
            if r.defined and uninformative(r):
                interval += " (uninformative)"
            elif r.defined and math.isnan(r.estimate):
                interval += " (bound, not tested)"
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
    return in_paper_order(pd.DataFrame(lines))


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
