"""A pickled object whose unpickling runs code: the payload the suite's readers must never execute.

`MakeDirOnUnpickle(marker)` pickles as the call `os.mkdir(marker)` (its `__reduce__`), so a loader that
unpickles it (`torch.load(weights_only=False)`, `pickle.loads`, `numpy.load(allow_pickle=True)`) creates
the folder `marker`; a test that finds no `marker` knows the payload did not run.
"""

from __future__ import annotations

import os


class MakeDirOnUnpickle:
    """Pickles as a call to os.mkdir(marker): unpickling it creates the folder `marker`."""

    def __init__(self, marker: str | os.PathLike) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple:
        return (os.mkdir, (self.marker,))
