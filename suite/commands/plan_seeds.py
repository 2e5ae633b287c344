"""``suite plan-seeds``: the seeds a stated difference to the target needs, from an upper bound of the
spread measured so far (``suite.report.seed_plan.print_seed_plan``)."""

from __future__ import annotations

import argparse
import sys

from suite.commands import DEFAULT_RESULTS, TARGET_HELP
from suite.names import positive_number, probability

HELP = "seeds a stated difference to the target needs, from an upper bound of the spread"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="results folder")
    parser.add_argument(
        "--difference",
        type=positive_number,
        required=True,
        help="difference to detect, > 0 in the metric's units (its size; the metric says which way is "
        "better), stated before looking (never the measured one)",
    )
    parser.add_argument(
        "--power", type=probability, default=0.8, help="power of the paired t test, in (0, 1) (default 0.8)"
    )
    parser.add_argument(
        "--speedup",
        type=positive_number,
        default=None,
        help="also plan the time ratio for this speed-up (e.g. 1.5), stated before looking",
    )
    parser.add_argument("--target-samplers", default=None, help=TARGET_HELP)


def run(args: argparse.Namespace) -> int:
    from suite.report.seed_plan import print_seed_plan

    if args.speedup == 1:
        print(
            "error: --speedup 1: give the speed-up worth detecting, other than 1 (e.g. 1.5)", file=sys.stderr
        )
        return 2
    return print_seed_plan(args.results, args.difference, args.power, args.target_samplers, args.speedup)
