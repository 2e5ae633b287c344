"""``suite plot``: write the figures from the records (``suite.report.plots.plot_results``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS

HELP = "write the figures from the records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="results folder")
    parser.add_argument(
        "--out",
        default=None,
        help="folder for the figures (default RESULTS/figures; RESULTS may be read-only)",
    )
    parser.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets below --results (folders holding an EVIDENCE file); "
        "--results naming one such set draws it as it is",
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.plots import plot_results

    return plot_results(args.results, args.out, args.force, args.all)
