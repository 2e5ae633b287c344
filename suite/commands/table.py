"""``suite table``: the runs' results, one block per task, budget and metric, or the full tables
(``suite.report.table_command.print_tables``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS, TARGET_HELP

HELP = "your runs' results: one block per task, budget and metric (--format md: the full tables)"
FORMATS = ("text", "md", "latex", "csv", "long-csv", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folders",
        nargs="*",
        help="results folders to read as they are, committed evidence included (default: --results)",
    )
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="results folder")
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets (folders holding an EVIDENCE file)",
    )
    parser.add_argument("--task", default=None, help="only this task's rows")
    parser.add_argument("--sampler", default=None, help="only these samplers' rows (a comma list)")
    parser.add_argument("--budget", default=None, help="only this budget's rows")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: compact blocks, at most 120 columns, notes below; md, latex, csv: the full tables one "
        "after another (csv: each under a # caption); the tidy long table for pandas: long-csv, json (one "
        "line per task, budget, metric, protocol and sampler)",
    )
    parser.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    parser.add_argument(
        "--study", default=None, help="a study file: only its grid's runs, missing ones listed"
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.table_command import print_tables

    return print_tables(
        args.results,
        folders=args.folders,
        fmt=args.format,
        task=args.task,
        sampler=args.sampler,
        budget=args.budget,
        everything=args.all,
        target_samplers=args.target_samplers,
        study=args.study,
    )
