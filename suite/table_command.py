"""``suite table``: the comparison and time-to-target tables of a results folder (``suite.table``), the
confidence intervals and verdicts of ``suite.statistics`` after them, and the runs whose records stop
short below them."""

from __future__ import annotations

import argparse
import sys

from suite.statistics import STATISTICS_CAPTION, statistics_table
from suite.table import (
    NO_TARGET,
    comparison_caption,
    comparison_table,
    incomplete_note,
    load_published,
    load_records,
    parse_targets,
    render,
    target_caption,
    time_to_target_table,
)


def main(args: argparse.Namespace) -> int:
    """``suite table``: print both tables of the records under ``args.results``, then the confidence
    intervals and verdicts of ``suite.statistics``.

    ``args.target_samplers`` (optional, a comma list) replaces the paper's baselines as the first target.
    """
    df = load_records(args.results)
    fmt = getattr(args, "format", "md")
    if getattr(args, "study", None):
        from suite.study import restrict_to_study

        df = restrict_to_study(df, args.study, args.results, getattr(args, "budget", None), fmt)
    if df.empty:
        print(f"no records under {args.results}", file=sys.stderr)
        print(incomplete_note(df, fmt), end="", file=sys.stderr)
        return 1
    budget = getattr(args, "budget", None)
    targets = parse_targets(getattr(args, "target_samplers", None))
    caption = comparison_caption(df, budget)
    print(render(comparison_table(df, budget, load_published(args.results)), fmt, caption))
    print(render(time_to_target_table(df, budget, targets), fmt, target_caption(targets), NO_TARGET))
    print(render(statistics_table(df, budget, targets), fmt, STATISTICS_CAPTION))
    print(incomplete_note(df, fmt), end="")
    return 0
