"""Command line: ``suite COMMAND``, one module per command: the core's in ``suite.commands`` (listed in
``COMMANDS``), a plugin package's declared under the entry-point group ``infonoise_suite.commands`` (name →
module; the image library's ``suite fid`` is one).

Each command module has ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; its library code is
imported inside ``run``, so ``suite --help`` and ``suite status`` import no torch. Adding a command is one
file in ``suite/commands/`` and one name in ``COMMANDS``, or one module and one entry point in a plugin.
Every command first imports the modules named in ``$SUITE_PLUGINS`` (``suite.registry.import_plugins``), as
SLURM jobs and packed runs do, e.g. an extra feature extractor the run's metrics name.
``suite run`` handles SIGTERM, SIGUSR2 and SIGINT from its start (``suite.stopping``): the launch stops
cleanly and exits with status 130.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
import warnings
from types import ModuleType

from suite.exits import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE

COMMANDS = (
    "run",
    "eval",
    "guidance",
    "recipe",
    "samples",
    "data",
    "profile",
    "list",
    "samplers",
    "status",
    "lease",
    "table",
    "plan-seeds",
    "plot",
    "report",
    "bench",
)
PLUGIN_COMMANDS = "infonoise_suite.commands"


def command_names() -> tuple[str, ...]:
    """The core's commands, then the plugins' (sorted); a plugin may not take a core command's name."""
    from suite.registry import declared

    plugins = sorted(declared(PLUGIN_COMMANDS))
    taken = sorted(set(plugins) & set(COMMANDS))
    if taken:
        raise ValueError(f"{PLUGIN_COMMANDS} declares {', '.join(taken)}, the name of a core command")
    return (*COMMANDS, *plugins)


def command_module(name: str) -> ModuleType:
    """The module of ``suite NAME``: ``suite.commands.plan_seeds`` for ``plan-seeds``, the module a plugin
    declares for its own command."""
    if name in COMMANDS:
        return importlib.import_module(f"suite.commands.{name.replace('-', '_')}")
    from suite.registry import declared

    return declared(PLUGIN_COMMANDS)[name].load()


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
    """The ``suite`` parser: one subcommand per name of ``COMMANDS``, its arguments from its module."""
    parser = argparse.ArgumentParser(
        prog="suite", description="InfoNoise benchmark suite of diffusion noise samplers.", epilog=EXAMPLES
    )
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in command_names():
        module = command_module(name)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    _use_formatter(parser)
    return parser


def _trains_here(args: argparse.Namespace) -> bool:
    """Whether the command trains runs in this process (``suite run`` without --dry-run or SLURM)."""
    return args.command == "run" and args.launcher == "local" and not args.dry_run


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
        os.environ["SUITE_DEBUG"] = (
            "1"  # a failed run's traceback on the terminal too (suite.launch.local.attempt)
        )
    from suite.stopping import Interrupted, stop_requests  # no torch: handlers in place before heavy imports

    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"  # one line, no source line

    try:
        with stop_requests() if _trains_here(args) else contextlib.nullcontext():
            from suite.registry import import_plugins  # no torch unless a plugin imports it

            import_plugins()
            return int(command_module(args.command).run(args) or 0)
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
