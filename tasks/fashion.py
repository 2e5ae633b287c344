"""Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 60 000 training images, 28×28 grayscale, 10 classes.

Read from the real IDX files, looked for in this order: ``task.root`` (the files themselves or
torchvision's ``FashionMNIST/raw`` layout), the folder Debian's ``dataset-fashion-mnist`` package installs
(/usr/share/datasets/fashion-mnist), then torchvision's download into the data cache when
``task.download`` is true.
"""

from __future__ import annotations

import numpy as np

from suite.data_sources import idx_folders, load_mnist_format, torchvision_download
from suite.image_task import ImageTask
from suite.task import TASKS

DEBIAN_FOLDER = "/usr/share/datasets/fashion-mnist"


def load_fashion_mnist(root: str | None, download: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """Fashion-MNIST training images and labels, and a description of where they came from."""
    from pathlib import Path

    import torchvision

    folders = idx_folders(root, "FashionMNIST") + [Path(DEBIAN_FOLDER)]
    fetch = (
        (lambda: torchvision_download(torchvision.datasets.FashionMNIST, "FashionMNIST"))
        if download
        else None
    )
    found = load_mnist_format(folders, fetch)
    if found is None:
        raise FileNotFoundError(
            "Fashion-MNIST training files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]) not "
            f"found in {[str(f) for f in folders]}. Fix: `apt-get install dataset-fashion-mnist` (installs "
            f"them into {DEBIAN_FOLDER}), or copy the two files from "
            "https://github.com/zalandoresearch/fashion-mnist into a folder and pass task.root=<folder>, "
            "or set task.download=true on a machine with internet."
        )
    images, labels, folder = found
    return images, labels, f"Fashion-MNIST train ({len(images)} images, IDX from {folder})"


@TASKS.register("fashion")
class FashionMNIST(ImageTask):
    """Fashion-MNIST as continuous grayscale images in [−1, 1]."""

    def load_images(self) -> tuple[np.ndarray, np.ndarray | None, str, bool]:
        images, labels, variant = load_fashion_mnist(self.cfg.get("root"), bool(self.cfg.get("download")))
        return images, labels, variant, False
