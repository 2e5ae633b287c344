"""The code version a record carries names the suite's own commit, or ``unknown``, never another one's."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


def code_version_seen_from(package_parent: Path) -> dict:
    probe = "import json; from suite.records import code_version; print(json.dumps(code_version()))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=package_parent,
        env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_checkout_reports_its_own_head():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    assert code_version_seen_from(REPO)["git_sha"] == git(REPO, "rev-parse", "HEAD").strip()


def test_exported_copy_inside_another_repository_reports_unknown(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / "README").write_text("another project\n")
    git(outer, "add", "README")
    git(outer, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other")
    exported = outer / "exported"
    exported.mkdir()
    archive = subprocess.run(["tar", "-c", "-C", str(REPO), "suite"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(exported)], input=archive, check=True)
    assert code_version_seen_from(exported) == {"git_sha": "unknown", "git_dirty": False}
