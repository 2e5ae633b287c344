"""The suite's cache folders, in one place.

``cache_dir()`` is ``$SUITE_CACHE`` when set, else ``~/.cache/infonoise-suite`` (the XDG cache layout):
the caches the suite writes lie under it, the metrics' reference statistics and converted weights (each
metric's own files), the token cache of the text task (``tokens/``) and TorchInductor's compiled kernels
(``inductor/``), shared by every run on the machine. ``data_dir()`` is where data sets are downloaded and
stand-ins built: ``$SUITE_DATA`` when set, else ``~/.cache/infonoise-suite/data`` (not under
``$SUITE_CACHE``: data outlive caches).

``results_folder`` checks a ``--results`` folder that a command reads (``suite status``, ``table``,
``profile``) before any work: a file there is refused, and so is a folder that does not exist where the
command only reads what it holds.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SUITE_CACHE"
DATA_ENV = "SUITE_DATA"


def cache_dir() -> Path:
    """The suite's cache folder: ``$SUITE_CACHE`` if set, else ``~/.cache/infonoise-suite``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "infonoise-suite"


def data_dir() -> Path:
    """Where data sets are downloaded and stand-ins built: ``$SUITE_DATA`` if set, else
    ``~/.cache/infonoise-suite/data``."""
    return Path(os.environ.get(DATA_ENV, "~/.cache/infonoise-suite/data")).expanduser()


def tokens_dir() -> Path:
    """The text task's token cache: ``<cache>/tokens``."""
    return cache_dir() / "tokens"


def inductor_dir() -> Path:
    """TorchInductor's kernel cache shared by the runs: ``<cache>/inductor``."""
    return cache_dir() / "inductor"


def results_folder(results: str | os.PathLike, must_exist: bool = False) -> Path:
    """``results`` as a path; ValueError in words when it is a file, or (``must_exist``) not a folder."""
    path = Path(results)
    if path.is_file():
        raise ValueError(f"--results {results} is a file; give a results folder (the one holding runs/)")
    if must_exist and not path.is_dir():
        raise ValueError(
            f"--results {results}: no such folder; give a results folder (the one holding runs/; "
            "suite run --results creates it)"
        )
    return path
