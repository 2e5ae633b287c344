"""``suite profile``: the post hoc information profile of a task's data
(``suite.measure.profile.write_profile``; ``--out`` guarded by ``suite.outputs``, ``--results`` checked by
``suite.paths.results_folder``, both before anything is computed)."""

from __future__ import annotations

import argparse

from suite.commands import DEFAULT_RESULTS

HELP = "post hoc information profile of a task's data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default=None, help="a task (or task=NAME)")
    parser.add_argument("--budget", default=None, help="a budget (default smoke)")
    parser.add_argument(
        "--results",
        default=None,
        help=f"results folder whose figures draw the profile (default: {DEFAULT_RESULTS})",
    )
    parser.add_argument(
        "--out", default=None, help="folder for the figure and CSV (default RESULTS/profiles)"
    )
    parser.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )
    parser.add_argument(
        "overrides", nargs="*", help="key=value config overrides (task=, budget=, results= as their flags)"
    )


def run(args: argparse.Namespace) -> int:
    from suite.launch.preflight import group_flags
    from suite.measure.profile import write_profile
    from suite.paths import results_folder

    flags = {"task": args.task, "budget": args.budget, "results": args.results}
    chosen, overrides = group_flags(flags, args.overrides)
    if chosen["task"] is None:
        raise ValueError("suite profile needs --task TASK (suite list names them)")
    budget, results = chosen["budget"] or "smoke", chosen["results"] or DEFAULT_RESULTS
    results_folder(results)
    return write_profile(chosen["task"], budget, results, args.out, overrides, args.force)
