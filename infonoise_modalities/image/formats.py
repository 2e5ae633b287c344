"""Readers and writers for the real on-disk formats of CIFAR-10 and EDM-style image archives, and the
stand-in data sets built in those formats from real photographs that scikit-image and scikit-learn ship.

CIFAR-10, python version (Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html):
``cifar-10-python.tar.gz`` (md5 c58f30108f718f92721af3b95e74349a) holds ``cifar-10-batches-py/`` with
``data_batch_1`` … ``data_batch_5`` (training, 10 000 images each), ``test_batch`` and ``batches.meta``.
Each batch is a pickled dict; read with ``encoding="bytes"`` its keys are bytes: ``b"data"`` is a
uint8 array [10000, 3072] of rows R(32×32) G(32×32) B(32×32) in row-major order, ``b"labels"`` a list of
ints 0..9. Pickles can run code when loaded, so they are read by an unpickler that only admits the
numpy reconstruction functions such a batch needs.

EDM's dataset archives (Karras et al. 2022, ``dataset_tool.py``; facts only): a zip (stored, not
deflated) or a folder of PNGs named ``{i:08d}[:5]/img{i:08d}.png`` for image i, plus ``dataset.json`` =
``{"labels": [[name, label], ...]}`` or ``{"labels": null}``. Images are read in sorted name order, as EDM
does. FFHQ 64×64 is made from the 1024×1024 FFHQ PNGs by PIL's Lanczos resize, which widens the
kernel by the reduction factor and so antialiases (EDM's ``--resolution=64x64`` without a crop).

Stand-ins: random square crops (side uniform between the target size and half the photo's shorter
side), Lanczos-resized, of the ten colour photographs in ``STANDIN_PHOTOS``; the label of a crop is the
index of its photo, so class-conditional code paths see ten real classes. They are written in the real
formats above and read back through the real readers.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import pickle
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

CIFAR_TARBALL = "cifar-10-python.tar.gz"
CIFAR_FOLDER = "cifar-10-batches-py"
CIFAR_TARBALL_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"

FFHQ_IMAGES = 70_000
FFHQ_1024_BYTES = 89.1e9  # images1024x1024, from the FFHQ README (NVlabs/ffhq-dataset)
FFHQ_URL = "https://github.com/NVlabs/ffhq-dataset"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
PNG_OVERHEAD_BYTES = 220  # PNG chunks and zlib framing, zip local and central headers with the name

STANDIN_PHOTOS = (
    "skimage:astronaut",
    "skimage:chelsea",
    "skimage:coffee",
    "skimage:rocket",
    "skimage:hubble_deep_field",
    "skimage:immunohistochemistry",
    "skimage:retina",
    "skimage:stereo_motorcycle",
    "sklearn:china.jpg",
    "sklearn:flower.jpg",
)

_PICKLE_ALLOWED = {
    ("_codecs", "encode"),
    ("__builtin__", "bytes"),
    ("builtins", "bytes"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}


class _BatchUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals a CIFAR batch (a dict of numpy arrays) needs."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in _PICKLE_ALLOWED:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR batch")
        if module == "__builtin__":  # Python 2's name, kept by protocol-2 pickles
            module = "builtins"
        if module.startswith("numpy.core"):
            try:  # numpy ≥ 2 moved numpy.core to numpy._core
                return getattr(importlib.import_module("numpy._core" + module[len("numpy.core") :]), name)
            except ImportError:
                pass
        return getattr(importlib.import_module(module), name)


def parse_cifar_batch(raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images [N, 3, 32, 32], int64 labels [N]) from the bytes of one CIFAR python batch.

    ``where`` names the file in error messages.
    """
    try:
        batch = _BatchUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(
            f"{where} is not a readable CIFAR python batch (truncated or corrupt?): {err}"
        ) from err
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise ValueError(f"{where}: a CIFAR batch is a dict with b'data' and b'labels', got {keys}")
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    if labels.size == 0:  # an empty list reads as float64
        labels = labels.astype(np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{where}: b'data' must be uint8 [N, 3072], got {data.dtype} {data.shape}")
    if labels.shape != (data.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"{where}: b'labels' must be {data.shape[0]} integers, got {labels.dtype} {labels.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= len(CIFAR_CLASSES)):
        raise ValueError(f"{where}: labels outside 0..9 (min {labels.min()}, max {labels.max()})")
    return data.reshape(-1, 3, 32, 32).copy(), labels.astype(np.int64)


def _read_batches_from_tar(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    try:
        with tarfile.open(path, "r:*") as tar:
            batches = []
            for name in CIFAR_TRAIN_BATCHES:
                member_name = f"{CIFAR_FOLDER}/{name}"
                try:
                    member = tar.getmember(member_name)
                except KeyError:
                    raise ValueError(
                        f"{path} has no member {member_name}; is it the CIFAR-10 python tarball?"
                    ) from None
                handle = tar.extractfile(member)
                if handle is None:
                    raise ValueError(f"{path}: {member_name} is not a regular file")
                batches.append(parse_cifar_batch(handle.read(), f"{path}:{member_name}"))
    except (tarfile.TarError, EOFError, OSError) as err:
        raise ValueError(f"{path} is not a readable gzipped tarball (truncated or corrupt?): {err}") from err
    return batches


def _read_batches_from_folder(folder: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    batches = []
    for name in CIFAR_TRAIN_BATCHES:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing; a CIFAR-10 python folder holds {', '.join(CIFAR_TRAIN_BATCHES)}"
            )
        batches.append(parse_cifar_batch(path.read_bytes(), str(path)))
    return batches


def find_cifar10(root: str | os.PathLike) -> Path:
    """The CIFAR-10 source under ``root``: the tarball itself, an extracted ``cifar-10-batches-py`` folder,
    or a folder holding either. Raises FileNotFoundError naming ``root`` and what was looked for."""
    root = Path(root).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist")
    if root.is_file():
        return root
    for candidate in (root, root / CIFAR_FOLDER):
        if (candidate / CIFAR_TRAIN_BATCHES[0]).is_file():
            return candidate
    if (root / CIFAR_TARBALL).is_file():
        return root / CIFAR_TARBALL
    raise FileNotFoundError(
        f"no CIFAR-10 python data under {root}: looked for {root}/{CIFAR_TARBALL}, "
        f"{root}/{CIFAR_FOLDER}/data_batch_1 and {root}/data_batch_1"
    )


def cifar10_problem(source: str | os.PathLike) -> str | None:
    """Why the CIFAR-10 python source ``source`` (a tarball or an extracted folder) cannot be read, or None,
    from its names and headers alone: a tarball's member list must hold the five training batches (listing
    a gzipped tarball streams it to its end, which checks its CRC), and each batch file of a folder must
    start with a pickle's protocol marker and end with its STOP opcode (a truncated file does not). The
    batches themselves are parsed only when the run loads them."""
    source = Path(source)
    if source.is_dir():
        for name in CIFAR_TRAIN_BATCHES:
            path = source / name
            if not path.is_file():
                return f"{path} is missing; a CIFAR-10 python folder holds {', '.join(CIFAR_TRAIN_BATCHES)}"
            with open(path, "rb") as handle:
                first = handle.read(1)
                handle.seek(max(path.stat().st_size - 1, 0))
                if first != b"\x80" or handle.read(1) != b".":
                    return f"{path} is not a whole CIFAR python batch (truncated or corrupt?)"
        return None
    try:
        with tarfile.open(source, "r:*") as tar:
            names = set(tar.getnames())
    except (tarfile.TarError, EOFError, OSError) as err:
        return f"{source} is not a readable gzipped tarball (truncated or corrupt?): {err}"
    absent = [name for name in CIFAR_TRAIN_BATCHES if f"{CIFAR_FOLDER}/{name}" not in names]
    if absent:
        return f"{source} has no member {CIFAR_FOLDER}/{absent[0]}; is it the CIFAR-10 python tarball?"
    return None


def read_cifar10(source: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 training images (uint8 [N, 3, 32, 32]) and labels from a tarball or extracted folder."""
    source = Path(source)
    batches = _read_batches_from_folder(source) if source.is_dir() else _read_batches_from_tar(source)
    images = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    return images, labels


def write_cifar10(
    path: str | os.PathLike, images: np.ndarray, labels: np.ndarray, tarball: bool = True
) -> Path:
    """Write images (uint8 [N, 3, 32, 32]) and labels as CIFAR-10's python version.

    The training images are split over ``data_batch_1..5`` in order (N need not be 50 000); the
    tarball (or, with ``tarball=False``, the folder ``path``) also gets ``batches.meta`` and a
    ``test_batch`` holding the first min(N, 100) images, as the real archive has both files.
    """
    images = np.ascontiguousarray(images, dtype=np.uint8)
    labels = np.asarray(labels, dtype=np.int64)
    if images.ndim != 4 or images.shape[1:] != (3, 32, 32) or labels.shape != images.shape[:1]:
        raise ValueError(
            f"expected images [N, 3, 32, 32] and labels [N], got {images.shape} and {labels.shape}"
        )
    members: dict[str, bytes] = {}
    for i, rows in enumerate(np.array_split(np.arange(len(images)), len(CIFAR_TRAIN_BATCHES))):
        members[CIFAR_TRAIN_BATCHES[i]] = _batch_pickle(
            f"training batch {i + 1} of 5", images[rows], labels[rows], start=int(rows[0]) if rows.size else 0
        )
    head = slice(0, min(len(images), 100))
    members["test_batch"] = _batch_pickle("testing batch 1 of 1", images[head], labels[head], start=0)
    members["batches.meta"] = pickle.dumps(
        {
            b"num_cases_per_batch": len(images) // len(CIFAR_TRAIN_BATCHES),
            b"label_names": [c.encode() for c in CIFAR_CLASSES],
            b"num_vis": 3 * 32 * 32,
        },
        protocol=2,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not tarball:
        path.mkdir(parents=True, exist_ok=True)
        for name, raw in members.items():
            (path / name).write_bytes(raw)
        return path
    with tarfile.open(path, "w:gz") as tar:
        for name, raw in members.items():
            info = tarfile.TarInfo(f"{CIFAR_FOLDER}/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


def _batch_pickle(title: str, images: np.ndarray, labels: np.ndarray, start: int) -> bytes:
    names = [f"standin_{start + i:06d}.png".encode() for i in range(len(images))]
    batch = {
        b"batch_label": title.encode(),
        b"labels": [int(v) for v in labels],
        b"data": images.reshape(len(images), 3 * 32 * 32),
        b"filenames": names,
    }
    return pickle.dumps(batch, protocol=2)


def edm_image_name(index: int) -> str:
    """The name EDM's dataset tool gives image ``index`` in an archive: ``00012/img00012345.png``."""
    tag = f"{index:08d}"
    return f"{tag[:5]}/img{tag}.png"


def _png_bytes(image: np.ndarray) -> bytes:
    import PIL.Image

    hwc = image.transpose(1, 2, 0)
    mode = "L" if hwc.shape[2] == 1 else "RGB"
    buffer = io.BytesIO()
    PIL.Image.fromarray(hwc[:, :, 0] if mode == "L" else hwc, mode).save(
        buffer, format="png", compress_level=0, optimize=False
    )
    return buffer.getvalue()


def write_edm_archive(
    path: str | os.PathLike, images: Iterator[np.ndarray] | np.ndarray, labels: Sequence[int] | None
) -> Path:
    """Write uint8 images ([C, H, W] each) as an EDM archive: a stored zip when ``path`` ends in .zip,
    else a folder; ``dataset.json`` holds ``labels`` (None → ``{"labels": null}``). Written to a
    temporary name first and renamed, so a crash leaves no partial archive behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    if path.suffix == ".zip":
        handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(handle)
        try:
            with zipfile.ZipFile(tmp_name, "w", compression=zipfile.ZIP_STORED) as archive:
                for i, image in enumerate(images):
                    names.append(edm_image_name(i))
                    archive.writestr(names[-1], _png_bytes(image))
                archive.writestr("dataset.json", json.dumps(_labels_json(names, labels)))
            os.replace(tmp_name, path)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
        return path
    tmp_dir = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        for i, image in enumerate(images):
            names.append(edm_image_name(i))
            (tmp_dir / names[-1]).parent.mkdir(exist_ok=True)
            (tmp_dir / names[-1]).write_bytes(_png_bytes(image))
        (tmp_dir / "dataset.json").write_text(json.dumps(_labels_json(names, labels)))
        if path.exists():
            raise FileExistsError(f"{path} already exists; remove it or choose another destination")
        os.replace(tmp_dir, path)
    finally:
        if tmp_dir.exists():
            shutil.rmtree(tmp_dir)
    return path


def _labels_json(names: list[str], labels: Sequence[int] | None) -> dict:
    if labels is None:
        return {"labels": None}
    labels = [int(v) for v in labels]
    if len(labels) != len(names):
        raise ValueError(f"{len(labels)} labels for {len(names)} images")
    return {"labels": [[n, v] for n, v in zip(names, labels, strict=True)]}


def read_edm_archive(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray | None]:
    """uint8 images [N, C, H, W] (sorted by name) and int64 labels (or None) from an EDM zip or folder.

    Raises ValueError naming the archive and member for a truncated or corrupt file, images of mixed
    shapes, or ``dataset.json`` labels that miss an image.
    """
    import PIL.Image

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"image archive {path} does not exist")
    if path.is_dir():
        names = sorted(
            p.relative_to(path).as_posix()
            for p in path.rglob("*")
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
        )
        meta_path = path / "dataset.json"
        meta = meta_path.read_bytes() if meta_path.is_file() else None

        def read(name: str) -> bytes:
            return (path / name).read_bytes()

        return _decode_archive(str(path), names, meta, read, PIL.Image)
    try:
        with zipfile.ZipFile(path) as archive:
            names = sorted(n for n in archive.namelist() if Path(n).suffix.lower() in IMAGE_SUFFIXES)
            meta = archive.read("dataset.json") if "dataset.json" in archive.namelist() else None
            return _decode_archive(str(path), names, meta, archive.read, PIL.Image)
    except (zipfile.BadZipFile, EOFError) as err:
        raise ValueError(f"{path} is not a readable zip archive (truncated or corrupt?): {err}") from err


def _decode_archive(
    where: str, names: list[str], meta: bytes | None, read: Callable[[str], bytes], pil: object
) -> tuple[np.ndarray, np.ndarray | None]:
    if not names:
        raise ValueError(f"{where} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    images = None
    for i, name in enumerate(names):
        try:
            with pil.open(io.BytesIO(read(name))) as image:  # type: ignore[attr-defined]
                array = np.asarray(image)
        except (OSError, ValueError, SyntaxError, zipfile.BadZipFile, EOFError) as err:
            raise ValueError(
                f"{where}: image {name} cannot be decoded (truncated or corrupt?): {err}"
            ) from err
        if array.dtype != np.uint8 or array.ndim not in (2, 3):
            raise ValueError(f"{where}: image {name} is {array.dtype} {array.shape}, expected 8-bit L or RGB")
        array = array[:, :, None] if array.ndim == 2 else array
        if images is None:
            images = np.empty((len(names), array.shape[2], *array.shape[:2]), dtype=np.uint8)
        if array.shape != (images.shape[2], images.shape[3], images.shape[1]):
            raise ValueError(
                f"{where}: image {name} has shape {array.shape}, the first has "
                f"{(images.shape[2], images.shape[3], images.shape[1])}"
            )
        images[i] = array.transpose(2, 0, 1)
    return images, _parse_labels(where, names, meta)


def _parse_labels(where: str, names: list[str], meta: bytes | None) -> np.ndarray | None:
    if meta is None:
        return None
    try:
        entries = json.loads(meta)["labels"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise ValueError(
            f'{where}/dataset.json is not {{"labels": [[name, label], ...] | null}}: {err}'
        ) from err
    if entries is None:
        return None
    table = {}
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], int)):
            raise ValueError(f"{where}/dataset.json: label entries are [name, integer], got {entry!r}")
        table[entry[0]] = entry[1]
    missing = [n for n in names if n not in table]
    if missing:
        raise ValueError(f"{where}/dataset.json has no label for {len(missing)} images, e.g. {missing[0]}")
    return np.array([table[n] for n in names], dtype=np.int64)


def resize_lanczos(image: np.ndarray, size: int) -> np.ndarray:
    """An HWC uint8 image resized to size×size by PIL's (antialiasing) Lanczos filter."""
    import PIL.Image

    if image.shape[0] == size and image.shape[1] == size:
        return image
    resized = PIL.Image.fromarray(image).resize((size, size), PIL.Image.Resampling.LANCZOS)
    return np.asarray(resized)


def _load_and_resize(job: tuple[str, int]) -> np.ndarray:
    import PIL.Image

    path, size = job
    try:
        with PIL.Image.open(path) as image:
            array = np.asarray(image.convert("RGB"))
    except (OSError, ValueError, SyntaxError) as err:
        raise ValueError(f"{path} cannot be decoded (truncated or corrupt?): {err}") from err
    if array.shape[0] != array.shape[1]:
        raise ValueError(f"{path} is {array.shape[1]}×{array.shape[0]}; FFHQ images are square")
    return resize_lanczos(array, size).transpose(2, 0, 1)


def estimate_archive_bytes(count: int, channels: int, size: int) -> int:
    """Bytes of an EDM zip of ``count`` stored-PNG images: pixels, one filter byte per row, overhead."""
    return count * (channels * size * size + size + PNG_OVERHEAD_BYTES)


def prepare_resized_archive(
    source: str | os.PathLike, dest: str | os.PathLike, size: int, workers: int | None = None
) -> Path:
    """Resize every image under the folder ``source`` (recursively, sorted) to size×size with PIL's
    Lanczos filter and write an unlabelled EDM zip at ``dest``; prints the disk space it needs and
    refuses to start when ``dest``'s file system has less free space."""
    source, dest = Path(source).expanduser(), Path(dest).expanduser()
    if not source.is_dir():
        raise FileNotFoundError(f"source folder {source} does not exist")
    if dest.suffix != ".zip":
        dest = dest / f"ffhq-{size}x{size}.zip"
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {source}")
    need = estimate_archive_bytes(len(files), 3, size)
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    print(
        f"{len(files)} images from {source} → {dest}: needs about {need / 1e9:.2f} GB "
        f"({free / 1e9:.1f} GB free)"
    )
    if free < need * 1.05:
        raise OSError(
            f"{dest.parent} has {free / 1e9:.2f} GB free; the archive needs about {need / 1e9:.2f} GB"
        )
    workers = max(1, workers or os.cpu_count() or 1)
    jobs = [(str(p), size) for p in files]
    if workers == 1:
        write_edm_archive(dest, map(_load_and_resize, jobs), None)
    else:
        with ProcessPoolExecutor(workers) as pool:
            write_edm_archive(dest, pool.map(_load_and_resize, jobs, chunksize=64), None)
    return dest


def standin_photos() -> list[np.ndarray]:
    """The ten colour photographs of ``STANDIN_PHOTOS`` as HWC uint8 arrays (offline: shipped files)."""
    import skimage.data
    from sklearn.datasets import load_sample_image

    photos = []
    for spec in STANDIN_PHOTOS:
        package, name = spec.split(":")
        if package == "sklearn":
            photo = load_sample_image(name)
        else:
            photo = getattr(skimage.data, name)()
            photo = photo[0] if isinstance(photo, tuple) else photo
        photos.append(np.ascontiguousarray(photo[:, :, :3], dtype=np.uint8))
    return photos


def standin_crops(n: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n random crops (uint8 [n, 3, size, size]) of the stand-in photos and their photo indices.

    Labels cycle through the photos (balanced classes); the crop side is uniform in
    [size, min(H, W)/2] and its position uniform over the photo.
    """
    rng = np.random.default_rng(seed)
    photos = standin_photos()
    labels = np.arange(n, dtype=np.int64) % len(photos)
    images = np.empty((n, 3, size, size), dtype=np.uint8)
    for i, label in enumerate(labels):
        photo = photos[label]
        h, w = photo.shape[:2]
        side = int(rng.integers(size, max(size, min(h, w) // 2) + 1))
        top, left = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
        images[i] = resize_lanczos(photo[top : top + side, left : left + side], size).transpose(2, 0, 1)
    return images, labels


def cached_standin(
    cache_dir: Path, kind: str, n: int, seed: int, build: Callable[[Path], Path], filename: str
) -> Path:
    """``cache_dir/standin/<kind>-n<n>-seed<seed>/<filename>``, built by ``build(path)`` when absent."""
    target = cache_dir / "standin" / f"{kind}-n{n}-seed{seed}" / filename
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp{target.suffix}")
        try:
            build(tmp)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
    return target


def write_cifar10_standin(path: Path, n: int, seed: int) -> Path:
    """A CIFAR-10 python tarball of n stand-in crops (32×32, labels = photo index)."""
    images, labels = standin_crops(n, 32, seed)
    return write_cifar10(path, images, labels)


def write_edm_standin(path: Path, n: int, size: int, seed: int) -> Path:
    """An EDM zip of n stand-in crops (size×size) with their photo indices as dataset.json labels."""
    images, labels = standin_crops(n, size, seed)
    return write_edm_archive(path, images, labels.tolist())
