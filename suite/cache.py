"""Derived caches that prove what they hold.

A derived cache keeps on disk a value the suite computes from inputs it has at hand: the point modality's
kl-bound controls with their exact MMSE and its fd-exact floor (``ExactMetric.cached``), the image
modality's FID reference statistics, the text modality's MAUVE reference features, and the saved post hoc
profiles (``suite.report.profile``). Each is written with its *proof*, a JSON record of

  key       what it was computed from: a digest of its inputs (for the FID statistics, the digest of the
            reference images with the extractor, layer and weights);
  arrays    each array's name, dtype and shape;
  sha256    a checksum over the names, dtypes, shapes and bytes of the arrays, in name order.

:func:`proof_problem` checks a loaded cache against its proof and the key it is asked for: no proof (a file
written before caches carried one, or not by the suite), another key, a missing array (a truncated file), a
dtype or shape other than the proof's, values whose checksum is not the proof's (zeroed, overwritten), or
values that are not finite. A cache with a problem is recomputed, after a line on stderr naming the file and
the problem (:func:`recomputing`); where its inputs are not at hand (a saved profile, read by the figures)
the reader raises instead, naming the file and the command that writes it again. :func:`cached_tensor` is
the whole cycle for a tensor kept with ``torch.save`` (read back with ``weights_only=True``, so a file
holding any other object is a problem, never code that runs), :func:`cached_arrays` for numpy arrays kept
in an ``.npz`` beside their proof (read back with ``allow_pickle=False``).
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from suite.records import write_atomic

PROOF_VERSION = 1


def _array(value: np.ndarray | Tensor) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    return np.ascontiguousarray(value)


def checksum(arrays: Mapping[str, np.ndarray | Tensor]) -> str:
    """SHA-256 (hex) over the name, dtype, shape and bytes of each array, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = _array(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}:".encode())
        digest.update(memoryview(array.reshape(-1)).cast("B"))
    return digest.hexdigest()


def make_proof(key: str, arrays: Mapping[str, np.ndarray | Tensor]) -> str:
    """The proof (JSON text) of a cache computed from ``key`` that holds ``arrays``."""
    described = {name: [_array(a).dtype.str, list(_array(a).shape)] for name, a in sorted(arrays.items())}
    record = {"version": PROOF_VERSION, "key": key, "arrays": described, "sha256": checksum(arrays)}
    return json.dumps(record, sort_keys=True)


def proof_problem(proof: object, key: str, arrays: Mapping[str, np.ndarray | Tensor]) -> str | None:
    """Why a cache that holds ``arrays`` with the proof ``proof`` (its JSON text) is not the value of ``key``
    (module docstring); None when it is."""
    try:
        record = json.loads(proof) if isinstance(proof, str) else None
    except ValueError:
        record = None
    if not isinstance(record, dict) or not {"key", "arrays", "sha256"} <= set(record):
        return "it carries no proof of what it holds (written before caches did, or not by the suite)"
    if record["key"] != key:
        return f"it was computed from other inputs (key {record['key']!r}, asked for {key!r})"
    expected = record["arrays"]
    if not isinstance(expected, dict) or sorted(expected) != sorted(arrays):
        return (
            f"it holds arrays {sorted(arrays)}; its proof names {sorted(expected or {})} (a truncated file?)"
        )
    for name, array in sorted(arrays.items()):
        array = _array(array)
        if [array.dtype.str, list(array.shape)] != expected[name]:
            dtype, shape = expected[name]
            return f"its {name} is {array.dtype} {tuple(array.shape)}; its proof says {dtype} {tuple(shape)}"
    if checksum(arrays) != record["sha256"]:
        return "its values are not the ones written (their checksum is not its proof's: zeroed or altered)"
    for name, array in sorted(arrays.items()):
        array = _array(array)
        if array.dtype.kind in "fc" and not np.isfinite(array).all():
            return f"its {name} holds {int(array.size - np.isfinite(array).sum())} non-finite value(s)"
    return None


def recomputing(path: Path, problem: str) -> None:
    """Say on stderr that the cache ``path`` is recomputed, and why."""
    print(f"warning: cache {path}: {problem}; recomputing it", file=sys.stderr, flush=True)


def _read_tensor(path: Path, key: str) -> tuple[Tensor | None, str]:
    """(the tensor, "") of a tensor cache that proves it is the value of ``key``, else (None, why not)."""
    try:
        saved: Any = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # truncated, empty, not a torch file, or an object weights_only refuses
        first = (str(err).strip().splitlines() or [""])[0][:120]
        return None, f"it is not a readable torch file ({type(err).__name__}: {first})"
    if not isinstance(saved, dict) or not isinstance(saved.get("value"), Tensor):
        return None, "it carries no proof of what it holds (written before caches did, or not by the suite)"
    value = saved["value"]
    problem = proof_problem(saved.get("proof"), key, {"value": value})
    return (None, problem) if problem else (value, "")


def write_tensor(path: Path, key: str, value: Tensor) -> None:
    """Keep ``value``, computed from ``key``, at ``path`` with its proof (atomically)."""
    buffer = io.BytesIO()
    torch.save({"value": value, "proof": make_proof(key, {"value": value})}, buffer)
    write_atomic(path, buffer.getvalue())


def cached_tensor(path: Path, key: str, compute: Callable[[], Tensor]) -> Tensor:
    """The tensor kept at ``path`` when it proves to be the value of ``key``; otherwise ``compute()``, kept
    there with its proof (a file that fails its proof is named on stderr with the problem first)."""
    if path.is_file():
        value, problem = _read_tensor(path, key)
        if value is not None:
            return value
        recomputing(path, problem)
    value = compute()
    write_tensor(path, key, value)
    return value


PROOF_ARRAY = "proof"  # the proof's member in an .npz cache (a 0-d unicode array)


def _read_arrays(path: Path, key: str) -> tuple[dict[str, np.ndarray] | None, str]:
    """(the arrays, "") of an ``.npz`` cache that proves to be the value of ``key``, else (None, why not)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as err:  # truncated, empty, not an .npz, or object arrays allow_pickle refuses
        first = (str(err).strip().splitlines() or [""])[0][:120]
        return None, f"it is not a readable .npz archive ({type(err).__name__}: {first})"
    proof = arrays.pop(PROOF_ARRAY, None)
    text = (
        str(proof) if isinstance(proof, np.ndarray) and proof.dtype.kind == "U" and proof.ndim == 0 else None
    )
    problem = proof_problem(text, key, arrays)
    return (None, problem) if problem else (arrays, "")


def cached_arrays(
    path: Path, key: str, compute: Callable[[], Mapping[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """The arrays kept at ``path`` (an ``.npz``) when they prove to be the value of ``key``; otherwise
    ``compute()``, kept there with their proof (a file that fails its proof is named on stderr first)."""
    if path.is_file():
        arrays, problem = _read_arrays(path, key)
        if arrays is not None:
            return arrays
        recomputing(path, problem)
    arrays = {name: np.ascontiguousarray(value) for name, value in compute().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, **{PROOF_ARRAY: np.array(make_proof(key, arrays))})
    write_atomic(path, buffer.getvalue())
    return arrays
