"""Fréchet distance between image sets: torch-fidelity's features and statistics, a symmetric trace term.

FD = ‖μ₁ − μ₂‖² + tr(Σ₁ + Σ₂ − 2(Σ₁Σ₂)^½) between Gaussians fitted to the features of the two sets
(Heusel et al. 2017, arXiv:1706.08500). Features, means and covariances come from torch-fidelity's own
functions (`extract_featuresdict_from_input_id`, `fid_features_to_statistics`, those `calculate_metrics`
uses); with the
`inception-v3-compat` extractor and the standard 2015-12-05 weights this is FID, with any other extractor a
Fréchet distance in its features, named `fd-<extractor>`.

The trace term: Σ₁Σ₂ is similar to the symmetric PSD matrix Σ₁^½Σ₂Σ₁^½, so tr((Σ₁Σ₂)^½) = Σ √λᵢ of that
matrix, computed with two symmetric eigendecompositions instead of torch-fidelity's general `eigvals` of
the non-symmetric product (tens of seconds for 2048×2048 on a CPU, and prone to complex round-off).
When the generated set has n < d samples, Σ₁ = XᵀX/(n−1) with X the centred features, and the non-zero
eigenvalues of Σ₁Σ₂ are those of the n×n matrix XΣ₂Xᵀ/(n−1): one small eigendecomposition.

The Inception weights are read by the suite with `torch.load(weights_only=True)` when the distance is built
(`infonoise_modalities.image.inception.load_inception_weights`; a file holding any other object is
refused there) and given to torch-fidelity's extractor as an in-memory archive of those tensors, never as a
file path; so are the weights of any other extractor (`infonoise_modalities.image.extractor_weights`:
VGG16's read the same way, CLIP's and DINOv2's refused).

Reference statistics are cached by the suite, not by torch-fidelity, whose cache (`cache=True`) reads its
`.pt` files with `torch.load` and `weights_only` off: a file placed in a shared cache would run as code. The
suite calls torch-fidelity's uncached feature extraction and `fid_features_to_statistics` (μ the float32 mean
of the float32 features, Σ their float64 covariance) and stores the result in EDM's reference layout, an
`.npz` of float64 `mu` [d] and `sigma` [d, d] (μ widened exactly, so FID is bit-identical to the uncached
value), written atomically at `<cache_dir>/fid-stats/ref-<images>-<extractor>-<layer>-<weights>.npz`:
`<images>` the sha256 of the reference images, `<weights>` 16 hex of the sha256 of the Inception tensors
(of the weights file for another extractor, `own-weights` without one), so statistics from other weights
are never used. Beside them lies their proof (`proof`, ``suite.cache``: the file's name as the key, the
arrays' dtypes and shapes and a checksum of their values). It is read with
`numpy.load(allow_pickle=False)`, which builds plain arrays only; a file that is not such an archive of
float arrays of the right shapes is refused (`StatisticsRefused`, naming it and saying to delete it). The
shapes and dtypes are read from the `.npy` headers before any array is (a header may claim any size), and
the arrays must be statistics (`statistics_problem`): finite, Σ symmetric to `SYMMETRY_RTOL` of its
largest entry and positive semi-definite (Σ + `PSD_JITTER`·max|Σ|·I has a Cholesky factor: a covariance
of n < d features is singular, its round-off eigenvalues ~1e-16·d·max|Σ|). A cached file that is refused
or fails its proof (truncated, zeroed, altered, written before the proof, or under another name) is
computed again from the reference images after a line on stderr naming it and the problem; a file given
to `suite fid calc` is refused instead (its images are not at hand).
Generated samples are never cached. A process about to compute missing statistics
takes the lock of their folder first (`statistics_lock`) and looks again, so that runs started together (K
packed runs, an array of jobs) compute them once while the others wait and read the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset
from torch_fidelity.metric_fid import fid_features_to_statistics
from torch_fidelity.registry import FEATURE_EXTRACTORS_REGISTRY
from torch_fidelity.utils import (
    create_feature_extractor,
    extract_featuresdict_from_input_id,
    resolve_feature_layer_for_metric,
)

from infonoise_modalities.image.extractor_weights import load_extractor_weights, weights_archive
from infonoise_modalities.image.inception import (
    CONVERTED_WEIGHTS_NAME,
    find_fid_helper_torchscript,
    hub_weights_path,
    inception_weights_archive,
    load_inception_weights,
    resolve_inception_weights,
)
from suite import paths
from suite.cache import make_proof, proof_problem, recomputing
from suite.metrics import INFONOISE_TABLE, METRICS, EvalInputs, Metric, MetricSpec
from suite.stopping import check
from suite.watch import progress_enabled

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
        check("while featurising images")  # a stop request abandons the evaluation here
        image = self.images[index]
        return image.expand(3, -1, -1) if image.shape[0] == 1 else image


def weights_digest(state: Mapping[str, Tensor]) -> str:
    """Content key of a state dict: sha256 over each tensor's name, dtype, shape and bytes (by name), hex."""
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}:".encode())
        digest.update(memoryview(tensor.reshape(-1).view(torch.uint8).numpy()))
    return digest.hexdigest()


class StatisticsRefused(ValueError):
    """A reference-statistics file the suite will not use: ``problem`` says why."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"refusing cached FID reference statistics {path}: {problem}. To fix: delete it; the suite "
            "computes it again from the reference images on next use."
        )
        self.path, self.problem = path, problem


def _stats_refusal(path: Path, problem: str) -> StatisticsRefused:
    """The error for a cached reference-statistics file the suite will not use, saying what to do."""
    return StatisticsRefused(path, problem)


PROOF_MEMBER = "proof"  # the cache's proof (``suite.cache``), a 0-d unicode array beside mu and sigma
PROOF_MAX_CHARS = 4096


def read_statistics_proof(path: str | os.PathLike) -> str | None:
    """The proof kept in a statistics ``.npz`` (``PROOF_MEMBER``), None when it has none or it is not a short
    unicode scalar (read from its header first); call after :func:`read_reference_statistics` accepted it."""
    with np.load(path, allow_pickle=False) as archive:
        if PROOF_MEMBER not in archive.files:
            return None
        shape, dtype = _npy_header(archive, PROOF_MEMBER)
        if shape != () or dtype.kind != "U" or dtype.itemsize > 4 * PROOF_MAX_CHARS:
            return None
        return str(archive[PROOF_MEMBER])


SYMMETRY_RTOL = 1e-8
PSD_JITTER = 1e-9


def statistics_problem(mu: np.ndarray, sigma: np.ndarray) -> str | None:
    """Why ``mu`` [d] and ``sigma`` [d, d] are not the mean and covariance of some features (module
    docstring), None when they may be."""
    for name, array in (("mu", mu), ("sigma", sigma)):
        bad = int(np.size(array) - np.isfinite(array).sum())
        if bad:
            return f"its {name} holds {bad} non-finite value(s) (NaN or inf)"
    scale = float(np.abs(sigma).max(initial=0.0)) or 1.0
    asymmetry = float(np.abs(sigma - sigma.T).max(initial=0.0))
    if asymmetry > SYMMETRY_RTOL * scale:
        return (
            f"its sigma is not symmetric (max |sigma - sigma.T| = {asymmetry:.3g}, max |sigma| = {scale:.3g})"
        )
    try:
        np.linalg.cholesky(sigma + PSD_JITTER * scale * np.eye(len(sigma)))
    except np.linalg.LinAlgError:
        lowest = float(np.linalg.eigvalsh(sigma)[0])
        return (
            f"its sigma is not positive semi-definite (an eigenvalue {lowest:.3g}, max |sigma| = {scale:.3g})"
        )
    return None


def _npy_header(archive: np.lib.npyio.NpzFile, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the array ``key`` of ``archive``, from its ``.npy`` header alone."""
    with archive.zip.open(f"{key}.npy") as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f".npy format version {version}")
    return shape, dtype


def read_reference_statistics(path: str | os.PathLike, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`mu` [dim] and `sigma` [dim, dim] from the `.npz` at `path`, read by `numpy.load(allow_pickle=False)`.

    Raises ValueError naming the file and saying to delete it when it is not an `.npz` archive (numpy
    takes any file without its magic for a pickle), holds pickled (object) arrays, lacks `mu` or `sigma`,
    holds them with a non-float dtype or other shapes (read from the headers, before the arrays), or holds
    arrays that are not statistics (`statistics_problem`).
    """
    path = Path(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (EOFError, zipfile.BadZipFile) as err:
        raise _stats_refusal(
            path, f"it is not a readable .npz archive ({type(err).__name__}: {err})"
        ) from None
    except ValueError:
        problem = (
            "it is neither an .npz archive nor an .npy array (numpy takes such a file for a pickle, which is "
            "never unpickled here)"
        )
        raise _stats_refusal(path, problem) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise _stats_refusal(path, "it is a single .npy array, not an .npz archive of mu and sigma")
    with archive:
        missing = [key for key in ("mu", "sigma") if key not in archive.files]
        if missing:
            raise _stats_refusal(path, f"it has no {' or '.join(missing)} (it holds {archive.files[:4]})")
        try:
            (mu_shape, mu_dtype), (sigma_shape, sigma_dtype) = (
                _npy_header(archive, k) for k in ("mu", "sigma")
            )
        except (EOFError, zipfile.BadZipFile, ValueError) as err:
            raise _stats_refusal(path, f"its arrays are unreadable ({type(err).__name__}: {err})") from None
        if mu_dtype.hasobject or sigma_dtype.hasobject:
            problem = "its mu or sigma is an object array (pickled data, never unpickled here)"
            raise _stats_refusal(path, problem)
        if (mu_dtype.kind, sigma_dtype.kind, mu_shape, sigma_shape) != ("f", "f", (dim,), (dim, dim)):
            raise _stats_refusal(
                path,
                f"it holds mu {mu_dtype} {mu_shape} and sigma {sigma_dtype} {sigma_shape}; expected float "
                f"({dim},) and ({dim}, {dim})",
            )
        try:
            mu, sigma = archive["mu"], archive["sigma"]
        except (EOFError, zipfile.BadZipFile, ValueError) as err:
            raise _stats_refusal(path, f"its arrays are unreadable ({type(err).__name__}: {err})") from None
    problem = statistics_problem(mu, sigma)
    if problem:
        raise _stats_refusal(path, problem)
    return mu, sigma


def write_reference_statistics(
    path: str | os.PathLike, mu: np.ndarray, sigma: np.ndarray, key: str | None = None
) -> None:
    """Write `mu` and `sigma` as float64 arrays in an `.npz` at `path` (EDM's reference layout), atomically
    (temporary file, fsync, rename) and readable by all (0644), since the suite's cache may be shared; with
    `key` (what they were computed from) also their proof (`PROOF_MEMBER`, ``suite.cache.make_proof``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"mu": np.asarray(mu, dtype=np.float64), "sigma": np.asarray(sigma, dtype=np.float64)}
    if key is not None:
        arrays[PROOF_MEMBER] = np.array(make_proof(key, arrays))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def statistics_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold the exclusive lock of a reference-statistics folder: `flock` on the folder itself (no lock file
    to leave behind), released when the block ends or the process dies. While another process holds it, a
    stop request (`suite.stopping`) ends the wait with `Interrupted`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                check("while waiting for another process's FID reference statistics")
                time.sleep(0.2)
        yield
    finally:
        os.close(handle)


class FrechetDistance:
    """Fréchet distance of generated images to a reference set, from torch-fidelity features and statistics.

    `weights_path` is resolved with `resolve_inception_weights` for `inception-v3-compat` (offline fallback
    included) and read here with `load_inception_weights` (ValueError naming the file if it is not a plain
    tensor archive of the Inception-v3 weights); any other extractor's are read by `load_extractor_weights`.
    `cuda` defaults to `torch.cuda.is_available()`; `cache_dir` (the suite's cache, which holds the reference
    statistics) defaults to `suite.paths.cache_dir()`.
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
        self.layer: str = resolve_feature_layer_for_metric("fid", feature_extractor=feature_extractor)
        self.batch_size = int(batch_size)
        self.cuda = torch.cuda.is_available() if cuda is None else bool(cuda)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else paths.cache_dir()
        self._weights_archive: bytes | None = None  # what the extractor reads: tensors the suite wrote
        if feature_extractor == INCEPTION_EXTRACTOR:
            self.weights_path: Path | None = resolve_inception_weights(weights_path, cache_dir=self.cache_dir)
            weights = load_inception_weights(self.weights_path)
            self._weights_archive = inception_weights_archive(weights).getvalue()
            self.weights_key = weights_digest(weights)[:16]
        else:
            self.weights_path = Path(weights_path) if weights_path is not None else None
            state = load_extractor_weights(feature_extractor, weights_path)
            self.weights_key = "own-weights" if state is None else weights_digest(state)[:16]
            if state is not None:
                self._weights_archive = weights_archive(state)

    @property
    def metric_name(self) -> str:
        """`fid` for the Inception-v3 extractor, `fd-<extractor>` for any other."""
        if self.feature_extractor == INCEPTION_EXTRACTOR:
            return "fid"
        return f"fd-{self.feature_extractor}"

    def reference_statistics_path(self, reference: Tensor) -> Path:
        """Where the statistics of `reference` in this extractor, layer and weights are cached."""
        name = f"ref-{reference_key(reference)}-{self.feature_extractor}-{self.layer}-{self.weights_key}.npz"
        return self.cache_dir / "fid-stats" / name

    def _features(self, images: Tensor, what: str) -> Tensor:
        """Features [N, d] of uint8 ``images`` [N, C, H, W] (C in {1, 3}) at this extractor's layer, as
        torch-fidelity's own extraction gives them."""
        weights = None if self._weights_archive is None else io.BytesIO(self._weights_archive)
        kwargs = {
            "input1": ImageTensorDataset(images, what),
            "feature_extractor": self.feature_extractor,
            "feature_extractor_weights_path": weights,
            "batch_size": self.batch_size,
            "cuda": self.cuda,
            "save_cpu_ram": True,
            "verbose": False,
        }
        extractor = create_feature_extractor(self.feature_extractor, [self.layer], **kwargs)
        return extract_featuresdict_from_input_id(1, extractor, **kwargs)[self.layer]

    def statistics(self, images: Tensor) -> tuple[np.ndarray, np.ndarray]:
        """(mu, sigma) of ``images``, computed as the cached reference statistics are (torch-fidelity's
        ``fid_features_to_statistics``); ``suite fid ref`` writes them."""
        stats = fid_features_to_statistics(self._features(images, "reference"))
        return stats["mu"], stats["sigma"]

    def features(self, images: Tensor) -> np.ndarray:
        """float64 features [N, d] of uint8 ``images`` (``suite fid calc`` scores them with
        ``frechet_distance`` against a statistics file)."""
        return self._features(images, "images").to(torch.float64).numpy()

    def __call__(self, generated: Tensor, reference: Tensor) -> float:
        """Distance between `generated` and `reference`, both uint8 [N, C, H, W] with C in {1, 3}.

        The reference statistics are read from `reference_statistics_path(reference)` if it exists (refused
        with a ValueError naming it if it is not a plain `.npz` of `mu` and `sigma`), else computed and
        written there; `generated` is not cached. The data loader runs in-process (`save_cpu_ram=True`):
        the images are already in memory, so worker processes would only add start-up and copying cost.
        """
        weights = None if self._weights_archive is None else io.BytesIO(self._weights_archive)
        kwargs = {
            "input1": ImageTensorDataset(generated, "generated"),
            "input2": ImageTensorDataset(reference, "reference"),
            "fid": True,
            "feature_extractor": self.feature_extractor,
            "feature_extractor_weights_path": weights,
            "batch_size": self.batch_size,
            "cuda": self.cuda,
            "save_cpu_ram": True,
            "verbose": progress_enabled(),  # torch-fidelity's feature bars, where someone watches
        }
        extractor = create_feature_extractor(self.feature_extractor, [self.layer], **kwargs)
        features = extract_featuresdict_from_input_id(1, extractor, **kwargs)[self.layer].to(torch.float64)
        path = self.reference_statistics_path(reference)
        seen = path.exists()
        cached = self.cached_statistics(path, features.shape[1])
        if cached is None:
            with statistics_lock(path.parent):  # runs started together compute them once
                cached = self.cached_statistics(path, features.shape[1], quiet=seen)
                if cached is None:
                    stats = fid_features_to_statistics(
                        extract_featuresdict_from_input_id(2, extractor, **kwargs)[self.layer]
                    )
                    cached = stats["mu"], stats["sigma"]
                    write_reference_statistics(path, *cached, key=path.stem)
        return frechet_distance(features.numpy(), *cached)

    @staticmethod
    def cached_statistics(path: Path, dim: int, quiet: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """(mu, sigma) cached at ``path`` when they are statistics of ``dim`` features
        (:func:`read_reference_statistics`) and prove to be the ones computed for it (their proof's key is
        the file's name, ``suite.cache.proof_problem``); None when absent or not (said on stderr, naming the
        file and the problem, unless ``quiet``: they are then computed again)."""
        if not path.exists():
            return None
        try:
            mu, sigma = read_reference_statistics(path, dim)
            problem = proof_problem(read_statistics_proof(path), path.stem, {"mu": mu, "sigma": sigma})
        except StatisticsRefused as err:
            problem = err.problem
        if problem is None:
            return mu, sigma
        if not quiet:
            recomputing(path, problem)
        return None


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

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """With the standard Inception-v3 and no ``weights_path`` (a set path is the preflight's file
        check): the weights, where none of the places ``resolve_inception_weights`` looks in holds them."""
        if options.get("weights_path") is not None:
            return []
        if options.get("feature_extractor", INCEPTION_EXTRACTOR) != INCEPTION_EXTRACTOR:
            return []
        converted = paths.cache_dir() / CONVERTED_WEIGHTS_NAME
        if hub_weights_path().is_file() or converted.is_file() or find_fid_helper_torchscript():
            return []
        try:
            resolve_inception_weights()
        except FileNotFoundError as err:
            return [str(err)]
        return []

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.distance = FrechetDistance(
            feature_extractor=self.options.get("feature_extractor", INCEPTION_EXTRACTOR),
            weights_path=self.options.get("weights_path"),
            batch_size=int(self.options.get("batch_size", 64)),
            cuda=self.device.type == "cuda",
            cache_dir=self.cache_dir,
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
            best_of_ranges=True,
            scale="log",
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        return {"value": self.distance(inputs.generated, inputs.reference)}
