"""``suite bench train|sampler|eval|sweep|plan|statistics``: measured speed figures, side by side in one run
(``suite.measure.bench``), and the simulated studies through the table's statistics
(``suite.measure.statistics``)."""

from __future__ import annotations

import argparse

from suite.names import positive_int

HELP = "measured speed figures, side by side in one run"
KINDS = {
    "train": "training throughput, FLOPs and memory per precision/compile variant",
    "sampler": "each sampler's cost per step against the training step",
    "eval": "samples/s at the task's NFE and metric features/s",
    "sweep": "aggregate examples/s, samples/s and memory of K concurrent runs on one device",
    "plan": "suite run's planned wall time against the measured wall time of the same run",
}
BATCH_HELP = {
    "train": "global batch (default: the budget's)",
    "sampler": "global batch (default 512)",
    "eval": "sample and feature batch (default: the budget's eval.batch_size)",
    "sweep": "global batch of each run (default: the budget's)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="what", required=True)
    for what, about in KINDS.items():
        kind = kinds.add_parser(what, help=about)
        if what == "plan":
            kind.add_argument("--task", default="bfashion,twoscale", help="comma list of tasks")
            kind.add_argument("--budget", default="demo,smoke", help="comma list of budgets")
        else:
            kind.add_argument("--task", default="bfashion")
            kind.add_argument("--budget", default="smoke")
        kind.add_argument("--device", default="auto")
        if what in BATCH_HELP:
            kind.add_argument("--batch", type=int, default=None, help=BATCH_HELP[what])
        if what in ("train", "sampler", "sweep"):
            kind.add_argument("--steps", type=int, default=None, help="timed training steps")
        if what == "train":
            kind.add_argument("--variants", default=None, help="comma list of fp32,bf16,bf16+compile (all)")
        if what == "sweep":
            kind.add_argument("--runs", default="1,2,4,8", help="comma list of concurrent runs, 1 included")
        if what in ("eval", "sweep"):
            kind.add_argument(
                "--samples",
                type=int,
                default=None,
                help="generated samples (default: the budget's on CUDA, 8 on the CPU)",
            )
        kind.add_argument("--out", default=None, help="also write the figures as JSON to this file")
        kind.add_argument("overrides", nargs="*", help="key=value config overrides")
    statistics = kinds.add_parser(
        "statistics", help="simulated studies through the table's statistics: coverage and false verdicts"
    )
    statistics.add_argument(
        "--replications", type=positive_int, default=1000, help="studies per cell (default 1000: ±1%% s.e.)"
    )
    statistics.add_argument("--pilots", type=positive_int, default=1000, help="pilot studies per seed plan")
    statistics.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    statistics.add_argument(
        "--quick",
        action="store_true",
        help="12 cells (power curves, dense grid, 3 and 5 seeds) for a quick gate",
    )


def run(args: argparse.Namespace) -> int:
    if args.what == "statistics":
        from suite.measure.statistics import print_simulation

        return print_simulation(args.replications, args.pilots, args.seed, args.quick)
    from suite.measure.bench import measure
    from suite.measure.request import BenchRequest

    options = ("batch", "steps", "variants", "runs", "samples")
    return measure(
        BenchRequest(
            what=args.what,
            task=args.task,
            budget=args.budget,
            device=args.device,
            overrides=tuple(args.overrides),
            out=args.out,
            **{name: getattr(args, name) for name in options if hasattr(args, name)},
        )
    )
