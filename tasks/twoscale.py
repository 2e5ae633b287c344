"""Ground truth with two information bands: clusters of tight sub-clusters of Gaussians in d = 32.

Which cluster a noisy point came from is decided at σ ≈ 1–5, which sub-cluster at σ ≈ 0.1–0.4, so the
entropy-rate profile MMSE(σ)/σ² has two bands a decade apart that no single log-normal covers. The
distribution, its draws, the network and the exact metrics are the point modality's
(``infonoise_modalities.points``); the config ``suite/conf/task/twoscale.yaml`` names its parameters.
"""

from __future__ import annotations

from infonoise_modalities.points.task import PointTask
from suite.task import TASKS


@TASKS.register("twoscale")
class TwoScale(PointTask):
    """Clusters of tight sub-clusters in d = 32 (ground truth)."""
