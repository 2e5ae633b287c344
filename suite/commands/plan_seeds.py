"""``suite plan-seeds``: the seeds a stated difference to the target needs, from an upper bound of the
spread measured so far in the user's runs (``suite.report.rows.load_own``; ``--all`` adds the committed
evidence), planned by ``suite.report.seed_plan``."""

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
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets (folders holding an EVIDENCE file)",
    )


def run(args: argparse.Namespace) -> int:
    from suite.report.rendering import NO_ROWS, render
    from suite.report.rows import load_own, parse_targets
    from suite.report.seed_plan import plan_caption, seed_plan

    if args.speedup == 1:
        print(
            "error: --speedup 1: give the speed-up worth detecting, other than 1 (e.g. 1.5)", file=sys.stderr
        )
        return 2
    df, left_out = load_own([args.results], args.all)
    if df.empty:
        where = args.results + (f" (left out: {left_out}; --all adds them)" if left_out else "")
        print(f"error: no records under {where}", file=sys.stderr)
        return 1
    targets = parse_targets(args.target_samplers)
    plan = seed_plan(df, args.difference, None, targets, args.power, speedup=args.speedup)
    print(render(plan, "md", plan_caption(args.power, args.difference, speedup=args.speedup), NO_ROWS))
    if left_out:
        print(f"Left out: committed evidence {left_out}; `suite plan-seeds --all` adds it.")
    return 0
