"""Fréchet distance between image sets: torch-fidelity's features and statistics, a symmetric trace term.

FD = ‖μ₁ − μ₂‖² + tr(Σ₁ + Σ₂ − 2(Σ₁Σ₂)^½) between Gaussians fitted to the features of the two sets
(Heusel et al. 2017, arXiv:1706.08500). Features, means and covariances come from torch-fidelity's own
pipeline (`fid_input_id_to_statistics_cached`, the code path of `calculate_metrics`); with the
`inception-v3-compat` extractor and the standard 2015-12-05 weights this is FID, with any other extractor a
Fréchet distance in its features, named `fd-<extractor>`.

The trace term: Σ₁Σ₂ is similar to the symmetric PSD matrix Σ₁^½Σ₂Σ₁^½, so tr((Σ₁Σ₂)^½) = Σ √λᵢ of that
matrix, computed with two symmetric eigendecompositions instead of torch-fidelity's general `eigvals` of
the non-symmetric product (tens of seconds for 2048×2048 on a CPU, and prone to complex round-off).
When the generated set has n < d samples, Σ₁ = XᵀX/(n−1) with X the centred features, and the non-zero
eigenvalues of Σ₁Σ₂ are those of the n×n matrix XΣ₂Xᵀ/(n−1): one small eigendecomposition.

Reference statistics (and features) are cached by torch-fidelity under `<cache_dir>/fidelity` with the cache
name `ref-<sha256 of the reference images>`; generated samples are never cached.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset
from torch_fidelity.metric_fid import fid_input_id_to_statistics_cached
from torch_fidelity.registry import FEATURE_EXTRACTORS_REGISTRY
from torch_fidelity.utils import (
    create_feature_extractor,
    extract_featuresdict_from_input_id_cached,
    resolve_feature_layer_for_metric,
)

from suite.metrics import INFONOISE_TABLE, METRICS, EvalInputs, Metric
from suite.metrics.inception import resolve_inception_weights, suite_cache_dir
from suite.task import MetricSpec

INCEPTION_EXTRACTOR = "inception-v3-compat"


def _check_images(images: Tensor, what: str) -> None:
    """Raise ValueError unless `images` is uint8 [N, C, H, W] with C in {1, 3} and N ≥ 2."""
    if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[1] not in (1, 3):
        raise ValueError(
            f"{what}: expected uint8 [N, C, H, W] with C in (1, 3), got {images.dtype} {tuple(images.shape)}"
        )
    if images.shape[0] < 2:
        raise ValueError(f"{what}: a covariance needs at least 2 images, got {images.shape[0]}")


def reference_key(images: Tensor) -> str:
    """Content key of an image tensor: sha256 over its dtype, shape and raw bytes (C order), hex."""
    array = images.detach().cpu().contiguous().numpy()
    digest = hashlib.sha256(f"{images.dtype}:{tuple(images.shape)}:".encode())
    digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


class ImageTensorDataset(Dataset):
    """Dataset over a uint8 [N, C, H, W] tensor yielding uint8 3×H×W images, the input torch-fidelity takes.

    Grayscale (C = 1) is replicated to 3 channels. `what` names the tensor in error messages.
    """

    def __init__(self, images: Tensor, what: str = "images") -> None:
        _check_images(images, what)
        self.images = images.detach().cpu()

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, index: int) -> Tensor:
        image = self.images[index]
        return image.expand(3, -1, -1) if image.shape[0] == 1 else image


class FrechetDistance:
    """Fréchet distance of generated images to a reference set, from torch-fidelity features and statistics.

    `weights_path` is resolved with `resolve_inception_weights` for `inception-v3-compat` (offline fallback
    included) and passed through unchanged to any other extractor. `cuda` defaults to
    `torch.cuda.is_available()`; `cache_dir` defaults to `suite_cache_dir()`.
    """

    def __init__(
        self,
        feature_extractor: str = INCEPTION_EXTRACTOR,
        weights_path: str | os.PathLike | None = None,
        batch_size: int = 64,
        cuda: bool | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        if feature_extractor not in FEATURE_EXTRACTORS_REGISTRY:
            raise ValueError(
                f"feature extractor {feature_extractor!r} is not registered with torch-fidelity; "
                f"known: {sorted(FEATURE_EXTRACTORS_REGISTRY)}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.feature_extractor = feature_extractor
        self.batch_size = int(batch_size)
        self.cuda = torch.cuda.is_available() if cuda is None else bool(cuda)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else suite_cache_dir()
        if feature_extractor == INCEPTION_EXTRACTOR:
            self.weights_path: Path | None = resolve_inception_weights(weights_path, cache_dir=self.cache_dir)
        else:
            self.weights_path = Path(weights_path) if weights_path is not None else None

    @property
    def metric_name(self) -> str:
        """`fid` for the Inception-v3 extractor, `fd-<extractor>` for any other."""
        if self.feature_extractor == INCEPTION_EXTRACTOR:
            return "fid"
        return f"fd-{self.feature_extractor}"

    @property
    def fidelity_cache_root(self) -> Path:
        """Folder of torch-fidelity's feature and statistics cache."""
        return self.cache_dir / "fidelity"

    def __call__(self, generated: Tensor, reference: Tensor) -> float:
        """Distance between `generated` and `reference`, both uint8 [N, C, H, W] with C in {1, 3}.

        The reference statistics are cached under `ref-<reference_key(reference)>`; `generated` is not.
        The data loader runs in-process (`save_cpu_ram=True`): the images are already in memory, so worker
        processes would only add start-up and copying cost.
        """
        kwargs = {
            "input1": ImageTensorDataset(generated, "generated"),
            "input2": ImageTensorDataset(reference, "reference"),
            "input2_cache_name": f"ref-{reference_key(reference)}",
            "cache": True,
            "cache_root": str(self.fidelity_cache_root),
            "fid": True,
            "feature_extractor": self.feature_extractor,
            "feature_extractor_weights_path": None if self.weights_path is None else str(self.weights_path),
            "batch_size": self.batch_size,
            "cuda": self.cuda,
            "save_cpu_ram": True,
            "verbose": False,
        }
        layer = resolve_feature_layer_for_metric("fid", **kwargs)
        extractor = create_feature_extractor(self.feature_extractor, [layer], **kwargs)
        features = (
            extract_featuresdict_from_input_id_cached(1, extractor, **kwargs)[layer].to(torch.float64).numpy()
        )
        reference_stats = fid_input_id_to_statistics_cached(2, extractor, layer, **kwargs)
        return frechet_distance(features, reference_stats["mu"], reference_stats["sigma"])


def frechet_distance(features: np.ndarray, mu_ref: np.ndarray, sigma_ref: np.ndarray) -> float:
    """FD between the Gaussian fitted to ``features`` [n, d] and N(mu_ref, sigma_ref), in float64."""
    features = np.asarray(features, dtype=np.float64)
    mu_ref = np.asarray(mu_ref, dtype=np.float64)
    sigma_ref = np.asarray(sigma_ref, dtype=np.float64)
    n, d = features.shape
    mu = features.mean(0)
    centred = features - mu
    if n <= d:
        small = centred @ sigma_ref @ centred.T / (n - 1)
        eig = np.linalg.eigvalsh((small + small.T) / 2)
        trace_sigma = np.einsum("ij,ij->", centred, centred) / (n - 1)
    else:
        sigma = centred.T @ centred / (n - 1)
        w, v = np.linalg.eigh(sigma)
        root = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
        inner = root @ sigma_ref @ root
        eig = np.linalg.eigvalsh((inner + inner.T) / 2)
        trace_sigma = np.trace(sigma)
    trace_covmean = np.sqrt(np.clip(eig, 0, None)).sum()
    diff = mu - mu_ref
    return float(diff @ diff + trace_sigma + np.trace(sigma_ref) - 2 * trace_covmean)


@METRICS.register("fid")
class FIDMetric(Metric):
    """FID of decoded uint8 images against the reference split's images (options: ``feature_extractor``,
    ``weights_path``, ``batch_size``); any extractor but Inception-v3 gives a labelled ``fd-<extractor>``."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.distance = FrechetDistance(
            feature_extractor=self.options.get("feature_extractor", INCEPTION_EXTRACTOR),
            weights_path=self.options.get("weights_path"),
            batch_size=int(self.options.get("batch_size", 64)),
            cuda=self.device.type == "cuda",
        )

    @property
    def spec(self) -> MetricSpec:
        real = self.distance.feature_extractor == INCEPTION_EXTRACTOR
        label = "FID" if real else f"Fréchet distance ({self.distance.feature_extractor} features)"
        return MetricSpec(
            name=self.distance.metric_name,
            higher_is_better=False,
            label=label,
            published=INFONOISE_TABLE if real else None,
            substitutes=None if real else "fid",
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        return {"value": self.distance(inputs.generated, inputs.reference)}
