"""``suite samples``: write generated samples of a run's saved snapshot, without the trainer
(``suite.run.evaluation.write_samples``; ``--out`` guarded by ``suite.outputs``)."""

from __future__ import annotations

import argparse

from suite.commands import RUN_FOLDER_HELP

HELP = "write generated samples of a run's saved snapshot (image grid or texts), no trainer"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help=RUN_FOLDER_HELP)
    parser.add_argument("--kimg", type=float, default=None, help="an evaluation point (default: the newest)")
    parser.add_argument("--out", required=True, help="folder for samples-<nimg>.png or .txt")
    parser.add_argument("--n", type=int, default=64, help="number of samples (default 64)")
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )


def run(args: argparse.Namespace) -> int:
    from suite.outputs import guarded_output
    from suite.run.evaluation import write_samples

    with guarded_output(args.out, args.force):
        write_samples(args.run_dir, args.out, args.kimg, args.n, args.device)
    return 0
