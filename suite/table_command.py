"""``suite table``: the comparison and time-to-target tables of a results folder (``suite.table``), the
confidence intervals and verdicts of ``suite.statistics`` after them, the runs whose records stop short
below them, and last what each budget's numbers can and cannot show (its config's ``note``).
``--format long-csv|json`` prints the tidy long table of ``suite.table_long`` instead, alone on stdout (the
note on incomplete records goes to stderr), so that ``pandas.read_csv`` reads it."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import pandas as pd

from suite.results import RunRecord
from suite.statistics import statistics_caption, statistics_table
from suite.table import (
    NO_TARGET,
    comparison_caption,
    comparison_table,
    floor_caption,
    incomplete_note,
    load_published,
    load_records,
    parse_targets,
    render,
    target_caption,
    time_to_target_table,
)
from suite.table_long import LONG_FORMATS, long_table, render_long


def main(args: argparse.Namespace) -> int:
    """``suite table``: print both tables of the records under ``args.results``, then the confidence
    intervals and verdicts of ``suite.statistics``.

    ``args.target_samplers`` (optional, a comma list) replaces the paper's baselines as the first target.
    """
    df = load_records(args.results)
    fmt = getattr(args, "format", "md")
    declared = None
    if getattr(args, "study", None):
        from suite.study import load_study, restrict_to_study

        declared = load_study(args.study).target
        if fmt in LONG_FORMATS:  # the study's header and missing runs go to stderr, the table alone to stdout
            with contextlib.redirect_stdout(sys.stderr):
                df = restrict_to_study(df, args.study, args.results, getattr(args, "budget", None), "csv")
        else:
            df = restrict_to_study(df, args.study, args.results, getattr(args, "budget", None), fmt)
    if df.empty:
        print(f"no records under {args.results}", file=sys.stderr)
        print(incomplete_note(df, fmt), end="", file=sys.stderr)
        return 1
    budget = getattr(args, "budget", None)
    if fmt in LONG_FORMATS:
        print(render_long(long_table(df, budget, load_published(args.results)), fmt), end="")
        print(incomplete_note(df, "csv"), end="", file=sys.stderr)
        return 0
    targets = parse_targets(getattr(args, "target_samplers", None))
    caption = comparison_caption(df, budget) + floor_caption(df, budget)
    print(render(comparison_table(df, budget, load_published(args.results)), fmt, caption))
    caption = target_caption(targets, declared)
    print(render(time_to_target_table(df, budget, targets, declared), fmt, caption, NO_TARGET))
    statistics = statistics_table(df, budget, targets, declared)
    scales = statistics["scale"].tolist() if not statistics.empty else []
    print(render(statistics, fmt, statistics_caption(declared, scales)))
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
