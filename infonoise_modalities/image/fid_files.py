"""What ``suite fid ref|calc`` computes (``infonoise_modalities.image.fid_command``): FID reference statistics
as a file to share, and the FID of a folder of images against such a file, as EDM's ``fid.py ref`` and
``fid.py calc`` do (Karras et al. 2022).

``suite fid ref --data DIR_OR_TASK --dest FILE.npz`` writes the statistics of a set of images in EDM's
reference layout, an ``.npz`` of float64 ``mu`` [d] and ``sigma`` [d, d]
(``infonoise_modalities.image.fid``), so that EDM's published ``cifar10-32x32.npz`` and the suite's files
are interchangeable. DIR is a folder of images (PNG, JPEG, BMP, WebP; searched recursively, read in
sorted path order) or an EDM ``.zip`` archive; TASK is a task name, whose reference split the suite
scores against: the examples ``budget.eval.reference`` of ``--budget`` picks (the ``paper`` budget: the
whole split), decoded as evaluation decodes them.

``suite fid calc --images DIR --ref FILE.npz`` scores the images of DIR (as above; at least 2) against the
statistics of FILE (read with ``numpy.load(allow_pickle=False)``, refused with a message naming the file if
it is not such an archive) and prints the value, the image count and the file. Features come from
torch-fidelity with the feature extractor ``--feature-extractor`` (Inception-v3, ``inception-v3-compat``,
by default: then the value is FID; another extractor gives a Fréchet distance in its features), exactly as
the suite's evaluations compute them, so ``calc`` against the statistics ``ref`` wrote gives the value an
evaluation of the same images against the same references gives.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from infonoise_modalities.image.fid import FrechetDistance

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")


def _decode(name: str, data: bytes) -> np.ndarray:
    """uint8 [C, H, W] of one image file (C = 1 for grayscale, else 3)."""
    import PIL.Image

    try:
        with PIL.Image.open(io.BytesIO(data)) as image:
            image = image.convert("L" if image.mode in ("1", "L", "I;16", "I") else "RGB")
            array = np.asarray(image, dtype=np.uint8)
    except (OSError, ValueError) as err:
        raise ValueError(f"{name}: not a readable image ({type(err).__name__}: {err})") from None
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def read_images(source: str | Path) -> Tensor:
    """uint8 [N, C, H, W] of every image of a folder (recursively) or a zip archive, in sorted name order;
    ValueError naming the source when it holds none or images of different shapes."""
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; give a folder of images or a .zip of them")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        images = [_decode(str(p), p.read_bytes()) for p in files]
    else:
        try:
            with zipfile.ZipFile(path) as archive:
                names = sorted(n for n in archive.namelist() if Path(n).suffix.lower() in IMAGE_SUFFIXES)
                images = [_decode(f"{path}:{n}", archive.read(n)) for n in names]
        except zipfile.BadZipFile as err:
            raise ValueError(f"{path} is neither a folder nor a readable zip archive ({err})") from None
    if not images:
        raise ValueError(f"{path} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    shapes = sorted({image.shape for image in images})
    if len(shapes) > 1:
        raise ValueError(f"{path} holds images of several shapes {shapes[:4]}; FID needs one")
    return torch.from_numpy(np.stack(images))


def task_reference(task: str, budget: str, overrides: list[str]) -> Tensor:
    """The decoded reference images a run of ``task`` at ``budget`` scores against."""
    from suite.config import compose_run
    from suite.run.assembly import build_task
    from suite.run.evaluation import Evaluator
    from suite.run.spec import run_spec

    spec = run_spec(compose_run(task, "edm", budget, overrides))
    built = build_task(spec)
    reference = Evaluator(spec, built, built.load(), torch.device("cpu")).reference()
    if not isinstance(reference, Tensor) or reference.dtype != torch.uint8:
        raise ValueError(f"task {task!r} decodes its references to {type(reference).__name__}, not images")
    return reference


def frechet_distance_of(
    feature_extractor: str, weights: str | None, batch_size: int, device: str
) -> FrechetDistance:
    """The Fréchet distance in ``feature_extractor``'s features (``device``: auto, cpu or cuda)."""
    from infonoise_modalities.image.fid import FrechetDistance

    cuda = {"auto": None, "cpu": False, "cuda": True}[device]
    return FrechetDistance(feature_extractor, weights, batch_size, cuda)


def write_reference(
    data: str, dest: str, distance: FrechetDistance, budget: str, overrides: list[str]
) -> int:
    """``suite fid ref``: write the statistics of ``data`` (a folder, zip or task) to ``dest``."""
    from infonoise_modalities.image.fid import write_reference_statistics
    from suite.config import group_options

    is_task = not Path(data).exists() and data in group_options("task")
    images = task_reference(data, budget, overrides) if is_task else read_images(data)
    mu, sigma = distance.statistics(images)
    write_reference_statistics(dest, mu, sigma)
    print(
        f"wrote {dest}: {distance.metric_name} statistics (mu {mu.shape}, sigma {sigma.shape}) of "
        f"{len(images)} images of {data}"
    )
    return 0


def print_distance(images_source: str, ref: str, distance: FrechetDistance) -> int:
    """``suite fid calc``: print the distance of the images ``images_source`` to the statistics ``ref``."""
    from infonoise_modalities.image.fid import frechet_distance, read_reference_statistics
    from suite.run.evaluation import finite_result

    if not Path(ref).is_file():
        raise FileNotFoundError(f"reference statistics {ref} do not exist; write them with suite fid ref")
    images = read_images(images_source)
    features = distance.features(images)
    try:
        mu, sigma = read_reference_statistics(ref, features.shape[1])
    except ValueError as err:
        raise ValueError(
            f"{err} (suite fid calc needs statistics of the {features.shape[1]}-d features of "
            f"{distance.feature_extractor})"
        ) from None
    value = finite_result({"value": frechet_distance(features, mu, sigma)}, distance.metric_name, 0)["value"]
    print(f"{distance.metric_name} {value:.4f} ({len(images)} images of {images_source} against {ref})")
    return 0
