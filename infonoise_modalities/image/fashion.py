"""Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) for the image tasks: 60 000 training images, 28×28 grayscale,
10 classes.

Read from the real IDX files. With ``task.root`` set, only there (the files themselves or torchvision's
``FashionMNIST/raw`` layout): a root that holds no data set is an error naming it. Without a root: the folder
Debian's ``dataset-fashion-mnist`` package installs (/usr/share/datasets/fashion-mnist), then torchvision's
download into the data cache when ``task.download`` is true. :class:`FashionMNISTTask` is the task base that
reads them; the task plugins ``fashion`` (continuous) and ``bfashion`` (binarized by the config) register it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infonoise_modalities.image.idx import find_idx_pair, idx_problem, write_example_mnist
from infonoise_modalities.image.mnist_sources import (
    idx_folders,
    load_mnist_format,
    missing_root_error,
    torchvision_download,
)
from infonoise_modalities.image.task import Images, ImageTask

DEBIAN_FOLDER = "/usr/share/datasets/fashion-mnist"
FILES = "train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz]"


def not_found_error() -> FileNotFoundError:
    """The error when Fashion-MNIST is in none of its places and no download is asked for."""
    return FileNotFoundError(
        f"Fashion-MNIST training files ({FILES}) not found in {DEBIAN_FOLDER}. Fix: `apt-get install "
        f"dataset-fashion-mnist` (installs them into {DEBIAN_FOLDER}), or copy the two files from "
        "https://github.com/zalandoresearch/fashion-mnist into a folder and pass task.root=<folder>, "
        "or set task.download=true on a machine with internet."
    )


def fashion_mnist_problems(root: str | None, download: bool) -> list[str]:
    """Why :func:`load_fashion_mnist` would fail, from the IDX files' headers (``Task.data_problems``)."""
    folders = idx_folders(root, "FashionMNIST") if root is not None else [Path(DEBIAN_FOLDER)]
    for folder in folders:
        pair = find_idx_pair(folder)
        if pair is not None:
            return [problem for problem in map(idx_problem, pair) if problem]
    if root is not None:
        return [str(missing_root_error(root, FILES, "FashionMNIST"))]
    return [] if download else [str(not_found_error())]


def load_fashion_mnist(root: str | None, download: bool) -> Images:
    """Fashion-MNIST's training images and labels, and where they came from."""
    import torchvision

    if root is not None:
        found = load_mnist_format(idx_folders(root, "FashionMNIST"), None)
        if found is None:
            raise missing_root_error(root, FILES, "FashionMNIST")
    else:
        fetch = (
            (lambda: torchvision_download(torchvision.datasets.FashionMNIST, "FashionMNIST"))
            if download
            else None
        )
        found = load_mnist_format([Path(DEBIAN_FOLDER)], fetch)
    if found is None:
        raise not_found_error()
    images, labels, folder = found
    variant = f"Fashion-MNIST train ({len(images)} images)"
    return Images(images, labels, variant, stand_in=False, source=f"IDX files in {folder}")


class FashionMNISTTask(ImageTask):
    """Fashion-MNIST's training images from their IDX files; the config decides continuous or binary."""

    def load_images(self) -> Images:
        return load_fashion_mnist(self.cfg.get("root"), bool(self.cfg.get("download")))

    def data_problems(self) -> list[str]:
        return fashion_mnist_problems(self.cfg.get("root"), bool(self.cfg.get("download")))

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        write_example_mnist(folder, n)
        return {"root": str(folder)}
