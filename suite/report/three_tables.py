"""The three full tables of the records, rendered once for ``suite table --format md|latex|csv`` and for
``suite report``: the comparison table (final quality, mean ± std over seeds, beside the published value;
``suite.report.table.comparison_table``), the time-to-target table (processed examples until the seed-mean
curve first reaches the target's final quality; ``suite.report.time_to_target.time_to_target_table``) and the
statistics table (95% confidence intervals over seeds, paired differences, time-to-target ratios and the
verdicts; ``suite.report.comparisons.statistics_table``), each with its caption.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from suite.report.comparisons import statistics_caption, statistics_table
from suite.report.rendering import NO_TARGET, floor_caption, render, target_caption
from suite.report.rows import TARGET_BASELINES
from suite.report.table import comparison_caption, comparison_table
from suite.report.time_to_target import time_to_target_table


def render_tables(
    df: pd.DataFrame,
    fmt: str,
    budget: str | None = None,
    published: pd.DataFrame | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    declared: str | None = None,
) -> list[str]:
    """The comparison, time-to-target and statistics tables of the records ``df`` (``load_records``), in
    that order, each rendered as ``fmt`` (md, latex or csv) with its caption; restricted to ``budget`` where
    given, beside the ``published`` values, the time to target against ``targets`` (or the study's
    ``declared`` target sampler)."""
    comparison = render(
        comparison_table(df, budget, published),
        fmt,
        comparison_caption(df, budget) + floor_caption(df, budget),
    )
    target = render(
        time_to_target_table(df, budget, targets, declared), fmt, target_caption(targets, declared), NO_TARGET
    )
    statistics = statistics_table(df, budget, targets, declared)
    scales = statistics["scale"].tolist() if not statistics.empty else []
    return [comparison, target, render(statistics, fmt, statistics_caption(declared, scales))]
