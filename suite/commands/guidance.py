"""``suite guidance``: choose a conditional run's guidance scale on held-out conditions
(``suite.run.guidance.sweep_guidance``), written to the run's ``guidance.json``; ``--rescore`` then scores
the run's snapshots again at the scale it chose."""

from __future__ import annotations

import argparse
import sys

from suite.exits import EXIT_USAGE
from suite.names import positive_int

HELP = "choose a conditional run's guidance scale on held-out conditions, written to guidance.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a finished run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    parser.add_argument("--scales", required=True, help="comma-separated guidance scales, e.g. 1,1.5,2,3")
    parser.add_argument(
        "--metric", default=None, help="a metric comparing each sample with its condition's example"
    )
    parser.add_argument("--kimg", type=float, default=None, help="a snapshot (default: the newest)")
    parser.add_argument(
        "--samples", type=positive_int, default=None, help="held-out conditions (default: eval.samples)"
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="then score the run's snapshots again at the scale it chose (its own rows at its own scale)",
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:K or auto")


def run(args: argparse.Namespace) -> int:
    from suite.lease import RunBusy
    from suite.run.evaluation import rescore
    from suite.run.guidance import parse_scales, sweep_guidance

    try:
        scales = parse_scales(args.scales)
        record = sweep_guidance(args.run_dir, scales, args.metric, args.kimg, args.samples, args.device)
        if args.rescore:
            rescore(args.run_dir, None, None, "karras", None, args.device, record["chosen"])
    except (ValueError, RunBusy) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    return 0
