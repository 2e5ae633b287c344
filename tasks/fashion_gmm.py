"""Ground truth fitted to real data: Fashion-MNIST on its first 32 principal components as a mixture of 64
spherical Gaussians (fitted once by EM, ``scripts/fit_fashion_mixture.py``), whose optimal denoiser D* is
known in closed form while its information profile is the data's. The distribution, its draws, the network
and the exact metrics are the point modality's (``infonoise_modalities.points``); the config
``suite/conf/task/fashion_gmm.yaml`` names the fitted file and its digest.
"""

from __future__ import annotations

from infonoise_modalities.points.task import PointTask
from suite.task import TASKS


@TASKS.register("fashion_gmm")
class FashionGMM(PointTask):
    """Fashion-MNIST's 32 principal components as 64 spherical Gaussians (ground truth)."""
