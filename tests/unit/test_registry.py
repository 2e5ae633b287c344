"""The registries load this distribution's own plugins (a same-named folder in the working directory is
refused, naming its path), and ``suite list`` describes every plugin class, documented or not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from suite.cli import main
from suite.registry import NO_DESCRIPTION, Registry, ShadowedPackageError, description
from tests.helpers.subprocesses import cli_env


def test_an_empty_tasks_package_in_the_working_directory_is_refused_naming_its_path(tmp_path: Path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "__init__.py").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "suite.cli", "list"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: the plugin package 'tasks' is found at {tmp_path.resolve() / 'tasks'},")
    assert str(Path(__file__).resolve().parents[2] / "tasks") in line


def test_a_shadowing_baselines_package_is_refused_before_it_is_imported(tmp_path: Path, monkeypatch):
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "__init__.py").write_text("raise RuntimeError('a stranger was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "baselines", raising=False)
    registry = Registry("sampler", "infonoise_suite.samplers")
    assert "edm" in registry.names()  # read from the entry points: nothing imported yet
    with pytest.raises(ShadowedPackageError, match=str(tmp_path.resolve() / "baselines")):
        registry.get("edm")
    assert "baselines" not in sys.modules


@pytest.mark.parametrize("kind,base", [("tasks", "ring2d"), ("samplers", "logu")])
def test_a_plugin_class_without_a_docstring_is_listed_with_no_description(kind, base, monkeypatch, capsys):
    from suite.noise.sampler import SAMPLERS
    from suite.task import TASKS

    registry = {"tasks": TASKS, "samplers": SAMPLERS}[kind]
    list(registry)  # every built-in plugin imported and registered first
    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    undocumented = registry.register("undocumented")(type("Undocumented", (registry.get(base),), {}))
    assert undocumented.__doc__ is None and description(undocumented) == NO_DESCRIPTION
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    block = out.split(f"{kind}:\n")[1]
    (line,) = [line for line in block.splitlines() if line.split()[0] == "undocumented"]
    assert NO_DESCRIPTION in line
    assert f"  {base} " in block  # the other plugins still listed
