"""The command modules: every module of ``suite/commands/`` is one ``suite`` command listed once in
``suite.cli.COMMANDS``; the parser is that list; no command's arguments (nor ``suite status`` of an empty
folder) import torch; the launch flags become one typed request."""

from __future__ import annotations

import argparse
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import suite.commands
from suite.cli import COMMANDS, MODALITY_COMMANDS, build_parser, command_module
from suite.commands.run import launch_request
from suite.launch.request import LaunchRequest
from tests.helpers.subprocesses import cli_env


def test_build_parser_is_a_list_of_commands_under_60_lines():
    assert len(inspect.getsource(build_parser).splitlines()) < 60


def test_every_module_of_suite_commands_is_one_listed_command_with_help_arguments_and_run():
    modules = {info.name for info in pkgutil.iter_modules(suite.commands.__path__)}
    assert sorted(modules) == sorted(
        name.replace("-", "_") for name in COMMANDS if name not in MODALITY_COMMANDS
    )
    assert len(set(COMMANDS)) == len(COMMANDS)
    for name in COMMANDS:
        module = command_module(name)
        assert isinstance(module.HELP, str) and module.HELP and "\n" not in module.HELP, name
        assert list(inspect.signature(module.add_arguments).parameters) == ["parser"], name
        assert list(inspect.signature(module.run).parameters) == ["args"], name


def test_every_command_is_a_subcommand_of_the_parser_with_its_module_help():
    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)
    helps = {action.dest: action.help for action in sub._choices_actions}
    assert helps == {name: command_module(name).HELP for name in COMMANDS}


def test_help_of_every_command_and_status_of_an_empty_folder_import_no_torch(tmp_path: Path):
    """In a fresh interpreter, through ``suite.cli.main``: ``suite --help``, each command's ``--help`` and
    ``suite status --results EMPTY``; torch is never imported."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code = (
        "import contextlib, io, sys\n"
        "from suite.cli import COMMANDS, main\n"
        "for argv in ([], *([name] for name in COMMANDS)):\n"
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
