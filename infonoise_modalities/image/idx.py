"""Readers for the real on-disk formats of the image data sets (the MNIST IDX format).

IDX (LeCun et al., http://yann.lecun.com/exdb/mnist/): a big-endian header of two zero bytes, a type code
(0x08 = unsigned byte), the number of dimensions, then one uint32 size per dimension, then the data.
MNIST and Fashion-MNIST ship as ``{train,t10k}-{images-idx3,labels-idx1}-ubyte`` files, often gzipped.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

IDX_UBYTE = 0x08
MNIST_TRAIN_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in an IDX file (plain or ``.gz``) of unsigned bytes."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (EOFError, zlib.error, OSError) as err:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"{path} is not a readable gzip file (truncated or corrupt?): {err}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    dtype_code, ndim = raw[2], raw[3]
    if dtype_code != IDX_UBYTE:
        raise ValueError(f"{path}: IDX type code {dtype_code:#x} is not unsigned byte (0x08)")
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} but holds {data.size} bytes")
    return data.reshape(shape).copy()  # frombuffer views are read-only


def idx_problem(path: str | os.PathLike, chunk: int = 1 << 20) -> str | None:
    """Why an IDX file (plain or ``.gz``) cannot be read, or None: its magic number and dimensions are read
    from the header, and the data are streamed (a gzip stream to its end, which checks its CRC) and counted
    against the size the header states, without holding them in memory."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(4)
            if len(head) < 4 or head[0] != 0 or head[1] != 0:
                return f"{path} is not an IDX file (bad magic number)"
            if head[2] != IDX_UBYTE:
                return f"{path}: IDX type code {head[2]:#x} is not unsigned byte (0x08)"
            dims = handle.read(4 * head[3])
            if len(dims) < 4 * head[3]:
                return f"{path}: its IDX header is cut short"
            shape = struct.unpack(f">{head[3]}I", dims)
            size = 0
            while block := handle.read(chunk):
                size += len(block)
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        return f"{path} is not a readable gzip file (truncated or corrupt?): {err}"
    if size != int(np.prod(shape)):
        return f"{path}: its IDX header says {shape} ({int(np.prod(shape))} bytes) but it holds {size} bytes"
    return None


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (gzipped when the name ends in ``.gz``)."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, IDX_UBYTE, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as handle:
        handle.write(header + array.tobytes())


def find_idx_pair(
    folder: str | os.PathLike, names: Sequence[str] = MNIST_TRAIN_FILES
) -> tuple[Path, Path] | None:
    """The (images, labels) IDX files in ``folder``, gzipped or not; None if either is missing."""
    found = []
    for name in names:
        for candidate in (Path(folder) / name, Path(folder) / f"{name}.gz"):
            if candidate.is_file():
                found.append(candidate)
                break
        else:
            return None
    return found[0], found[1]


def load_idx_images(folder: str | os.PathLike) -> tuple[np.ndarray, np.ndarray] | None:
    """Training images [N, 28, 28] uint8 and labels [N] from an MNIST-format folder, or None."""
    pair = find_idx_pair(folder)
    if pair is None:
        return None
    images, labels = read_idx(pair[0]), read_idx(pair[1])
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"{folder}: images {images.shape} and labels {labels.shape} do not match")
    return images, labels


def write_example_mnist(folder: Path, n: int = 256, seed: int = 0, gz: bool = True) -> Path:
    """n 28×28 uint8 images of blurred blobs and their labels as MNIST IDX training files in ``folder``
    (example data in the real format, for tests and the task contract)."""
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
