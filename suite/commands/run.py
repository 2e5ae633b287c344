"""``suite run``: train and evaluate runs (locally or as SLURM job arrays).

The flags become one :class:`suite.launch.request.LaunchRequest` (:func:`launch_request`); the runs come
from ``--task``/``--sampler``/``--budget``/``--seeds`` (``suite.launch.plan.plan_runs``) or from a study
file (``suite.launch.study``), and both go through ``suite.launch.dispatch.launch``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from suite.commands import DEFAULT_RESULTS
from suite.names import builtin_names, positive_int
from suite.run.seeds import SEEDS_HELP

if TYPE_CHECKING:
    from suite.launch.request import LaunchRequest

HELP = "train and evaluate runs (locally or as SLURM job arrays)"
EXAMPLES = """\
examples:
  suite run --task bfashion                                every sampler, seed 0, budget smoke
  suite run --task fashion --sampler edm,infonoise --seeds 0-63
  suite run --task fashion --sampler edm --seeds 0,2,5 sampler.p_mean=-1.2,0.0   (a sweep: 6 runs)
  suite run --study studies/reduced-bfashion.yaml --dry-run  a study's grid, checked and printed
  suite run --task cifar10 --budget paper --launcher slurm --profile example-gpu --partition gpu"""
RUN_FLAGS = (("--task", "task"), ("--sampler", "sampler"), ("--budget", "budget"), ("--seeds", "seeds"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument(
        "--task",
        default=None,
        help=f"a task: {builtin_names('task')} (required unless --study; suite list names plugins' too)",
    )
    parser.add_argument(
        "--sampler",
        default=None,
        help=f"a sampler, a comma list of them, or all (default): {builtin_names('sampler')}",
    )
    parser.add_argument("--budget", default=None, help=f"a budget: {builtin_names('budget')} (default smoke)")
    parser.add_argument("--seeds", default=None, help=f"training seeds: {SEEDS_HELP} (default 1: seed 0)")
    parser.add_argument(
        "--study", default=None, help="a study file (studies/*.yaml): its grid instead of --task etc."
    )
    parser.add_argument("--results", default=None, help=f"results folder (default: {DEFAULT_RESULTS})")
    parser.add_argument("--dry-run", action="store_true", help="check every planned run and print them")
    parser.add_argument(
        "--launcher", choices=["local", "slurm"], default="local", help="here, or as SLURM job arrays"
    )
    parser.add_argument("--partition", default=None, help="SLURM partition (default: the profile's)")
    parser.add_argument("--gpus-per-run", type=positive_int, default=None, help="GPUs of one run (>= 1)")
    parser.add_argument("--time", type=positive_int, default=None, help="minutes per SLURM job (>= 1)")
    parser.add_argument(
        "--array-parallelism", type=positive_int, default=None, help="array tasks running at once (>= 1)"
    )
    parser.add_argument("--profile", default=None, help="cluster profile in slurm/profiles/ (default: local)")
    parser.add_argument(
        "--runs-per-gpu",
        type=int,
        default=1,
        help="train K >= 1 runs at once on one device, as K processes (SLURM: K runs per array task)",
    )
    parser.add_argument("overrides", nargs="*", help="key=value config overrides; a,b,c sweeps a value")


def launch_request(args: argparse.Namespace, results: str | None = None) -> LaunchRequest:
    """The launch flags of ``suite run`` as a request (``results``: the folder chosen by ``--results`` or a
    ``results=`` override; default ``args.results``, then ``results``)."""
    from suite.launch.request import LaunchRequest

    return LaunchRequest(
        results=results or args.results or DEFAULT_RESULTS,
        launcher=args.launcher,
        profile=args.profile,
        partition=args.partition,
        gpus_per_run=args.gpus_per_run,
        time_min=args.time,
        array_parallelism=args.array_parallelism,
        runs_per_gpu=args.runs_per_gpu,
        dry_run=args.dry_run,
    )


def run(args: argparse.Namespace) -> int:
    from suite.config import check_names  # hydra, not torch

    check_names(args.task, args.sampler, args.budget)  # a misspelt name answered before torch is imported
    from suite.run.seeds import command_seeds

    seeds, overrides = command_seeds(args.seeds, args.overrides)
    from suite.launch.dispatch import launch
    from suite.launch.preflight import group_flags

    flags = {"task": args.task, "sampler": args.sampler, "budget": args.budget, "results": args.results}
    chosen, overrides = group_flags(flags, overrides)
    request = launch_request(args, chosen["results"])
    if request.launcher == "slurm" and not request.dry_run:  # before any planning
        from suite.launch.cluster import sbatch_problem

        if problem := sbatch_problem():
            raise ValueError(problem)
    if args.study:  # a study's overrides may only say where things sit (its check refuses seed=, task= …)
        from suite.launch.study import run_study

        given = [flag for flag, name in RUN_FLAGS if getattr(args, name) is not None]
        if given:
            raise ValueError(
                f"--study {args.study} sets the tasks, samplers, budget and seeds; drop {', '.join(given)}"
            )
        return run_study(args.study, args.overrides, request)
    if chosen["task"] is None:
        raise ValueError("suite run needs --task TASK (suite list names them) or --study FILE")
    from suite.launch.plan import check_runs, describe, describe_configs, plan_runs

    runs = plan_runs(
        chosen["task"],
        chosen["sampler"] or "all",
        chosen["budget"] or "smoke",
        seeds,
        request.results,
        overrides,
    )
    check_runs(runs)  # every sampler, weight, task and network built, every invalid value reported at once

    def plan() -> str:
        from suite.launch.cost import describe_cost, measured_here, planned_cost

        at_once = min(request.runs_per_gpu, len(runs))
        here = measured_here(runs[0].spec, at_once, whole=False) if request.launcher == "local" else None
        budget = runs[0].spec.budget.name
        cost = describe_cost(planned_cost(runs[0].spec), len(runs), here, at_once, budget)
        return "\n".join([describe_configs(runs), describe(runs), *cost])

    return launch(runs, request, plan)
