"""Where MNIST-format data sets are looked for, in order, and the errors when none is found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from infonoise_modalities.image.idx import load_idx_images
from suite import paths


def idx_folders(root: str | None, torchvision_name: str) -> list[Path]:
    """Candidate folders for a configured root: the root itself and torchvision's ``<root>/<Name>/raw``."""
    if root is None:
        return []
    root_path = Path(root).expanduser()
    return [root_path, root_path / torchvision_name / "raw"]


def missing_root_error(root: str, files: str, torchvision_name: str) -> FileNotFoundError:
    """The error for an explicit ``task.root`` that holds no data set (never silently looked past)."""
    path = Path(root).expanduser()
    problem = (
        f"{path} holds neither {files} nor {torchvision_name}/raw/ with them"
        if path.exists()
        else f"{path} does not exist"
    )
    return FileNotFoundError(
        f"task.root={root}: {problem}; point task.root at the folder that holds {files}, or drop "
        "task.root to use the default locations"
    )


def torchvision_download(dataset: Callable[..., object], name: str) -> Path:
    """Download the training split with torchvision into the data cache; returns its raw folder."""
    target = paths.data_dir()
    target.mkdir(parents=True, exist_ok=True)
    dataset(root=str(target), train=True, download=True)
    return target / name / "raw"


def load_mnist_format(
    folders: list[Path], download: Callable[[], Path] | None
) -> tuple[np.ndarray, np.ndarray, Path] | None:
    """The first MNIST-format training set found in ``folders``, else downloaded, else None."""
    for folder in folders:
        loaded = load_idx_images(folder)
        if loaded is not None:
            return loaded[0], loaded[1], folder
    if download is None:
        return None
    try:
        folder = download()
    except (OSError, RuntimeError) as err:  # no network: fall through to the caller's error message
        print(f"download failed: {err}")
        return None
    loaded = load_idx_images(folder)
    return None if loaded is None else (loaded[0], loaded[1], folder)
