"""Class-conditional CIFAR-10: the CIFAR-10 task base (``infonoise_modalities.image.cifar10``) conditioned
on its 10 labels.

The labels reach the network as ``class_labels``, one-hot rows; the all-zero row is the null label, which
classifier-free guidance training substitutes with probability ``cond_dropout`` and sampling uses for the
unconditional branch (EDM trains its conditional CIFAR-10 model without label dropout and samples it
without guidance; the suite's default guidance 1 is that setting). Evaluation samples with the labels of a
fixed random choice of training images, so FID compares against a label-matched reference.
"""

from __future__ import annotations

from infonoise_modalities.image.cifar10 import CIFAR10Task
from suite.task import TASKS


@TASKS.register("cifar10_cond")
class CIFAR10Conditional(CIFAR10Task):
    """CIFAR-10 conditioned on its class (``num_classes: 10`` in the config)."""
