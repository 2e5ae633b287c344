"""Command line: ``suite run|eval|data|profile|list|samplers|status|lease|table|plot|report|bench``.

Each subcommand is a small function; heavy imports happen inside them so ``suite --help`` is instant.
``suite run`` handles SIGTERM, SIGUSR2 and SIGINT from its start (``suite.stopping``): the launch stops
cleanly and exits with status 130.
``suite plan-seeds`` (``suite.statistics``) says how many seeds a difference to the target needs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable


def _run(args: argparse.Namespace) -> int:
    from suite.runner import check_pack_size, check_runs, describe, plan_runs, run_local, run_packed

    if args.study:
        from suite.study import run_study

        return run_study(args)
    if args.task is None:
        raise ValueError("suite run needs --task TASK (suite list names them) or --study FILE")
    seeds = 1 if args.seeds is None else args.seeds
    runs = plan_runs(
        args.task, args.sampler or "all", args.budget or "smoke", seeds, args.results, args.overrides
    )
    check_runs(runs)  # every sampler, weight, task and network built, every invalid value reported at once
    check_pack_size(args.runs_per_gpu)
    if args.dry_run:
        from omegaconf import OmegaConf

        from suite.cost import describe_cost, planned_cost

        for run in runs:
            print(f"# {run.label}  ->  {run.run_dir}\n{OmegaConf.to_yaml(run.cfg)}")
        print(describe(runs))
        print(describe_cost(planned_cost(runs[0].spec), len(runs)))
        return 0
    if args.launcher == "slurm":
        from suite.slurm import submit

        return submit(runs, args)
    return run_local(runs) if args.runs_per_gpu == 1 else run_packed(runs, args.runs_per_gpu)


def _list(args: argparse.Namespace) -> int:
    from suite.config import group_options
    from suite.sampler import SAMPLERS
    from suite.task import TASKS

    print("tasks:")
    for name, cls in TASKS:
        configured = "" if name in group_options("task") else "  (no config)"
        print(f"  {name:<16} {cls.modality:<9} {(cls.__doc__ or '').strip().splitlines()[0]}{configured}")
    print("samplers:")
    for name, cls in SAMPLERS:
        kind = "adaptive" if cls.adaptive else "fixed"
        print(f"  {name:<16} {kind:<9} {(cls.__doc__ or '').strip().splitlines()[0]}")
    print("budgets:")
    for name in group_options("budget"):
        print(f"  {name}")
    return 0


def _samplers(args: argparse.Namespace) -> int:
    from suite.plots import plot_sampler_densities

    plot_sampler_densities(args.plot, weight=args.weight, sigma_data=args.sigma_data)
    print(f"wrote {args.plot}")
    return 0


def _data(args: argparse.Namespace) -> int:
    from suite.runner import resolve_task
    from suite.task import TASKS

    if len(args.paths) > 2:
        raise ValueError(f"suite data takes [SRC] DEST, got {len(args.paths)} paths: {' '.join(args.paths)}")
    source, dest = (None, args.paths[0]) if len(args.paths) == 1 else args.paths
    task = resolve_task(args.task)
    if args.unpinned_archive and task != "dna":
        raise ValueError(f"--unpinned-archive applies to `suite data dna` only, not to {task!r}")
    options = {"unpinned_archive": True} if args.unpinned_archive else {}
    TASKS.get(task).prepare(source, dest, **options)
    return 0


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    def call(args: argparse.Namespace) -> int:
        import importlib

        return getattr(importlib.import_module(module), function)(args)

    return call


TARGET_HELP = (
    "comma list of sampler labels whose best final quality is the time-to-target target "
    "(default: logu,cos,fm,edm, the paper's fixed baselines; the table also reports all fixed samplers)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="suite", description="InfoNoise benchmark suite of diffusion noise samplers."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train and evaluate runs (locally or as SLURM job arrays)")
    run.add_argument("--task", default=None, help="a task (required unless --study)")
    run.add_argument("--sampler", default=None, help="a sampler name, a comma list, or all (default)")
    run.add_argument("--budget", default=None, help="a budget (default smoke)")
    run.add_argument("--seeds", type=int, default=None, help="number of training seeds (0..N-1; default 1)")
    run.add_argument(
        "--study", default=None, help="a study file (studies/*.yaml): its grid instead of --task etc."
    )
    run.add_argument("--results", default="results")
    run.add_argument("--dry-run", action="store_true", help="check every planned run and print them")
    run.add_argument("--launcher", choices=["local", "slurm"], default="local")
    run.add_argument("--partition", default=None)
    run.add_argument("--gpus-per-run", type=int, default=None)
    run.add_argument("--time", type=int, default=None, help="minutes per SLURM job")
    run.add_argument("--array-parallelism", type=int, default=None)
    run.add_argument("--profile", default=None, help="cluster profile in slurm/profiles/ (default: local)")
    run.add_argument(
        "--runs-per-gpu",
        type=int,
        default=1,
        help="train K runs at once on one device, as K processes (SLURM: K runs per array task)",
    )
    run.add_argument("overrides", nargs="*", help="key=value config overrides; a,b,c sweeps a value")
    run.set_defaults(func=_run)

    evaluate = sub.add_parser("eval", help="re-score the saved network snapshots of a finished run")
    evaluate.add_argument("run_dir", help="a run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    evaluate.add_argument("--metric", default=None, help="one metric of the task (default: all)")
    evaluate.add_argument("--kimg", type=float, default=None, help="one evaluation point (default: all)")
    evaluate.add_argument("--grid", default="karras", help="solver grid: karras | infogrid | …")
    evaluate.add_argument("--steps", type=int, default=None, help="solver steps (default: the task's)")
    evaluate.add_argument(
        "--guidance", type=float, default=None, help="classifier-free guidance scale (default: the budget's)"
    )
    evaluate.add_argument("--device", default="auto")
    evaluate.set_defaults(func=_lazy("suite.evaluation", "main"))

    data = sub.add_parser(
        "data", help="download or convert a task's real data set: suite data TASK [SRC] DEST"
    )
    data.add_argument("task")
    data.add_argument("paths", nargs="+", metavar="[SRC] DEST")
    data.add_argument(
        "--unpinned-archive",
        action="store_true",
        help="dna only: a re-released DDSM archive; check it against the Zenodo record (when reachable) "
        "instead of the pinned md5 and size",
    )
    data.set_defaults(func=_data)

    profile = sub.add_parser("profile", help="post hoc information profile of a task's data")
    profile.add_argument("--task", required=True)
    profile.add_argument("--budget", default="smoke")
    profile.add_argument("--results", default="results", help="results folder whose figures draw the profile")
    profile.add_argument(
        "--out", default=None, help="folder for the figure and CSV (default RESULTS/profiles)"
    )
    profile.add_argument("overrides", nargs="*", help="key=value config overrides")
    profile.set_defaults(func=_lazy("suite.profile", "main"))

    sub.add_parser("list", help="every task, sampler and budget").set_defaults(func=_list)

    samplers = sub.add_parser("samplers", help="plot every sampler's density and effective allocation")
    samplers.add_argument("--plot", required=True, help="output image (PNG/PDF)")
    samplers.add_argument("--weight", choices=["edm", "uniform"], default="edm")
    samplers.add_argument("--sigma-data", type=float, default=0.5)
    samplers.set_defaults(func=_samplers)

    status = sub.add_parser("status", help="state of every run of a results folder")
    status.add_argument("--results", default="results")
    status.set_defaults(func=_lazy("suite.status", "main"))

    lease = sub.add_parser("lease", help="a run's lease: suite lease break RUN_DIR")
    lease_actions = lease.add_subparsers(dest="action", required=True)
    breaking = lease_actions.add_parser(
        "break", help="print the holder of a run's lease, then break it (the holder stops at its next write)"
    )
    breaking.add_argument("run_dir", help="a run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    breaking.set_defaults(func=_lazy("suite.lease", "break_command"))

    table = sub.add_parser("table", help="compile the comparison table from the records")
    table.add_argument("--results", default="results")
    table.add_argument("--budget", default=None)
    table.add_argument("--format", choices=["md", "latex", "csv"], default="md")
    table.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    table.add_argument(
        "--study", default=None, help="a study file: only its grid's runs, missing ones listed"
    )
    table.set_defaults(func=_lazy("suite.table_command", "main"))

    plan = sub.add_parser(
        "plan-seeds", help="seeds a difference to the target needs, from the measured paired spread"
    )
    plan.add_argument("--results", default="results")
    plan.add_argument(
        "--difference",
        type=float,
        default=None,
        help="difference to detect, in the metric's units (default: each sampler's measured one)",
    )
    plan.add_argument("--power", type=float, default=0.8, help="power of the paired t test (default 0.8)")
    plan.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    plan.set_defaults(func=_lazy("suite.statistics", "plan_main"))

    plot = sub.add_parser("plot", help="write the figures from the records")
    plot.add_argument("--results", default="results")
    plot.set_defaults(func=_lazy("suite.plots", "main"))

    report = sub.add_parser("report", help="write results/REPORT.md with tables, figures and commands")
    report.add_argument("--results", default="results")
    report.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    report.set_defaults(func=_lazy("suite.report", "main"))

    bench = sub.add_parser("bench", help="measured speed figures, side by side in one run")
    kinds = bench.add_subparsers(dest="what", required=True)
    for what, about in (
        ("train", "training throughput, FLOPs and memory per precision/compile variant"),
        ("sampler", "each sampler's cost per step against the training step"),
        ("eval", "samples/s at the task's NFE and metric features/s"),
        ("sweep", "aggregate examples/s, samples/s and memory of K concurrent runs on one device"),
    ):
        kind = kinds.add_parser(what, help=about)
        kind.add_argument("--task", default="bfashion")
        kind.add_argument("--budget", default="smoke")
        kind.add_argument("--device", default="auto")
        kind.add_argument(
            "--batch",
            type=int,
            default=None,
            help={
                "train": "global batch (default: the budget's)",
                "sampler": "global batch (default 512)",
                "eval": "sample and feature batch (default: the budget's eval.batch_size)",
                "sweep": "global batch of each run (default: the budget's)",
            }[what],
        )
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
        kind.set_defaults(func=_lazy("suite.bench", "main"))
    return parser


def _trains_here(args: argparse.Namespace) -> bool:
    """Whether the command trains runs in this process (``suite run`` without --dry-run or SLURM)."""
    return args.command == "run" and args.launcher == "local" and not args.dry_run


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from suite.stopping import stop_requests  # no torch: the handlers are in place before the heavy imports

    try:
        with stop_requests() if _trains_here(args) else contextlib.nullcontext():
            return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
