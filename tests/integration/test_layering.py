"""The metric and featuriser registries import their plugin modules by name on the first lookup, so every
metric and featuriser that a module of the repository registers is found in a fresh interpreter that
imported nothing else (no task plugin, no modality library)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.subprocesses import cli_env

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("suite", "tasks", "baselines", "infonoise_modalities")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def repository_modules() -> dict[str, Path]:
    """Module name → source file, for every module of the repository's packages."""
    return {
        module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    }


def registered_names(registry: str) -> list[str]:
    """Every name that a module of the repository registers with ``registry`` (``METRICS`` or
    ``FEATURIZERS``), as ``@REGISTRY.register("name")`` or ``REGISTRY.register("name")(cls)``."""
    names = []
    for path in repository_modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == registry
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.append(str(node.args[0].value))
    return sorted(names)


REGISTERED = [("METRICS", n) for n in registered_names("METRICS")] + [
    ("FEATURIZERS", n) for n in registered_names("FEATURIZERS")
]


@pytest.fixture(scope="module")
def fresh_lookups() -> dict[str, str]:
    """``REGISTRY:name`` → the class each name resolves to (or the error) in one fresh interpreter that
    imports only the two registries and looks every name up."""
    probe = (
        "import json, sys\n"
        "from suite.metrics import METRICS\n"
        "from suite.metrics.features import FEATURIZERS\n"
        "found = {}\n"
        "for registry, name in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        cls = {'METRICS': METRICS, 'FEATURIZERS': FEATURIZERS}[registry].get(name)\n"
        "        found[f'{registry}:{name}'] = f'{cls.__module__}.{cls.__qualname__}'\n"
        "    except Exception as error:\n"
        "        found[f'{registry}:{name}'] = f'error: {error}'\n"
        "print(json.dumps(found))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(REGISTERED)], env=cli_env(), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize(("registry", "name"), REGISTERED)
def test_every_registered_name_is_found_in_a_fresh_interpreter(fresh_lookups, registry, name):
    assert not fresh_lookups[f"{registry}:{name}"].startswith("error"), fresh_lookups[f"{registry}:{name}"]
