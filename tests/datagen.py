"""Small data sets written in the real on-disk formats, for tests that must not depend on downloads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suite.datasets import write_idx


def write_mnist_format(folder: Path, n: int = 256, seed: int = 0, gz: bool = True) -> Path:
    """n 28×28 uint8 images of blurred blobs and their labels as MNIST IDX files in ``folder``."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:28, 0:28]
    labels = rng.integers(0, 10, n).astype(np.uint8)
    cx = 8 + 1.2 * labels + rng.normal(0, 1, n)
    cy = 14 + rng.normal(0, 3, n)
    radius = 4 + rng.uniform(0, 3, n)
    dist = np.sqrt((xx[None] - cx[:, None, None]) ** 2 + (yy[None] - cy[:, None, None]) ** 2)
    images = (255 / (1 + np.exp(2 * (dist - radius[:, None, None])))).astype(np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gz else ""
    write_idx(folder / f"train-images-idx3-ubyte{suffix}", images)
    write_idx(folder / f"train-labels-idx1-ubyte{suffix}", labels)
    return folder
