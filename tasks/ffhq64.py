"""FFHQ at 64×64 (Karras, Laine & Aila 2019, https://github.com/NVlabs/ffhq-dataset): 70 000 face
photographs, trained unconditionally at 64×64 as EDM does.

Read from an EDM-style archive (``infonoise_modalities.image.formats``): ``task.root`` is the zip (PNG images
plus ``dataset.json``) or an image folder; an explicit root that does not exist or holds no images is an error
naming it. ``suite data ffhq64 SOURCE DEST`` makes the zip from the 1024×1024 FFHQ PNGs
(``images1024x1024/``, 89.1 GB) by PIL's antialiasing Lanczos resize, the resize EDM's dataset tool
applies; the 64×64 zip takes about 0.88 GB. FFHQ cannot be downloaded by the suite (its images are
distributed through Google Drive). Without a root, the stand-in permission (``budget.allow_stand_in``; the
smoke budget sets it) builds an EDM zip of random 64×64 crops of real photographs shipped by scikit-image and
scikit-learn, recorded as a stand-in; so is any archive that does not hold 70 000 images.

Network: DDPM++ in EDM's FFHQ-64 configuration (``paper`` preset: channel multipliers 1, 2, 2, 2,
dropout 0.05), with EDM's augmentation (p = 0.15) conditioning it when ``augment_p`` is positive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infonoise_modalities.image.formats import (
    FFHQ_IMAGES,
    FFHQ_URL,
    STANDIN_PHOTOS,
    cached_standin,
    estimate_archive_bytes,
    prepare_resized_archive,
    read_edm_archive,
    write_edm_standin,
)
from infonoise_modalities.image.task import EDMImageTask, Images
from suite.paths import data_dir
from suite.task import TASKS

RESOLUTION = 64
STANDIN_SEED = 20260302
EXAMPLE_SEED = 11
ARCHIVE_NAME = "ffhq-64x64.zip"


@TASKS.register("ffhq64")
class FFHQ64(EDMImageTask):
    """FFHQ 64×64, unconditional, as continuous RGB in [−1, 1]."""

    def load_images(self) -> Images:
        root = self.cfg.get("root")
        if root is not None:
            path = Path(root).expanduser()
            if not path.exists():
                raise FileNotFoundError(
                    f"task.root={root}: {path} does not exist; point it at the 64×64 FFHQ zip made by "
                    f"`suite data ffhq64 <images1024x1024 folder> {path}` or at an image folder"
                )
            images, _ = read_edm_archive(path)
            real = len(images) == FFHQ_IMAGES
            variant = (
                f"FFHQ {RESOLUTION}×{RESOLUTION} ({len(images)} images)"
                if real
                else f"EDM-format image archive, not the full FFHQ ({len(images)} images)"
            )
            return Images(images, None, variant, not real, f"EDM archive {path}")
        if self.allow_stand_in:
            n = int(self.cfg.get("standin_images", 2048))
            path = cached_standin(
                data_dir(),
                "ffhq64",
                n,
                STANDIN_SEED,
                lambda p: write_edm_standin(p, n, RESOLUTION, STANDIN_SEED),
                ARCHIVE_NAME,
            )
            images, _ = read_edm_archive(path)
            variant = (
                f"{n} random {RESOLUTION}×{RESOLUTION} crops of {len(STANDIN_PHOTOS)} photographs "
                "shipped by scikit-image/scikit-learn, written as an EDM zip"
            )
            return Images(images, None, variant, True, str(path))
        need = estimate_archive_bytes(FFHQ_IMAGES, 3, RESOLUTION) / 1e9
        raise FileNotFoundError(
            "FFHQ 64×64 not configured (task.root is null). Fix: download images1024x1024/ (70 000 PNGs, "
            f"89.1 GB) as {FFHQ_URL} describes, run `suite data ffhq64 <images1024x1024> "
            f"<dest>/{ARCHIVE_NAME}` (about {need:.2f} GB) and pass task.root=<dest>/{ARCHIVE_NAME}; or set "
            "budget.allow_stand_in=true for the photo-crop stand-in (recorded as a stand-in)."
        )

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        path = write_edm_standin(Path(folder) / ARCHIVE_NAME, n, RESOLUTION, EXAMPLE_SEED)
        return {"root": str(path)}

    @classmethod
    def prepare(cls, source: str | None, dest: str) -> None:
        """``suite data ffhq64 SOURCE DEST``: the 64×64 EDM zip from the FFHQ 1024×1024 PNG folder."""
        if source is None:
            raise ValueError(
                f"ffhq64 needs a SOURCE: the images1024x1024/ folder of FFHQ ({FFHQ_URL}; 70 000 PNGs, "
                "89.1 GB, downloaded by its download_ffhq.py --images); the suite cannot download it"
            )
        written = prepare_resized_archive(source, dest, RESOLUTION)
        print(f"use task.root={written}")
