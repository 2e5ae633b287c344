"""``suite profile``: the post hoc information profile of a task's data
(``suite.report.profile.write_profile``)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS

HELP = "post hoc information profile of a task's data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True)
    parser.add_argument("--budget", default="smoke")
    parser.add_argument(
        "--results", default=DEFAULT_RESULTS, help="results folder whose figures draw the profile"
    )
    parser.add_argument(
        "--out", default=None, help="folder for the figure and CSV (default RESULTS/profiles)"
    )
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")


def run(args: argparse.Namespace) -> int:
    from suite.report.profile import write_profile

    return write_profile(args.task, args.budget, args.results, args.out, args.overrides)
