"""``suite table``: the comparison and time-to-target tables of a results folder (``suite.table``), the
confidence intervals and verdicts of ``suite.statistics`` after them, the runs whose records stop short
below them, and last what each budget's numbers can and cannot show (its config's ``note``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from suite.results import RunRecord
from suite.statistics import STATISTICS_CAPTION, statistics_table
from suite.table import (
    COMPARISON_CAPTION,
    NO_TARGET,
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
    print(render(comparison_table(df, budget, load_published(args.results)), fmt, COMPARISON_CAPTION))
    print(render(time_to_target_table(df, budget, targets), fmt, target_caption(targets), NO_TARGET))
    print(render(statistics_table(df, budget, targets), fmt, STATISTICS_CAPTION))
    print(incomplete_note(df, fmt), end="")
    print(budget_notes(df, budget, fmt), end="")
    return 0


def budget_notes(df: pd.DataFrame, budget: str | None = None, fmt: str = "md") -> str:
    """What the tabulated numbers can and cannot show: the ``note`` of each budget config the runs ran with
    (read from one run's ``config.yaml`` per comparison folder), one line per budget that has one, only
    ``budget`` where given; '' when none has a note. Lines are commented (``#``, ``%``) in CSV and LaTeX."""
    rows = df if budget is None else df[df["budget"] == budget]
    notes: dict[str, str] = {}
    for run_dir in rows.groupby(rows["run_dir"].map(lambda d: str(Path(d).parent.parent)))["run_dir"].first():
        config = RunRecord(Path(run_dir), "").config.get("budget") or {}
        if config.get("note"):
            notes.setdefault(str(config.get("name")), " ".join(str(config["note"]).split()))
    prefix = {"csv": "# ", "latex": "% "}.get(fmt, "")
    return "".join(f"{prefix}Budget {name}: {note}\n" for name, note in sorted(notes.items()))
