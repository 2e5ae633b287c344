"""Pack what the GPU evidence run (tests/gpu/evidence.sh) needs into the 64 MiB a device call may carry,
and unpack it on the GPU machine, which reaches no network.

``pack`` (here, where the data, the FID Inception weights and pip work) writes

* ``.whl/``: the pure-Python wheels the GPU image lacks (hydra-core, omegaconf, antlr4-python3-runtime,
  submitit, torch-fidelity, mlxtend), at the versions installed here;
* ``.gpu_carry/bfashion-bits.npz``: all 60 000 Fashion-MNIST training images thresholded at p/255 > 0.5
  (the ``bfashion`` task's default binarisation) as bits (``numpy.packbits``), with the labels;
* ``.gpu_carry/fashion-subset/``: the first 10 000 grayscale training images and labels as gzipped IDX, for
  the ``fashion`` benches only (throughput does not depend on the data set's size);
* ``.gpu_carry/inception-fp16.pt``: the FID Inception-v3 weights with every large tensor (the conv weights)
  in half precision and the rest (batch-norm statistics, biases) in fp32; the all-zero ``fc`` layer of the
  converted weights is dropped and re-created as zeros;
* ``.gpu_carry/manifest.json``: sources, sizes, sha256 sums, what travelled in half precision and, with
  ``--check``, the effect of the half-precision round trip on a Fréchet distance (CPU);

and checks that the wheels, the packed data and the repository's own files fit in 64 MiB (exit 1 if not).
The full grayscale training set (26 MB gzipped) and the fp32 weights (96 MB) do not fit beside each other.

``.gpu_carry/`` is added to ``.git/info/exclude`` (``.whl/`` is in ``.gitignore``), so both travel only
where a device call names them in ``carry``. Nothing else is carried: the CIFAR-10 benches run on data
that ``Task.example_data`` writes on the GPU machine from the photographs scikit-image and scikit-learn
ship (both are in the GPU image).

``unpack`` (on the GPU machine) writes the ``bfashion`` IDX files (bits → 0/255, which the threshold
binarisation maps back to the same bits), the ``fashion`` subset and the fp32 weights restored under the
suite's converted-weights name, and adds what it did to the manifest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from infonoise_modalities.image.idx import load_idx_images, write_idx  # noqa: E402
from suite.digest import file_digest  # noqa: E402

WHEELS = ("hydra-core", "omegaconf", "antlr4-python3-runtime", "submitit", "torch-fidelity", "mlxtend")
FASHION_FOLDER = "/usr/share/datasets/fashion-mnist"
FASHION_SUBSET = 10_000
HALF_MIN_NUMEL = 4096  # tensors at least this large travel in fp16
LIMIT_MIB = 64
# Folders that never travel with the working tree (ignored by .gitignore / .git/info/exclude).
NOT_TRAVELLING = {
    ".git",
    ".venv",
    ".whl",
    ".gpu_carry",
    ".gl",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "build",
    "runs",
    "cache",
}
BITS_FILE, SUBSET_DIR, WEIGHTS_FILE, MANIFEST = (
    "bfashion-bits.npz",
    "fashion-subset",
    "inception-fp16.pt",
    "manifest.json",
)


def folder_bytes(path: Path) -> int:
    """Total size of the files under ``path`` (0 if absent)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def repo_bytes(root: Path = REPO) -> int:
    """Estimate of the working tree that travels: every file outside the ignored folders."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in NOT_TRAVELLING and not d.endswith(".egg-info")]
        total += sum(
            os.path.getsize(os.path.join(dirpath, f))
            for f in filenames
            if not os.path.islink(os.path.join(dirpath, f))
        )
    return total


# -- pack --------------------------------------------------------------------------------------------
def fetch_wheels(dest: Path) -> list[str]:
    """The wheels of WHEELS at the versions installed here (pip; antlr4 4.9.3 is built from its sdist)."""
    dest.mkdir(parents=True, exist_ok=True)
    names = []
    for name in WHEELS:
        version = metadata.version(name)
        stem = f"{name.replace('-', '_')}-{version}-"
        found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(stem.lower())]
        if not found:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "-q",
                    "--no-deps",
                    "--disable-pip-version-check",
                    "-w",
                    str(dest),
                    f"{name}=={version}",
                ],
                check=True,
            )
            found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(stem.lower())]
        if len(found) != 1 or not found[0].name.endswith("-py3-none-any.whl"):
            raise RuntimeError(f"expected one pure-Python wheel of {name} {version} in {dest}, found {found}")
        names.append(found[0].name)
    return names


def pack_bits(images: np.ndarray, labels: np.ndarray, path: Path) -> dict:
    """Threshold-binarised images (p/255 > 0.5, the task's rule) as packed bits, with the labels."""
    from infonoise_modalities.image.task import binarize

    bits = binarize(images, "threshold")
    np.savez_compressed(
        path,
        bits=np.packbits(bits.reshape(len(bits), -1), axis=1),
        shape=np.array(bits.shape),
        labels=labels.astype(np.uint8),
    )
    return {
        "images": len(bits),
        "binarization": "threshold (p/255 > 0.5)",
        "packed": "numpy.packbits, row-major",
    }


def pack_subset(images: np.ndarray, labels: np.ndarray, folder: Path, n: int) -> dict:
    """The first ``n`` grayscale images and labels as gzipped IDX files."""
    folder.mkdir(parents=True, exist_ok=True)
    write_idx(folder / "train-images-idx3-ubyte.gz", images[:n])
    write_idx(folder / "train-labels-idx1-ubyte.gz", labels[:n])
    return {"images": int(min(n, len(images))), "of": len(images), "use": "benches of the fashion task only"}


def pack_weights(src: Path, dst: Path) -> dict:
    """Write the Inception state dict with large float tensors in fp16; drop an all-zero ``fc``.

    ``src`` is read by ``load_inception_weights`` (``torch.load(weights_only=True)``, checked against the
    extractor's layout; ValueError naming the file otherwise)."""
    import torch

    from infonoise_modalities.image.inception import load_inception_weights

    state = load_inception_weights(src)
    fc_zero = all(not bool(state[k].any()) for k in ("fc.weight", "fc.bias") if k in state)
    packed, half = {}, 0
    for key, value in state.items():
        if fc_zero and key.startswith("fc."):
            continue
        if value.is_floating_point() and value.numel() >= HALF_MIN_NUMEL:
            packed[key], half = value.to(torch.float16), half + value.numel()
        else:
            packed[key] = value
    torch.save(
        {
            "state": packed,
            "fc_shapes": {k: list(state[k].shape) for k in state if k.startswith("fc.")},
            "fc_zero": fc_zero,
        },
        dst,
    )
    restored = restore_weights(dst)
    errors = [
        ((restored[k] - v).abs().max() / v.abs().max().clamp(min=1e-30)).item()
        for k, v in state.items()
        if v.is_floating_point() and v.numel() >= HALF_MIN_NUMEL
    ]
    total = sum(v.numel() for v in state.values())
    return {
        "source": str(src),
        "source_sha256": file_digest(src),
        "source_bytes": src.stat().st_size,
        "half_precision_parameters": half,
        "parameters": total,
        "fp16_tensors": f"floating tensors with >= {HALF_MIN_NUMEL} elements (the conv weights)",
        "fp32_tensors": "batch-norm statistics and biases (and num_batches_tracked)",
        "fc_dropped_as_zero": fc_zero,
        "max_relative_error_fp16": max(errors),
    }


def restore_weights(path: Path) -> dict:
    """The fp32 state dict of a file written by ``pack_weights``."""
    import torch

    packed = torch.load(path, map_location="cpu", weights_only=True)
    state = {k: v.to(torch.float32) if v.is_floating_point() else v for k, v in packed["state"].items()}
    if packed["fc_zero"]:
        state.update({k: torch.zeros(shape) for k, shape in packed["fc_shapes"].items()})
    return state


def check_fd(weights_fp32: Path, state16: dict, images: np.ndarray, n: int) -> dict:
    """Fréchet distance between two disjoint sets of ``n`` real images with the fp32 and fp16-round-trip
    weights (Inception on the CPU): how much the half-precision transit moves the metric."""
    import tempfile

    import torch

    from infonoise_modalities.image.fid import FrechetDistance

    first = torch.from_numpy(images[:n, None].copy())
    second = torch.from_numpy(images[n : 2 * n, None].copy())
    with tempfile.TemporaryDirectory() as tmp:
        restored = Path(tmp) / "restored.pth"
        torch.save(state16, restored)
        values = {}
        for label, weights in (("fp32", weights_fp32), ("fp16_round_trip", restored)):
            fd = FrechetDistance(weights_path=weights, cuda=False, cache_dir=Path(tmp) / label)
            values[label] = fd(first, second)
    return {
        "images_per_set": n,
        "fd_fp32": values["fp32"],
        "fd_fp16_round_trip": values["fp16_round_trip"],
        "relative_difference": abs(values["fp16_round_trip"] - values["fp32"]) / values["fp32"],
    }


def budget_report(carry: Path, wheels: Path, limit_mib: float) -> tuple[dict, bool]:
    """Bytes of what travels (repository estimate, wheels, each carried file) against the limit."""
    parts = {"repository files (estimate)": repo_bytes(), "wheels (.whl/)": folder_bytes(wheels)}
    for item in sorted(carry.iterdir()):
        parts[f".gpu_carry/{item.name}"] = folder_bytes(item) if item.is_dir() else item.stat().st_size
    total = sum(parts.values())
    return {
        "parts_bytes": parts,
        "total_bytes": total,
        "limit_bytes": int(limit_mib * 2**20),
    }, total <= limit_mib * 2**20


def exclude_from_git(folder: Path, root: Path = REPO) -> None:
    """Add ``folder`` (inside the repository) to ``.git/info/exclude`` unless git already ignores it."""
    try:
        relative = folder.resolve().relative_to(root)
    except ValueError:
        return  # outside the repository
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(relative)], check=False)
    if ignored.returncode != 1:  # 0: already ignored; 128: not a git checkout (or git failed)
        return
    # git reads info/exclude from the common git folder, which a linked worktree's own --git-dir is not
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--git-path", "info/exclude"],
        check=True,
        capture_output=True,
        text=True,
    )
    exclude = (root / found.stdout.strip()).resolve()
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with open(exclude, "a") as handle:
        handle.write(f"/{relative.as_posix()}/\n")


def pack(args: argparse.Namespace) -> int:
    from infonoise_modalities.image.inception import resolve_inception_weights

    carry, wheels = Path(args.carry), Path(args.wheels)
    carry.mkdir(parents=True, exist_ok=True)
    exclude_from_git(carry)
    loaded = load_idx_images(args.fashion)
    if loaded is None:
        raise FileNotFoundError(f"no Fashion-MNIST training IDX files in {args.fashion}")
    images, labels = loaded
    weights = resolve_inception_weights(args.weights)
    source = {"source": str(args.fashion)}
    manifest = {
        "wheels": fetch_wheels(wheels),
        "bfashion": pack_bits(images, labels, carry / BITS_FILE) | source,
        "fashion_subset": pack_subset(images, labels, carry / SUBSET_DIR, args.subset) | source,
        "inception": pack_weights(weights, carry / WEIGHTS_FILE),
        "note": "The FID Inception-v3 weights travelled in half precision (conv weights fp16, the rest fp32) "
        "and were restored to fp32 on the GPU machine: FID values carry that rounding.",
    }
    if args.check:
        manifest["inception"]["fd_check"] = check_fd(
            weights, restore_weights(carry / WEIGHTS_FILE), images, args.check
        )
    manifest["files"] = {
        str(p.relative_to(carry)): {"bytes": p.stat().st_size, "sha256": file_digest(p)}
        for p in sorted(carry.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    (carry / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    budget, fits = budget_report(carry, wheels, args.limit_mib)
    manifest["carry_budget"] = budget
    (carry / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    for name, size in budget["parts_bytes"].items():
        print(f"{size / 2**20:8.2f} MiB  {name}")
    print(
        f"{budget['total_bytes'] / 2**20:8.2f} MiB  total, limit {args.limit_mib:g} MiB: "
        f"{'fits' if fits else 'DOES NOT FIT'}"
    )
    if "fd_check" in manifest["inception"]:
        check = manifest["inception"]["fd_check"]
        print(
            f"FD fp32 {check['fd_fp32']:.4f} vs fp16 round trip {check['fd_fp16_round_trip']:.4f} "
            f"({check['images_per_set']} vs {check['images_per_set']} real images)"
        )
    return 0 if fits else 1


# -- unpack ------------------------------------------------------------------------------------------
def unpack(args: argparse.Namespace) -> int:
    import torch

    from infonoise_modalities.image.inception import CONVERTED_WEIGHTS_NAME, load_inception_weights

    carry, dest, cache = Path(args.carry), Path(args.dest), Path(args.cache)
    manifest = json.loads((carry / MANIFEST).read_text())
    for name, entry in manifest["files"].items():
        if file_digest(carry / name) != entry["sha256"]:
            raise ValueError(f"{carry / name} does not match its sha256 in the manifest")
    with np.load(carry / BITS_FILE) as packed:
        shape = tuple(int(s) for s in packed["shape"])
        bits = np.unpackbits(packed["bits"], axis=1, count=int(np.prod(shape[1:]))).reshape(shape)
        labels = packed["labels"]
    (dest / "bfashion").mkdir(parents=True, exist_ok=True)
    write_idx(dest / "bfashion" / "train-images-idx3-ubyte", bits * np.uint8(255))
    write_idx(dest / "bfashion" / "train-labels-idx1-ubyte", labels)
    shutil.copytree(carry / SUBSET_DIR, dest / "fashion", dirs_exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    weights = cache / CONVERTED_WEIGHTS_NAME
    torch.save(restore_weights(carry / WEIGHTS_FILE), weights)
    load_inception_weights(weights)  # read back as FID reads it: tensors only, in the extractor's layout
    manifest["unpacked"] = {
        "bfashion_idx": str(dest / "bfashion"),
        "fashion_idx": str(dest / "fashion"),
        "inception_fp32": str(weights),
        "inception_fp32_sha256": file_digest(weights),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    print(
        f"bfashion IDX ({shape[0]} images) -> {dest / 'bfashion'}; fashion subset -> {dest / 'fashion'}; "
        f"Inception fp32 (restored from fp16) -> {weights}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """``pack`` here, ``unpack`` on the GPU machine."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write .whl/ and .gpu_carry/ and check the 64 MiB budget")
    p.add_argument("--carry", default=str(REPO / ".gpu_carry"))
    p.add_argument("--wheels", default=str(REPO / ".whl"))
    p.add_argument("--fashion", default=FASHION_FOLDER, help="folder of the Fashion-MNIST training IDX files")
    p.add_argument("--weights", default=None, help="FID Inception weights (default: the suite's resolution)")
    p.add_argument("--subset", type=int, default=FASHION_SUBSET, help="grayscale images (fashion bench)")
    p.add_argument("--check", type=int, default=128, help="images per set of the FD check (0: skip it)")
    p.add_argument("--limit-mib", type=float, default=LIMIT_MIB)
    p.set_defaults(func=pack)
    u = sub.add_parser("unpack", help="restore the data and fp32 weights from the carried folder")
    u.add_argument("--carry", default=str(REPO / ".gpu_carry"))
    u.add_argument("--dest", required=True, help="folder for the IDX data sets and the manifest")
    u.add_argument("--cache", required=True, help="the suite's cache folder ($SUITE_CACHE) for the weights")
    u.set_defaults(func=unpack)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
