"""Every Python script of scripts/ imports against the suite as it is: a script no test runs still breaks
when a name it imports moves."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[2] / "scripts").glob("*.py"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_each_script_imports_and_keeps_its_work_behind_a_main_guard(path: Path):
    spec = importlib.util.spec_from_file_location(f"scripts_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert 'if __name__ == "__main__":' in path.read_text()
