"""Shared pytest hooks and fixtures.

Every test is marked with its tier, the folder it lives in (``unit``, ``integration``, ``cluster``, ``gpu``).

``slurm_cluster`` gives the tests of ``tests/cluster`` a real SLURM cluster:

* ``SLURM_CONF`` set: use that cluster (e.g. after ``slurm/local-cluster.sh up`` and
  ``. $DIR/env.sh``).
* ``SLURM_CONF`` unset and ``SUITE_TEST_SLURM=1``: start a private cluster with
  ``slurm/local-cluster.sh up`` in a short directory under /tmp, and purge it after the
  session (needs root; installs the Debian packages if missing).
* otherwise: skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.subprocesses import cluster_script

# Under pytest-xdist the cores are shared among the workers: each worker's torch (and every process it
# starts) gets its share of intra-op threads, set before anything imports torch.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    _share = max(1, _cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(_share)

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "cluster", "gpu")

# apt-get install on a fresh machine dominates; the script bounds its own waits.
_UP_TIMEOUT_S = 900
_DOWN_TIMEOUT_S = 300


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier, the folder under ``tests/`` it lives in (``pytest -m unit``)."""
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        if tier in TIERS:
            item.add_marker(tier)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[str]:
    """Path of the slurm.conf of a running cluster; ``SLURM_CONF`` is set while it is used."""
    conf = os.environ.get("SLURM_CONF")
    if conf:
        if not Path(conf).is_file():
            pytest.fail(f"SLURM_CONF={conf} does not exist", pytrace=False)
        yield conf
        return

    if os.environ.get("SUITE_TEST_SLURM") != "1":
        pytest.skip(
            "no SLURM cluster: set SLURM_CONF (bash slurm/local-cluster.sh up DIR && . DIR/env.sh) "
            "or SUITE_TEST_SLURM=1 to start one for this session"
        )
    if shutil.which("bash") is None:
        pytest.skip("SUITE_TEST_SLURM=1 but bash is not available")

    # Short path: munge/MariaDB/slurmstepd sockets live under it.
    cluster_dir = tempfile.mkdtemp(prefix="isl-", dir="/tmp")
    try:
        up = cluster_script("up", cluster_dir, _UP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        cluster_script("purge", cluster_dir, _DOWN_TIMEOUT_S)
        pytest.fail(f"local-cluster.sh up timed out after {exc.timeout} s", pytrace=False)
    if up.returncode != 0:
        cluster_script("purge", cluster_dir, _DOWN_TIMEOUT_S)
        pytest.fail(
            f"local-cluster.sh up {cluster_dir} failed (exit {up.returncode}):\n{up.stderr}{up.stdout}",
            pytrace=False,
        )

    conf = str(Path(cluster_dir) / "slurm.conf")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", conf)
        try:
            yield conf
        finally:
            down = cluster_script("purge", cluster_dir, _DOWN_TIMEOUT_S)
            if down.returncode != 0:
                print(f"local-cluster.sh purge {cluster_dir} failed:\n{down.stderr}")


@pytest.fixture
def isolated_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the suite cache and torch's hub home at empty temporary folders (``tmp_path``)."""
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "suite"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    return tmp_path
