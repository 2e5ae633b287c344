"""Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 60 000 training images, 28×28 grayscale, 10 classes, read
from the real IDX files where ``infonoise_modalities.image.fashion`` looks for them (Debian's package,
``task.root`` or torchvision's download)."""

from __future__ import annotations

from infonoise_modalities.image.fashion import FashionMNISTTask
from suite.task import TASKS


@TASKS.register("fashion")
class FashionMNIST(FashionMNISTTask):
    """Fashion-MNIST as continuous grayscale images in [−1, 1]."""
