"""Binarized Fashion-MNIST: Fashion-MNIST's training images binarized (threshold at 0.5 by default,
``task.binarize=stochastic`` for a fixed-seed Bernoulli draw), diffused as {−1, +1} and decoded by sign."""

from __future__ import annotations

from infonoise_modalities.image.fashion import FashionMNISTTask
from suite.task import TASKS


@TASKS.register("bfashion")
class BinarizedFashionMNIST(FashionMNISTTask):
    """Same files and loader as ``fashion``; the config's ``binarize`` key makes it binary."""
