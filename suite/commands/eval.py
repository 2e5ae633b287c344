"""``suite eval``: re-score the saved network snapshots of a finished run
(``suite.run.evaluation.rescore``)."""

from __future__ import annotations

import argparse
import sys

from suite.commands import RUN_FOLDER_HELP
from suite.exits import EXIT_USAGE
from suite.names import positive_int

HELP = "re-score the saved network snapshots of a finished run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help=RUN_FOLDER_HELP)
    parser.add_argument("--metric", default=None, help="one metric of the task (default: all)")
    parser.add_argument("--kimg", type=float, default=None, help="one evaluation point (default: all)")
    parser.add_argument("--grid", default="karras", help="solver grid: karras | infogrid | …")
    parser.add_argument(
        "--steps", type=positive_int, default=None, help="solver steps, >= 1 (default: the task's)"
    )
    parser.add_argument(
        "--guidance", type=float, default=None, help="classifier-free guidance scale (default: the budget's)"
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:K or auto")
    parser.add_argument(
        "--null",
        action="store_true",
        help="score the null network (raw output F ≡ 0, so D = c_skip·x) on this run's protocol instead, "
        "once for its comparison folder (written to null-network.jsonl there; the tables show it beside "
        "every sampler)",
    )


def run(args: argparse.Namespace) -> int:
    from suite.names import did_you_mean
    from suite.run.grids import GRIDS

    if args.grid not in GRIDS:  # before the run folder, the data and the network are read
        close = did_you_mean(args.grid, GRIDS)
        raise ValueError(f"unknown solver grid {args.grid!r}; {close}valid grids: {', '.join(GRIDS)}")
    from suite.lease import RunBusy
    from suite.run.evaluation import rescore, score_null

    if args.null:
        if args.metric or args.kimg is not None or args.grid != "karras" or args.steps or args.guidance:
            raise ValueError(
                "--null scores the run's own protocol with every metric; drop --metric, --kimg, --grid, "
                "--steps and --guidance"
            )
        print(f"wrote {score_null(args.run_dir, args.device)}")
        return 0

    try:
        rescore(args.run_dir, args.metric, args.kimg, args.grid, args.steps, args.device, args.guidance)
    except RunBusy as busy:
        print(f"error: {busy}", file=sys.stderr)
        return EXIT_USAGE
    return 0
