"""The command modules: every module of ``suite/commands/`` is one ``suite`` command listed once in
``suite.cli.COMMANDS``, and a plugin's command (the image library's ``fid``) is declared by entry point; the
parser is the core's list and the plugins'; no command's arguments (nor ``suite status`` of an empty
folder) import torch; the launch flags become one typed request."""

from __future__ import annotations

import argparse
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import suite.commands
from suite.cli import COMMANDS, build_parser, command_module, command_names
from suite.commands.run import launch_request
from suite.launch.request import LaunchRequest
from suite.records import read_json, write_json
from tests.helpers.subprocesses import cli_env
from tests.unit.test_table import write_run


def test_build_parser_is_a_list_of_commands_under_60_lines():
    assert len(inspect.getsource(build_parser).splitlines()) < 60


def test_every_module_of_suite_commands_is_one_listed_command_with_help_arguments_and_run():
    modules = {info.name for info in pkgutil.iter_modules(suite.commands.__path__)}
    assert sorted(modules) == sorted(name.replace("-", "_") for name in COMMANDS)
    assert len(set(COMMANDS)) == len(COMMANDS)
    assert "fid" in command_names() and "fid" not in COMMANDS  # the image library declares it
    for name in command_names():
        module = command_module(name)
        assert isinstance(module.HELP, str) and module.HELP and "\n" not in module.HELP, name
        assert list(inspect.signature(module.add_arguments).parameters) == ["parser"], name
        assert list(inspect.signature(module.run).parameters) == ["args"], name


def test_every_command_is_a_subcommand_of_the_parser_with_its_module_help():
    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(command_names())
    helps = {action.dest: action.help for action in sub._choices_actions}
    assert helps == {name: command_module(name).HELP for name in command_names()}


def test_help_of_every_command_and_status_of_an_empty_folder_import_no_torch(tmp_path: Path):
    """In a fresh interpreter, through ``suite.cli.main``: ``suite --help``, each command's ``--help`` and
    ``suite status --results EMPTY``; torch is never imported."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code = (
        "import contextlib, io, sys\n"
        "from suite.cli import command_names, main\n"
        "for argv in ([], *([name] for name in command_names())):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main([*argv, '--help'])\n"
        f"assert main(['status', '--results', {str(empty)!r}]) == 0\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=cli_env(SUITE_PLUGINS=""),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"no runs under {empty / 'runs'}", "torch imported: False"]


def test_the_launch_flags_become_one_request_whose_resources_are_the_flags_given():
    flags = ["run", "--task=bfashion", "--launcher=slurm", "--partition=gpu", "--time=30", "--runs-per-gpu=2"]
    request = launch_request(build_parser().parse_args(flags))
    assert request == LaunchRequest(
        results="results", launcher="slurm", partition="gpu", time_min=30, runs_per_gpu=2
    )
    assert request.resources == {"partition": "gpu", "time_min": 30}
    plain = launch_request(build_parser().parse_args(["run", "--task=bfashion", "--dry-run"]), "elsewhere")
    assert (plain.results, plain.launcher, plain.dry_run, plain.resources) == ("elsewhere", "local", True, {})


def test_a_request_with_an_unknown_launcher_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="unknown launcher 'pbs'; valid launchers: local, slurm"):
        LaunchRequest(results="results", launcher="pbs")


LIGHT_MODULES = (
    "suite.cli",
    "suite.config",
    "suite.records",
    "suite.registry",
    "suite.report.status",
    "suite.report.table",
    "suite.report.rows",
    "suite.report.time_to_target",
    "suite.report.rendering",
    "suite.report.table_command",
    "suite.report.three_tables",
    "suite.report.table_long",
    "suite.report.statistics",
    "suite.report.comparisons",
    "suite.report.seed_plan",
)

OUTSIDE_SAMPLER = '''\
"""A sampler plugin written as docs/tasks.md describes: its module imports torch at the top."""
import torch

from baselines.logu import LogUniform
from suite.noise.sampler import SAMPLERS


@SAMPLERS.register("outside")
class Outside(LogUniform):
    """A log-uniform density under another name."""
'''


def test_light_modules_and_a_misspelt_run_import_no_torch_with_an_outside_sampler_installed(tmp_path: Path):
    """In a fresh interpreter with an outside sampler plugin installed (a package and its distribution's
    entry point, as the docs describe): the command line, every command module, status and the table's
    rendering import no torch, nor does ``suite table`` on runs that recorded whether their sampler adapts
    (InfoNoise against EDM: EDM the fixed target) or a ``suite run`` with a misspelt sampler, which names the
    plugin among the valid choices; looking the plugin up imports it (and torch)."""
    results = tmp_path / "results"
    for sampler, adaptive, values in (("edm", False, (9.0, 6.0)), ("infonoise", True, (8.0, 5.0))):
        for seed in range(3):
            curve = [(k, v + 0.1 * seed) for k, v in zip((1.0, 2.0), values, strict=True)]
            run = write_run(results, "bfashion", sampler, seed, curve)
            write_json(run / "run.json", read_json(run / "run.json") | {"sampler_adaptive": adaptive})
    package = tmp_path / "outside_sampler"
    (package / "conf" / "sampler").mkdir(parents=True)
    (package / "__init__.py").write_text(OUTSIDE_SAMPLER)
    (package / "conf" / "sampler" / "outside.yaml").write_text("name: outside\n")
    meta = tmp_path / "outside_sampler-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-sampler\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text(
        "[infonoise_suite.samplers]\noutside = outside_sampler\n\n"
        "[infonoise_suite.configs]\noutside = outside_sampler\n"
    )
    modules = [
        *LIGHT_MODULES,
        *(f"suite.commands.{info.name}" for info in pkgutil.iter_modules(suite.commands.__path__)),
    ]
    code = (
        "import contextlib, importlib, io, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('after imports:', 'torch' in sys.modules)\n"
        "from suite.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    rc = main(['table', '--results', {str(results)!r}])\n"
        "print('table:', rc, 'torch' in sys.modules, 'target edm' in out.getvalue())\n"
        "err = io.StringIO()\n"
        "with contextlib.redirect_stderr(err):\n"
        "    rc = main(['run', '--task', 'bfashion', '--sampler', 'outsde', '--dry-run'])\n"
        "print('misspelt run:', rc, 'torch' in sys.modules, 'outside' in err.getvalue())\n"
        "from suite.noise.sampler import SAMPLERS\n"
        "print('lookup:', SAMPLERS.get('outside').__module__, 'torch' in sys.modules)\n"
    )
    env = cli_env(SUITE_PLUGINS="")
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "after imports: False",
        "table: 0 False True",
        "misspelt run: 2 False True",
        "lookup: outside_sampler True",
    ]


OUTSIDE_COMMAND = '''\
"""suite hello: a command from another package."""
import argparse

HELP = "say hello to a name"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name")


def run(args: argparse.Namespace) -> int:
    print(f"hello, {args.name}")
    return 0
'''


def test_a_command_from_another_package_is_one_module_and_one_entry_point(tmp_path: Path):
    """An installed package declaring a module under ``infonoise_suite.commands`` adds ``suite hello`` with
    no edit to the suite: it is listed in ``suite --help`` and runs with its own arguments."""
    (tmp_path / "hello_command.py").write_text(OUTSIDE_COMMAND)
    meta = tmp_path / "hello_command-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-command\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text("[infonoise_suite.commands]\nhello = hello_command\n")
    env = cli_env(SUITE_PLUGINS="")
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"

    def suite_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "suite.cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    assert "say hello to a name" in suite_cli("--help").stdout
    done = suite_cli("hello", "world")
    assert (done.returncode, done.stdout) == (0, "hello, world\n"), done.stderr
