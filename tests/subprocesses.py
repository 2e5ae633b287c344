"""How tests start the CLI and the local SLURM cluster script in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LOCAL_CLUSTER_SCRIPT = TESTS.parent / "slurm" / "local-cluster.sh"


def cli_command(*args: str) -> list[str]:
    """``suite ARGS`` through ``run_suite.py``, which registers the test feature extractor first."""
    return [sys.executable, str(TESTS / "run_suite.py"), *args]


def cli_env(**extra: str) -> dict[str, str]:
    """Environment of a CLI subprocess: this folder (``run_suite.py``, the test extractor) and this checkout
    importable ahead of any installed copy, one thread, unbuffered output, no inherited fault injection;
    ``extra`` added."""
    path = os.pathsep.join([str(TESTS), str(TESTS.parent)])
    env = os.environ | {"PYTHONPATH": path, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("SUITE_FAULT", None)
    return env | extra


def cluster_script(
    cmd: str, cluster_dir: str, timeout: float, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``slurm/local-cluster.sh CMD DIR`` outside any cluster the caller points at (no SLURM_CONF)."""
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"} | extra
    return subprocess.run(
        ["bash", str(LOCAL_CLUSTER_SCRIPT), cmd, cluster_dir],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
