"""``suite lease break RUN_DIR [--force]``: print the holder of a run's lease, then break it
(``suite.lease.break_command``)."""

from __future__ import annotations

import argparse

from suite.commands import RUN_FOLDER_HELP

HELP = "a run's lease: suite lease break RUN_DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    breaking = actions.add_parser(
        "break", help="print the holder of a run's lease, then break it (the holder stops at its next write)"
    )
    breaking.add_argument("run_dir", help=RUN_FOLDER_HELP)
    breaking.add_argument(
        "--force", action="store_true", help="break a lease whose holder is live or of unknown age"
    )


def run(args: argparse.Namespace) -> int:
    from suite.lease import break_command

    return break_command(args.run_dir, args.force)
