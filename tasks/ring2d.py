"""Ground truth in the plane: points of an 8-Gaussian ring, whose optimal denoiser D* is known in closed form.

The distribution, its draws, the network and the exact metrics are the point modality's
(``infonoise_modalities.points``); the config ``suite/conf/task/ring2d.yaml`` names the ring's parameters.
"""

from __future__ import annotations

from infonoise_modalities.points.task import PointTask
from suite.task import TASKS


@TASKS.register("ring2d")
class Ring2D(PointTask):
    """A ring of equal-weight Gaussians in 2-D (ground truth)."""
