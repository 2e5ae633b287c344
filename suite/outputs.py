"""Where ``suite samples``, ``suite plot``, ``suite report`` and ``suite profile`` write when given
``--out``: never into a run folder, and never over a file they did not write, unless ``--force``.

A run folder (one holding ``run.json`` or ``config.yaml``, or any folder below one) belongs to the process
that holds its lease; an ``--out`` folder there is refused in one line before anything is computed. In an
``--out`` folder, each of these commands records the names of the files it wrote in ``OUTPUTS_FILE``
(atomically, after each file); a file found there that is not in that list was written by someone else, and
is refused in one line naming it (``--force`` writes over it, and it is listed from then on). Without
``--out`` the commands write their own folders (``RESULTS/figures``, ``RESULTS/REPORT.md``,
``RESULTS/profiles``) as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from suite.records import write_atomic

OUTPUTS_FILE = ".suite-outputs.json"
RUN_FILES = ("run.json", "config.yaml")

_active: list[OutputFolder] = []


def run_folder_above(path: str | os.PathLike) -> Path | None:
    """The run folder that ``path`` is or lies in (links resolved), None when there is none."""
    resolved = Path(path).resolve()
    for folder in (resolved, *resolved.parents):
        if any((folder / name).is_file() for name in RUN_FILES):
            return folder
    return None


class OutputFolder:
    """An ``--out`` folder: checked against run folders, and keeping the list of the files written there."""

    def __init__(self, folder: str | os.PathLike, force: bool, flag: str = "--out") -> None:
        self.folder, self.force = Path(folder), force
        run = run_folder_above(self.folder)
        if run is not None:
            raise ValueError(
                f"{flag} {self.folder} is inside the run folder {run}, which only its training writes; give "
                "a folder outside every run folder"
            )
        manifest = self.folder / OUTPUTS_FILE
        self.written: set[str] = set(json.loads(manifest.read_text())) if manifest.is_file() else set()

    def claim(self, path: str | os.PathLike) -> None:
        """Before writing ``path``: refuse a file there that these commands did not write (unless forced)."""
        path = Path(path)
        key = path.resolve().relative_to(self.folder.resolve()).as_posix()
        if path.exists() and key not in self.written and not self.force:
            raise ValueError(
                f"{path} exists and was not written by suite samples, plot, report or profile; refusing to "
                "overwrite it (--force overwrites it)"
            )
        self.written.add(key)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self.folder / OUTPUTS_FILE, json.dumps(sorted(self.written), indent=1).encode())


@contextmanager
def guarded_output(folder: str | os.PathLike | None, force: bool) -> Iterator[OutputFolder | None]:
    """Inside the block, :func:`claim` checks every file written under ``folder`` (None: no ``--out``)."""
    if folder is None:
        yield None
        return
    guard = OutputFolder(folder, force)
    _active.append(guard)
    try:
        yield guard
    finally:
        _active.remove(guard)


def claim(path: str | os.PathLike) -> None:
    """Check ``path`` against the ``--out`` folder of the command being run, if it lies in one."""
    for guard in _active:
        if Path(path).resolve().is_relative_to(guard.folder.resolve()):
            guard.claim(path)
