"""The metric and featuriser registries import their plugin modules by name on the first lookup, so every
metric and featuriser that a module of the repository registers is found in a fresh interpreter that
imported nothing else (no task plugin, no modality library)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.subprocesses import cli_env
from tests.unit.test_layering import REGISTERED


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


def test_a_lookup_imports_only_the_module_that_declares_the_name():
    """``METRICS.get("sei-fid")`` in a fresh interpreter imports the DNA metrics and neither the image nor
    the text library (nor torch-fidelity, torchvision or transformers)."""
    probe = (
        "import sys\n"
        "from suite.metrics import METRICS\n"
        "METRICS.get('sei-fid')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('infonoise_modalities', 'tasks', 'baselines',"
        " 'torch_fidelity', 'torchvision', 'transformers'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], env=cli_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(
        ["infonoise_modalities", "infonoise_modalities.dna", "infonoise_modalities.dna.sei"]
    )
