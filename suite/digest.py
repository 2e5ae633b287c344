"""Digests of files: one reader for the archives, batches and weights whose identity is checked or recorded.

``file_digest(path, "md5")`` is the hex digest ``hashlib`` gives for the file's bytes, read in blocks of
``BLOCK`` bytes so a multi-gigabyte archive never sits in memory; ``progress`` (a progress bar's ``update``)
is told each block's length. md5 is only compared with the checksums data sets publish
(``usedforsecurity=False``), never used to trust content.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

BLOCK = 1 << 22


def file_digest(
    path: str | os.PathLike, algorithm: str = "sha256", progress: Callable[[int], object] | None = None
) -> str:
    """Hex ``algorithm`` digest (a ``hashlib`` name) of the file at ``path``."""
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
            if progress is not None:
                progress(len(block))
    return digest.hexdigest()
