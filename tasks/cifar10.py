"""CIFAR-10 (Krizhevsky 2009): 50 000 training images, 32×32 RGB, 10 classes, trained unconditionally.

Where the images are read from, and the stand-in where they are absent:
``infonoise_modalities.image.cifar10``.

The network is DDPM++ as EDM configures it for CIFAR-10 (``infonoise_modalities.image.networks.EDM_DDPMPP``;
the ``paper`` preset is EDM's 55.7M-parameter network), conditioned on EDM's augmentation labels when the
config's ``augment_p`` is positive (``infonoise_modalities.image.augment``; EDM trains CIFAR-10 with
p = 0.12). FID is measured against the training set, as EDM does.
"""

from __future__ import annotations

from infonoise_modalities.image.cifar10 import CIFAR10Task
from suite.task import TASKS


@TASKS.register("cifar10")
class CIFAR10(CIFAR10Task):
    """CIFAR-10, unconditional, as continuous RGB in [−1, 1]."""
