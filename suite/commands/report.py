"""``suite report``: write REPORT.md with the tables, figures and commands
(``suite.report.report.report_results``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS, TARGET_HELP

HELP = "write RESULTS/REPORT.md of your runs with tables, figures and commands (--all: the evidence too)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="results folder")
    parser.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    parser.add_argument(
        "--out",
        default=None,
        help="folder for REPORT.md and its figures (default RESULTS; RESULTS may then be read-only)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets (folders holding an EVIDENCE file)",
    )
    parser.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.report import report_results

    return report_results(args.results, args.out, args.force, args.target_samplers, everything=args.all)
