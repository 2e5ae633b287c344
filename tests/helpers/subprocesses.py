"""How tests start the CLI and the local SLURM cluster script in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCAL_CLUSTER_SCRIPT = REPO / "slurm" / "local-cluster.sh"


def cli_command(*args: str) -> list[str]:
    """``suite ARGS`` through the installed ``suite`` entry point beside this interpreter (``.venv/bin``)."""
    suite = Path(sys.executable).with_name("suite")
    if not suite.is_file():
        raise FileNotFoundError(f"no suite command beside {sys.executable}: bash scripts/install.sh")
    return [str(suite), *args]


def cli_env(**extra: str) -> dict[str, str]:
    """Environment of a CLI subprocess: this checkout importable ahead of any installed copy, the test feature
    extractor imported as a plugin (``SUITE_PLUGINS``: it registers ``rand-test``), one thread, unbuffered
    output, no inherited fault injection; ``extra`` added."""
    env = os.environ | {
        "PYTHONPATH": str(REPO),
        "SUITE_PLUGINS": "tests.helpers.fid_extractor",
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }
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
