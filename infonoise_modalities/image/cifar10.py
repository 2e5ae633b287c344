"""CIFAR-10 (Krizhevsky 2009) for the image tasks: 50 000 training images, 32×32 RGB, 10 classes.

The images are read from the official python version (``cifar-10-python.tar.gz`` or its extracted
``cifar-10-batches-py/`` folder, ``infonoise_modalities.image.formats``), looked for in this order:
``task.root`` (the tarball, the extracted folder, or a folder holding either; an explicit root that holds none
is an error naming it), torchvision's download folder in the data cache (``$SUITE_DATA``), and torchvision's
checksummed download when ``task.download`` is true. Without any of them the stand-in permission
(``budget.allow_stand_in``; the smoke budget sets it) builds a stand-in in the same format from random crops
of real photographs shipped by scikit-image and scikit-learn, recorded as a stand-in. Data whose five batch
files do not carry the official checksums (``torchvision.datasets.CIFAR10.train_list``) is recorded as a
stand-in too. :class:`CIFAR10Task` is the task base that reads them; the task plugins ``cifar10``,
``cifar10_cond`` and ``dcifar`` register its variants.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infonoise_modalities.image.formats import (
    CIFAR_FOLDER,
    CIFAR_TARBALL,
    CIFAR_TARBALL_MD5,
    CIFAR_TRAIN_BATCHES,
    CIFAR_URL,
    STANDIN_PHOTOS,
    cached_standin,
    cifar10_problem,
    find_cifar10,
    read_cifar10,
    standin_crops,
    write_cifar10,
    write_cifar10_standin,
)
from infonoise_modalities.image.task import EDMImageTask, Images
from suite.digest import file_digest
from suite.paths import data_dir

CIFAR_TRAIN_IMAGES = 50_000
STANDIN_SEED = 20260301
EXAMPLE_SEED = 7


def _official_batch_md5() -> dict[str, str]:
    """torchvision's md5 of each official training batch file."""
    import torchvision

    return dict(torchvision.datasets.CIFAR10.train_list)


def is_official_cifar10(source: Path) -> bool:
    """Whether ``source`` (tarball or extracted folder) carries the official release's checksums."""
    if source.is_file():
        return file_digest(source, "md5") == CIFAR_TARBALL_MD5
    official = _official_batch_md5()
    return all(file_digest(source / name, "md5") == official[name] for name in CIFAR_TRAIN_BATCHES)


def read_cifar10_images(source: Path, what: str = "CIFAR-10 train") -> Images:
    """Images read from a CIFAR-10 python source; a stand-in unless its checksums are the official ones."""
    images, labels = read_cifar10(source)
    official = len(images) == CIFAR_TRAIN_IMAGES and is_official_cifar10(source)
    variant = (
        f"{what} ({len(images)} images, official checksums)"
        if official
        else f"CIFAR-10-format data, not the official release ({len(images)} images)"
    )
    return Images(images, labels, variant, not official, f"CIFAR-10 python batches in {source}")


def load_cifar10_images(cfg: Mapping[str, Any], allow_stand_in: bool) -> Images:
    """CIFAR-10 training images as ``cfg`` says (``root``, ``download``, ``standin_images``), the
    photo-crop stand-in only when ``allow_stand_in``."""
    root = cfg.get("root")
    if root is not None:
        return read_cifar10_images(find_root(root))
    cache = data_dir()
    if (cache / CIFAR_FOLDER / CIFAR_TRAIN_BATCHES[0]).is_file():
        return read_cifar10_images(cache / CIFAR_FOLDER)
    if cfg.get("download"):
        import torchvision

        try:
            cache.mkdir(parents=True, exist_ok=True)
            torchvision.datasets.CIFAR10(root=str(cache), train=True, download=True)
        except (OSError, RuntimeError) as err:  # no network: fall through to the stand-in or the error
            print(f"CIFAR-10 download failed: {err}")
        else:
            return read_cifar10_images(cache / CIFAR_FOLDER)
    if allow_stand_in:
        n = int(cfg.get("standin_images", 5000))
        path = cached_standin(
            cache,
            "cifar10",
            n,
            STANDIN_SEED,
            lambda p: write_cifar10_standin(p, n, STANDIN_SEED),
            CIFAR_TARBALL,
        )
        images, labels = read_cifar10(path)
        variant = (
            f"{n} random 32×32 crops of {len(STANDIN_PHOTOS)} photographs shipped by scikit-image/"
            "scikit-learn (label = photograph), written as CIFAR-10 python batches"
        )
        return Images(images, labels, variant, True, str(path))
    raise not_found_error(cache)


def find_root(root: str) -> Path:
    """The CIFAR-10 source under an explicit ``task.root``; an error naming it when it holds none."""
    try:
        return find_cifar10(root)
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"task.root={root}: {err}; point task.root at {CIFAR_TARBALL} ({CIFAR_URL}) or the folder "
            f"{CIFAR_FOLDER}/ extracted from it, or drop task.root to use the default locations"
        ) from None


def not_found_error(cache: Path) -> FileNotFoundError:
    """The error when CIFAR-10 is neither configured, nor in the data cache, nor downloaded, nor allowed to
    stand in."""
    return FileNotFoundError(
        f"CIFAR-10 not found (no task.root; nothing in {cache / CIFAR_FOLDER}). Fix: download "
        f"{CIFAR_URL} (163 MB, md5 {CIFAR_TARBALL_MD5}) and pass task.root=<the tarball or its folder>, "
        "run `suite data cifar10 DEST` on a machine with internet, set task.download=true, or "
        "budget.allow_stand_in=true for the photo-crop stand-in (recorded as a stand-in)."
    )


def cifar10_problems(cfg: Mapping[str, Any], allow_stand_in: bool) -> list[str]:
    """Why :func:`load_cifar10_images` would fail, from names and headers (``Task.data_problems``)."""
    root = cfg.get("root")
    if root is not None:
        try:
            source = find_root(root)
        except FileNotFoundError as err:
            return [str(err)]
        return [problem] if (problem := cifar10_problem(source)) else []
    cache = data_dir()
    if (cache / CIFAR_FOLDER / CIFAR_TRAIN_BATCHES[0]).is_file():
        return [problem] if (problem := cifar10_problem(cache / CIFAR_FOLDER)) else []
    return [] if cfg.get("download") or allow_stand_in else [str(not_found_error(cache))]


def prepare_cifar10(source: str | None, dest: str) -> None:
    """``suite data cifar10 [SOURCE] DEST``: torchvision's checksummed download into DEST, or a copy of a
    local tarball/folder after it parses. Needs 163 MB for the tarball (plus 178 MB when extracted)."""
    target = Path(dest).expanduser()
    target.mkdir(parents=True, exist_ok=True)
    if source is None:
        import torchvision

        print(f"downloading {CIFAR_URL} into {target} (163 MB, plus 178 MB extracted)")
        torchvision.datasets.CIFAR10(root=str(target), train=True, download=True)
    else:
        found = find_cifar10(source)
        images, _ = read_cifar10(found)
        copy = target / (CIFAR_TARBALL if found.is_file() else CIFAR_FOLDER)
        if found.is_file():
            shutil.copyfile(found, copy)
        else:
            shutil.copytree(found, copy, dirs_exist_ok=True)
        print(f"copied {len(images)} CIFAR-10 images from {found} to {copy}")
    official = is_official_cifar10(find_cifar10(target))
    print(f"{'official checksums' if official else 'NOT the official release'}; use task.root={target}")


class CIFAR10Task(EDMImageTask):
    """CIFAR-10's training images (the official python batches, or the photo-crop stand-in), trained as
    EDM does; the registered tasks (unconditional, class-conditional, analog bits) derive from it."""

    def load_images(self) -> Images:
        return load_cifar10_images(self.cfg, self.allow_stand_in)

    def data_problems(self) -> list[str]:
        return cifar10_problems(self.cfg, self.allow_stand_in)

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        images, labels = standin_crops(n, 32, EXAMPLE_SEED)
        write_cifar10(Path(folder) / CIFAR_TARBALL, images, labels)
        return {"root": str(folder)}

    @classmethod
    def prepare(cls, source: str | None, dest: str) -> None:
        prepare_cifar10(source, dest)
