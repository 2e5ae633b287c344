"""``suite status``: the state of every run of a results folder, with SLURM's view
(``suite.report.status``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS

HELP = "state of every run of a results folder"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results", default=None, help=f"results folder (default: {DEFAULT_RESULTS}; a named one must exist)"
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.status import print_status

    return print_status(args.results or DEFAULT_RESULTS, must_exist=args.results is not None)
