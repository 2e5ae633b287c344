"""``suite status``: the state of the user's runs in a results folder (``--all``: every run), with SLURM's
view (``suite.report.status``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS

HELP = "state of your runs in a results folder (--all: the committed evidence too)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results", default=None, help=f"results folder (default: {DEFAULT_RESULTS}; a named one must exist)"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets (folders holding an EVIDENCE file)",
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.status import print_status

    return print_status(
        args.results or DEFAULT_RESULTS, must_exist=args.results is not None, everything=args.all
    )
