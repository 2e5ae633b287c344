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
        type=float,
        default=None,
        help="also plan the time ratio for this speed-up (e.g. 1.5), stated before looking",
    )
    parser.add_argument("--target-samplers", default=None, help=TARGET_HELP)


def run(args: argparse.Namespace) -> int:
    from suite.report.seed_plan import print_seed_plan

    if not args.difference > 0:
        print(
            f"error: --difference {args.difference:g}: give the size of the difference to detect, a positive "
            "number in the metric's units (the plan covers both directions)",
            file=sys.stderr,
        )
        return 2
    if args.speedup is not None and not (args.speedup > 0 and args.speedup != 1):
        print(
            f"error: --speedup {args.speedup:g}: give a positive speed-up other than 1 (e.g. 1.5)",
            file=sys.stderr,
        )
        return 2
    return print_seed_plan(args.results, args.difference, args.power, args.target_samplers, args.speedup)
