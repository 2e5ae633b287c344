"""Command line: ``suite run|eval|guidance|samples|data|profile|list|samplers|status|lease|table|plot|report|
fid|bench``.

Each subcommand is a small function; heavy imports happen inside them so ``suite --help`` is instant.
Every command first imports the modules named in ``$SUITE_PLUGINS`` (``suite.registry.import_plugins``), as
SLURM jobs and packed runs do, e.g. an extra feature extractor the run's metrics name.
``suite run`` handles SIGTERM, SIGUSR2 and SIGINT from its start (``suite.stopping``): the launch stops
cleanly and exits with status 130.
``suite plan-seeds`` (``suite.statistics``) says how many seeds a difference to the target needs.
``suite samples`` (``suite.evaluation``) writes generated samples of a saved snapshot without the trainer.
``suite guidance`` (``suite.guidance``) chooses a conditional run's guidance scale on held-out conditions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

from suite.names import builtin_names, positive_int, probability
from suite.seeds import SEEDS_HELP, command_seeds

DEFAULT_RESULTS = "results"


def _run(args: argparse.Namespace) -> int:
    from suite.config import check_names  # hydra, not torch

    check_names(args.task, args.sampler, args.budget)  # a misspelt name answered before torch is imported
    seeds, overrides = command_seeds(args.seeds, args.overrides)
    from suite.preflight import group_flags, preflight
    from suite.runner import (
        check_pack_size,
        check_runs,
        describe,
        describe_configs,
        plan_runs,
        run_local,
        run_packed,
    )

    flags = {"task": args.task, "sampler": args.sampler, "budget": args.budget, "results": args.results}
    chosen, overrides = group_flags(flags, overrides)
    args.results = chosen["results"] or DEFAULT_RESULTS
    if args.study:  # a study's overrides may only say where things sit (its check refuses seed=, task= …)
        from suite.study import run_study

        return run_study(args)
    args.task, args.sampler, args.budget = chosen["task"], chosen["sampler"], chosen["budget"]
    args.overrides = overrides
    if args.task is None:
        raise ValueError("suite run needs --task TASK (suite list names them) or --study FILE")
    runs = plan_runs(
        args.task, args.sampler or "all", args.budget or "smoke", seeds, args.results, args.overrides
    )
    check_runs(runs)  # every sampler, weight, task and network built, every invalid value reported at once
    check_pack_size(args.runs_per_gpu)
    if args.dry_run:  # the plan and its cost first, whatever this machine lacks; then what it lacks
        from suite.cost import describe_cost, measured_here, planned_cost
        from suite.preflight import PreflightError

        print(describe_configs(runs))
        print(describe(runs))
        here = measured_here(runs[0].spec) if args.launcher == "local" else None
        print("\n".join(describe_cost(planned_cost(runs[0].spec), len(runs), here)), flush=True)
        if args.launcher == "slurm":
            from suite.slurm import describe_arrays

            print(describe_arrays(runs, args))
        try:
            preflight(runs, args)
        except PreflightError as err:
            for line in err.problems:
                print(f"error: {line}", file=sys.stderr)
            return EXIT_USAGE
        return 0
    preflight(runs, args)  # data, results folder, weights, warm-up, SLURM hours: one line per cause
    todo = [run for run in runs if run.status != "done"]
    if args.launcher == "local" and todo:  # before the first progress line, which may be hours away
        from suite.cost import describe_here, measured_here

        print("\n".join(describe_here(measured_here(todo[0].spec), len(todo))), flush=True)
    if args.launcher == "slurm":
        from suite.slurm import submit

        return submit(runs, args)
    return run_local(runs) if args.runs_per_gpu == 1 else run_packed(runs, args.runs_per_gpu)


def _list(args: argparse.Namespace) -> int:
    from suite.config import group_options
    from suite.registry import description
    from suite.sampler import SAMPLERS
    from suite.task import TASKS

    tasks, samplers = list(TASKS), list(SAMPLERS)  # every plugin imported before the first line is printed
    print("tasks:")
    for name, cls in tasks:
        configured = "" if name in group_options("task") else "  (no config)"
        print(f"  {name:<16} {cls.modality:<9} {description(cls)}{configured}")
    print("samplers:")
    for name, cls in samplers:
        kind = "adaptive" if cls.adaptive else "fixed"
        print(f"  {name:<16} {kind:<9} {description(cls)}")
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
    from suite.config import check_names

    check_names(args.task, None, None)
    from suite.runner import resolve_task
    from suite.task import TASKS

    if len(args.paths) > 2:
        raise ValueError(f"suite data takes [SRC] DEST, got {len(args.paths)} paths: {' '.join(args.paths)}")
    source, dest = (None, args.paths[0]) if len(args.paths) == 1 else args.paths
    task = resolve_task(args.task)
    if args.unpinned_archive and task != "dna":
        raise ValueError(f"--unpinned-archive applies to `suite data dna` only, not to {task!r}")
    options = {"unpinned_archive": True} if args.unpinned_archive else {}
    folder = Path(dest).expanduser()
    created = not folder.exists()
    try:
        TASKS.get(task).prepare(source, dest, **options)
    except OSError as err:  # no network (URLError), a refused connection, a full disk
        if created and folder.is_dir() and not any(p.is_file() for p in folder.rglob("*")):
            shutil.rmtree(folder)  # only the empty folders this command made
        why = getattr(err, "reason", None) or err.strerror or err
        raise ValueError(
            f"suite data {task}: {why}; nothing kept in {dest}. Without internet here, download the data "
            f"elsewhere (README, Data) and run `suite data {task} SRC DEST` with the downloaded file"
        ) from err
    return 0


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    def call(args: argparse.Namespace) -> int:
        import importlib

        return getattr(importlib.import_module(module), function)(args)

    return call


EXAMPLES = """\
examples:
  suite list                                               tasks, samplers and budgets
  suite run --task bfashion --budget smoke                 every sampler on binarised Fashion-MNIST
  suite run --task cifar10 --sampler edm,infonoise --seeds 0-3 --budget short --dry-run
  suite run --task cifar10 --budget paper --seeds 3 --launcher slurm --profile example-gpu
  suite status                                             what ran, runs and failed, with SLURM's view
  suite table --format long-csv > table.csv                one tidy line per task, sampler and metric
  suite plot --results /shared/results --out figures       figures of a read-only results folder
  suite eval results/runs/<comparison>/infonoise/seed0 --grid infogrid --steps 18

exit status: 0 done, 1 a run failed, 2 usage or configuration error, 3 a run left to another process,
130 interrupted (SIGINT, SIGTERM)."""

RUN_EXAMPLES = """\
examples:
  suite run --task bfashion                                every sampler, seed 0, budget smoke
  suite run --task fashion --sampler edm,infonoise --seeds 0-63
  suite run --task fashion --sampler edm --seeds 0,2,5 sampler.p_mean=-1.2,0.0   (a sweep: 6 runs)
  suite run --study studies/reduced-bfashion.yaml --dry-run  a study's grid, checked and printed
  suite run --task cifar10 --budget paper --launcher slurm --profile example-gpu --partition gpu"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written; each option's default appended to its help where the help does not say it
    already (and where there is one: not None, not False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            action.default in (None, False, argparse.SUPPRESS)
            or "default" in text
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def _use_formatter(parser: argparse.ArgumentParser) -> None:
    """``HelpFormatter`` for ``parser`` and every parser below it."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _use_formatter(child)


TARGET_HELP = (
    "comma list of sampler labels whose best final quality is the time-to-target target "
    "(default: logu,cos,fm,edm, the paper's fixed baselines; the table also reports all fixed samplers)"
)


def _version() -> str:
    """The installed distribution's version, and the source checkout's commit when it is one."""
    import subprocess
    from importlib import metadata
    from pathlib import Path

    try:
        version = metadata.version("infonoise-suite")
    except metadata.PackageNotFoundError:
        version = "(not installed)"
    source = Path(__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{version} (commit {commit}, {source})" if commit else version


class VersionAction(argparse.Action):
    """``--version``: the version line, computed only when asked (it runs git)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"suite {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="suite", description="InfoNoise benchmark suite of diffusion noise samplers.", epilog=EXAMPLES
    )
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run", help="train and evaluate runs (locally or as SLURM job arrays)", epilog=RUN_EXAMPLES
    )
    run.add_argument(
        "--task",
        default=None,
        help=f"a task: {builtin_names('task')} (required unless --study; suite list names plugins' too)",
    )
    run.add_argument(
        "--sampler",
        default=None,
        help=f"a sampler, a comma list of them, or all (default): {builtin_names('sampler')}",
    )
    run.add_argument(
        "--budget",
        default=None,
        help=f"a budget: {builtin_names('budget')} (default smoke)",
    )
    run.add_argument("--seeds", default=None, help=f"training seeds: {SEEDS_HELP} (default 1: seed 0)")
    run.add_argument(
        "--study", default=None, help="a study file (studies/*.yaml): its grid instead of --task etc."
    )
    run.add_argument("--results", default=None, help=f"results folder (default: {DEFAULT_RESULTS})")
    run.add_argument("--dry-run", action="store_true", help="check every planned run and print them")
    run.add_argument(
        "--launcher", choices=["local", "slurm"], default="local", help="here, or as SLURM job arrays"
    )
    run.add_argument("--partition", default=None, help="SLURM partition (default: the profile's)")
    run.add_argument("--gpus-per-run", type=positive_int, default=None, help="GPUs of one run (>= 1)")
    run.add_argument("--time", type=positive_int, default=None, help="minutes per SLURM job (>= 1)")
    run.add_argument(
        "--array-parallelism", type=positive_int, default=None, help="array tasks running at once (>= 1)"
    )
    run.add_argument("--profile", default=None, help="cluster profile in slurm/profiles/ (default: local)")
    run.add_argument(
        "--runs-per-gpu",
        type=int,
        default=1,
        help="train K >= 1 runs at once on one device, as K processes (SLURM: K runs per array task)",
    )
    run.add_argument("overrides", nargs="*", help="key=value config overrides; a,b,c sweeps a value")
    run.set_defaults(func=_run)

    evaluate = sub.add_parser("eval", help="re-score the saved network snapshots of a finished run")
    evaluate.add_argument("run_dir", help="a run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    evaluate.add_argument("--metric", default=None, help="one metric of the task (default: all)")
    evaluate.add_argument("--kimg", type=float, default=None, help="one evaluation point (default: all)")
    evaluate.add_argument("--grid", default="karras", help="solver grid: karras | infogrid | …")
    evaluate.add_argument(
        "--steps", type=positive_int, default=None, help="solver steps, >= 1 (default: the task's)"
    )
    evaluate.add_argument(
        "--guidance", type=float, default=None, help="classifier-free guidance scale (default: the budget's)"
    )
    evaluate.add_argument("--device", default="auto", help="cpu, cuda, cuda:K or auto")
    evaluate.set_defaults(func=_lazy("suite.evaluation", "main"))

    guidance = sub.add_parser(
        "guidance",
        help="choose a conditional run's guidance scale on held-out conditions, written to guidance.json",
    )
    guidance.add_argument("run_dir", help="a finished run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    guidance.add_argument("--scales", required=True, help="comma-separated guidance scales, e.g. 1,1.5,2,3")
    guidance.add_argument(
        "--metric",
        default=None,
        help="a metric comparing each sample with its condition's example",
    )
    guidance.add_argument("--kimg", type=float, default=None, help="a snapshot (default: the newest)")
    guidance.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help="held-out conditions (default: eval.samples)",
    )
    guidance.add_argument("--device", default="auto", help="cpu, cuda, cuda:K or auto")
    guidance.set_defaults(func=_lazy("suite.guidance", "main"))

    samples = sub.add_parser(
        "samples", help="write generated samples of a run's saved snapshot (image grid or texts), no trainer"
    )
    samples.add_argument("run_dir", help="a run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    samples.add_argument("--kimg", type=float, default=None, help="an evaluation point (default: the newest)")
    samples.add_argument("--out", required=True, help="folder for samples-<nimg>.png or .txt")
    samples.add_argument("--n", type=int, default=64, help="number of samples (default 64)")
    samples.add_argument("--device", default="auto")
    samples.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )
    samples.set_defaults(func=_lazy("suite.evaluation", "samples_main"))

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
    status.add_argument("--results", default="results", help="results folder")
    status.set_defaults(func=_lazy("suite.status", "main"))

    lease = sub.add_parser("lease", help="a run's lease: suite lease break RUN_DIR")
    lease_actions = lease.add_subparsers(dest="action", required=True)
    breaking = lease_actions.add_parser(
        "break", help="print the holder of a run's lease, then break it (the holder stops at its next write)"
    )
    breaking.add_argument("run_dir", help="a run folder (…/runs/<comparison>/<sampler>/seed<k>)")
    breaking.add_argument(
        "--force", action="store_true", help="break a lease whose holder is live or of unknown age"
    )
    breaking.set_defaults(func=_lazy("suite.lease", "break_command"))

    table = sub.add_parser(
        "table",
        help="your runs' results: one block per task, budget and metric (--format md: the full tables)",
    )
    table.add_argument(
        "folders",
        nargs="*",
        help="results folders to read as they are, committed evidence included (default: --results)",
    )
    table.add_argument("--results", default="results", help="results folder")
    table.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets (folders holding an EVIDENCE file)",
    )
    table.add_argument("--task", default=None, help="only this task's rows")
    table.add_argument("--sampler", default=None, help="only these samplers' rows (a comma list)")
    table.add_argument("--budget", default=None, help="only this budget's rows")
    table.add_argument(
        "--format",
        choices=["text", "md", "latex", "csv", "long-csv", "json"],
        default="text",
        help="text: compact blocks, at most 120 columns, notes below; md, latex, csv: the full tables one "
        "after another (csv: each under a # caption); the tidy long table for pandas: long-csv, json (one "
        "line per task, budget, metric, protocol and sampler)",
    )
    table.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    table.add_argument(
        "--study", default=None, help="a study file: only its grid's runs, missing ones listed"
    )
    table.set_defaults(func=_lazy("suite.table_command", "main"))

    plan = sub.add_parser(
        "plan-seeds", help="seeds a stated difference to the target needs, from an upper bound of the spread"
    )
    plan.add_argument("--results", default="results", help="results folder")
    plan.add_argument(
        "--difference",
        type=float,
        required=True,
        help="difference to detect, in the metric's units, stated before looking (never the measured one)",
    )
    plan.add_argument(
        "--power", type=probability, default=0.8, help="power of the paired t test, in (0, 1) (default 0.8)"
    )
    plan.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    plan.set_defaults(func=_lazy("suite.statistics", "plan_main"))

    plot = sub.add_parser("plot", help="write the figures from the records")
    plot.add_argument("--results", default="results", help="results folder")
    plot.add_argument(
        "--out",
        default=None,
        help="folder for the figures (default RESULTS/figures; RESULTS may be read-only)",
    )
    plot.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )
    plot.add_argument(
        "--all",
        action="store_true",
        help="also the committed evidence sets below --results (folders holding an EVIDENCE file); "
        "--results naming one such set draws it as it is",
    )
    plot.set_defaults(func=_lazy("suite.plots", "main"))

    report = sub.add_parser("report", help="write results/REPORT.md with tables, figures and commands")
    report.add_argument("--results", default="results", help="results folder")
    report.add_argument("--target-samplers", default=None, help=TARGET_HELP)
    report.add_argument(
        "--out",
        default=None,
        help="folder for REPORT.md and its figures (default RESULTS; RESULTS may then be read-only)",
    )
    report.add_argument(
        "--force", action="store_true", help="write over files in --out that suite did not write there"
    )
    report.set_defaults(func=_lazy("suite.report", "main"))

    fid = sub.add_parser(
        "fid",
        help="FID reference statistics as a shareable .npz (EDM's layout), and a folder's FID against one",
    )
    fid_actions = fid.add_subparsers(dest="action", required=True)
    ref = fid_actions.add_parser(
        "ref", help="write the mu/sigma statistics of a folder or zip of images, or of a task's references"
    )
    ref.add_argument("--data", required=True, help="a folder or .zip of images, or a task name")
    ref.add_argument("--dest", required=True, help="the .npz to write (EDM's layout: mu, sigma)")
    ref.add_argument(
        "--budget", default="paper", help="with a task: the budget whose eval.reference picks the references"
    )
    ref.add_argument("overrides", nargs="*", help="with a task: key=value config overrides (task.root=…)")
    ref.set_defaults(func=_lazy("infonoise_modalities.image.fid_command", "ref_main"))
    calc = fid_actions.add_parser("calc", help="the FID of a folder or .zip of images against a .npz")
    calc.add_argument("--images", required=True, help="a folder or .zip of images (at least 2)")
    calc.add_argument("--ref", required=True, help="reference statistics (.npz of mu, sigma; e.g. EDM's)")
    for action in (ref, calc):
        action.add_argument(
            "--feature-extractor",
            default="inception-v3-compat",
            help="a torch-fidelity feature extractor (Inception-v3 gives FID; another, a Fréchet distance)",
        )
        action.add_argument("--weights", default=None, help="the extractor's weights file (default: its own)")
        action.add_argument("--batch-size", type=positive_int, default=64, help="images per batch")
        action.add_argument(
            "--device", choices=["auto", "cpu", "cuda"], default="auto", help="where to featurise"
        )
    calc.set_defaults(func=_lazy("infonoise_modalities.image.fid_command", "calc_main"))

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
    statistics = kinds.add_parser(
        "statistics", help="simulated studies through the table's statistics: coverage and false verdicts"
    )
    statistics.add_argument(
        "--replications", type=positive_int, default=1000, help="studies per cell (default 1000: ±1%% s.e.)"
    )
    statistics.add_argument("--pilots", type=positive_int, default=1000, help="pilot studies per seed plan")
    statistics.add_argument("--seed", type=int, default=0, help="seed of the simulation")
    statistics.set_defaults(func=_lazy("suite.bench_statistics", "main"))
    _use_formatter(parser)
    return parser


def _trains_here(args: argparse.Namespace) -> bool:
    """Whether the command trains runs in this process (``suite run`` without --dry-run or SLURM)."""
    return args.command == "run" and args.launcher == "local" and not args.dry_run


EXIT_CODES = (
    "exit status: 0 done (every run done), 1 a run failed (or the command did: an unexpected error), "
    "2 a usage or config error (one `error:` line per cause), 3 a run left to the process that holds its "
    "lease, 130 interrupted (SIGINT, SIGTERM or SIGUSR2; re-run the command to resume). --debug, anywhere "
    "on the command line, adds the traceback of an error."
)
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
USAGE_ERRORS = (ValueError, FileNotFoundError, KeyError)  # what a command raises for a bad value or path


def _error_lines(err: BaseException) -> list[str]:
    """The ``error:`` lines of a usage or config error: one per cause (``problems``), else its message."""
    return list(getattr(err, "problems", None) or [str(err)])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    parser = build_parser()
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.epilog = f"{parser.epilog}\n\n{EXIT_CODES}" if parser.epilog else EXIT_CODES
    args, extra = parser.parse_known_args([arg for arg in argv if arg != "--debug"])
    overrides = [arg for arg in extra if "=" in arg and not arg.startswith("-")]
    if extra and (overrides != extra or not hasattr(args, "overrides")):  # key=value before a flag is fine
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if overrides:
        args.overrides = [*args.overrides, *overrides]
    if debug:
        os.environ["SUITE_DEBUG"] = "1"  # a failed run's traceback on the terminal too (suite.runner.attempt)
    from suite.stopping import Interrupted, stop_requests  # no torch: handlers in place before heavy imports

    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"  # one line, no source line

    try:
        with stop_requests() if _trains_here(args) else contextlib.nullcontext():
            from suite.registry import import_plugins  # no torch unless a plugin imports it

            import_plugins()
            return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C where no stop handler is installed (suite run's turn it into a stop)
        if debug:
            traceback.print_exc()
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Interrupted as stop:  # a stop request met outside a run's own handling
        print(stop, file=sys.stderr)
        return EXIT_INTERRUPTED
    except USAGE_ERRORS as err:
        if debug:
            traceback.print_exc()
        for line in _error_lines(err):
            print(f"error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as err:
        if debug:
            traceback.print_exc()
        first = (str(err).strip().splitlines() or [""])[0]
        hint = "" if debug else "; add --debug for the traceback"
        print(f"error: {type(err).__name__}: {first}{hint}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
