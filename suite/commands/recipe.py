"""``suite recipe``: a paper row's recipe card (``suite.report.recipe``) beside the values a run composes,
every difference marked; exits 1 on a composed setting that differs from its card undeclared."""

from __future__ import annotations

import argparse
import sys

from suite.exits import EXIT_FAILED, EXIT_USAGE

HELP = "a row's recipe card: every result-deciding setting, its source, and the value a run composes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="a task with a recipe card (suite/conf/recipe/)")
    parser.add_argument("--budget", default="paper", help="paper (default) or short")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, composed as `suite run` would")


def run(args: argparse.Namespace) -> int:
    from suite.report.recipe import check_card, render

    try:
        lines = check_card(args.task, args.budget, args.overrides)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(render(args.task, args.budget, lines))
    return EXIT_FAILED if any(line.drift for line in lines) else 0
