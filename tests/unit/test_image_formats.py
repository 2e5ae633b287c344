"""CIFAR-10 python batches, EDM image archives, the FFHQ resize and the photo-crop stand-ins."""

from __future__ import annotations

import json
import pickle
import tarfile
import zipfile

import numpy as np
import PIL.Image
import pytest

from infonoise_modalities.image import formats as fmt


def random_images(n: int, size: int, seed: int = 0, channels: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, channels, size, size), dtype=np.uint8)


@pytest.fixture(scope="module")
def cifar_arrays():
    images = random_images(23, 32)
    labels = np.arange(23) % 10
    return images, labels


def test_cifar_tarball_round_trips_through_the_real_layout(tmp_path, cifar_arrays):
    images, labels = cifar_arrays
    path = fmt.write_cifar10(tmp_path / fmt.CIFAR_TARBALL, images, labels)
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        raw = tar.extractfile(f"{fmt.CIFAR_FOLDER}/data_batch_1").read()
    assert {
        f"{fmt.CIFAR_FOLDER}/{n}" for n in (*fmt.CIFAR_TRAIN_BATCHES, "test_batch", "batches.meta")
    } <= names
    batch = pickle.loads(raw, encoding="bytes")
    assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape == (5, 3072)
    assert isinstance(batch[b"labels"], list)
    # Row layout: the first 1024 bytes are the red plane in row-major order.
    np.testing.assert_array_equal(batch[b"data"][0, :1024].reshape(32, 32), images[0, 0])

    read_images, read_labels = fmt.read_cifar10(path)
    np.testing.assert_array_equal(read_images, images)
    np.testing.assert_array_equal(read_labels, labels)


def test_cifar_tarball_with_fewer_images_than_batches_reads_back(tmp_path):
    images = random_images(3, 32)
    path = fmt.write_cifar10(tmp_path / fmt.CIFAR_TARBALL, images, np.array([0, 1, 2]))
    np.testing.assert_array_equal(fmt.read_cifar10(path)[0], images)


def test_cifar_is_found_as_tarball_extracted_folder_or_their_parent(tmp_path, cifar_arrays):
    images, labels = cifar_arrays
    tarball = fmt.write_cifar10(tmp_path / "a" / fmt.CIFAR_TARBALL, images, labels)
    folder = fmt.write_cifar10(tmp_path / "b" / fmt.CIFAR_FOLDER, images, labels, tarball=False)
    assert fmt.find_cifar10(tarball) == tarball
    assert fmt.find_cifar10(tmp_path / "a") == tarball
    assert fmt.find_cifar10(folder) == folder
    assert fmt.find_cifar10(tmp_path / "b") == folder
    np.testing.assert_array_equal(fmt.read_cifar10(folder)[0], images)


def test_missing_cifar_root_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.*does not exist"):
        fmt.find_cifar10(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=r"cifar-10-python\.tar\.gz.*data_batch_1"):
        fmt.find_cifar10(tmp_path)


def test_truncated_cifar_tarball_is_rejected_naming_the_file(tmp_path, cifar_arrays):
    path = fmt.write_cifar10(tmp_path / fmt.CIFAR_TARBALL, *cifar_arrays)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"cifar-10-python\.tar\.gz.*(truncated or corrupt)"):
        fmt.read_cifar10(path)


def test_corrupt_cifar_batch_is_rejected_naming_the_batch(tmp_path, cifar_arrays):
    folder = fmt.write_cifar10(tmp_path / fmt.CIFAR_FOLDER, *cifar_arrays, tarball=False)
    raw = (folder / "data_batch_3").read_bytes()
    (folder / "data_batch_3").write_bytes(raw[: len(raw) - 40])
    with pytest.raises(ValueError, match="data_batch_3 is not a readable CIFAR python batch"):
        fmt.read_cifar10(folder)


def test_cifar_batch_with_a_foreign_global_is_refused_without_running_it(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("this must not run",))

    raw = pickle.dumps({b"data": Payload(), b"labels": []}, protocol=2)
    with pytest.raises(ValueError, match=r"evil_batch.*print is not allowed"):
        fmt.parse_cifar_batch(raw, "evil_batch")


def test_cifar_batch_with_wrong_shapes_is_rejected():
    raw = pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, protocol=2)
    with pytest.raises(ValueError, match=r"b'data' must be uint8 \[N, 3072\]"):
        fmt.parse_cifar_batch(raw, "batch")
    raw = pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 12]}, protocol=2)
    with pytest.raises(ValueError, match=r"labels outside 0\.\.9"):
        fmt.parse_cifar_batch(raw, "batch")


def test_edm_image_names_follow_the_dataset_tool():
    assert fmt.edm_image_name(0) == "00000/img00000000.png"
    assert fmt.edm_image_name(12345) == "00012/img00012345.png"


@pytest.mark.parametrize("suffix", [".zip", ""])
def test_edm_archive_round_trips_with_labels(tmp_path, suffix):
    images = random_images(7, 16, seed=1)
    path = fmt.write_edm_archive(tmp_path / f"data{suffix}", images, [3, 1, 4, 1, 5, 9, 2])
    read_images, labels = fmt.read_edm_archive(path)
    np.testing.assert_array_equal(read_images, images)
    np.testing.assert_array_equal(labels, [3, 1, 4, 1, 5, 9, 2])
    if suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            assert all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
            meta = json.loads(archive.read("dataset.json"))
        assert meta["labels"][1] == ["00000/img00000001.png", 1]


def test_edm_archive_without_labels_reads_none(tmp_path):
    path = fmt.write_edm_archive(tmp_path / "data.zip", random_images(3, 8, channels=1), None)
    images, labels = fmt.read_edm_archive(path)
    assert images.shape == (3, 1, 8, 8) and labels is None
    with zipfile.ZipFile(path) as archive:
        assert json.loads(archive.read("dataset.json")) == {"labels": None}


def test_truncated_edm_zip_is_rejected_naming_the_file(tmp_path):
    path = fmt.write_edm_archive(tmp_path / "data.zip", random_images(5, 16), None)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"data\.zip is not a readable zip archive"):
        fmt.read_edm_archive(path)


def test_corrupt_png_in_an_edm_archive_is_rejected_naming_the_member(tmp_path):
    folder = fmt.write_edm_archive(tmp_path / "data", random_images(3, 16), None)
    member = folder / "00000" / "img00000001.png"
    member.write_bytes(member.read_bytes()[:60])
    with pytest.raises(ValueError, match=r"image 00000/img00000001\.png cannot be decoded"):
        fmt.read_edm_archive(folder)


def test_edm_labels_must_cover_every_image(tmp_path):
    folder = fmt.write_edm_archive(tmp_path / "data", random_images(3, 8), [0, 1, 2])
    (folder / "dataset.json").write_text(json.dumps({"labels": [["00000/img00000000.png", 0]]}))
    with pytest.raises(ValueError, match=r"no label for 2 images, e\.g\. 00000/img00000001\.png"):
        fmt.read_edm_archive(folder)


def test_edm_images_of_mixed_shapes_are_rejected(tmp_path):
    folder = fmt.write_edm_archive(tmp_path / "data", random_images(2, 8), None)
    PIL.Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(folder / "00000" / "img00000002.png")
    with pytest.raises(ValueError, match=r"img00000002\.png has shape \(4, 4, 3\)"):
        fmt.read_edm_archive(folder)


def test_ffhq_style_preparation_is_the_lanczos_resize_of_each_image(tmp_path):
    source = tmp_path / "images1024x1024"
    originals = random_images(3, 128, seed=2)
    for i, image in enumerate(originals):
        (source / f"{i:05d}").mkdir(parents=True)
        PIL.Image.fromarray(image.transpose(1, 2, 0)).save(source / f"{i:05d}" / f"{i:05d}.png")
    dest = fmt.prepare_resized_archive(source, tmp_path / "out" / "small.zip", 16, workers=1)
    images, labels = fmt.read_edm_archive(dest)
    assert labels is None and images.shape == (3, 3, 16, 16)
    for image, original in zip(images, originals, strict=True):
        expected = PIL.Image.fromarray(original.transpose(1, 2, 0)).resize(
            (16, 16), PIL.Image.Resampling.LANCZOS
        )
        np.testing.assert_array_equal(image.transpose(1, 2, 0), np.asarray(expected))


def test_preparation_refuses_a_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.*does not exist"):
        fmt.prepare_resized_archive(tmp_path / "absent", tmp_path / "out.zip", 64)


def test_archive_size_estimate_matches_a_written_archive(tmp_path):
    path = fmt.write_edm_archive(tmp_path / "data.zip", random_images(20, 64), None)
    estimate = fmt.estimate_archive_bytes(20, 3, 64)
    assert abs(path.stat().st_size - estimate) / estimate < 0.02


def test_standin_crops_are_deterministic_balanced_real_photo_crops():
    images, labels = fmt.standin_crops(20, 32, seed=5)
    again, _ = fmt.standin_crops(20, 32, seed=5)
    np.testing.assert_array_equal(images, again)
    assert images.shape == (20, 3, 32, 32) and images.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(labels), [2] * len(fmt.STANDIN_PHOTOS))
    assert images.std() > 20  # photographs, not flat fields


def test_cached_standin_is_built_once(tmp_path):
    calls = []

    def build(path):
        calls.append(path)
        return fmt.write_cifar10_standin(path, 10, seed=1)

    first = fmt.cached_standin(tmp_path, "cifar10", 10, 1, build, fmt.CIFAR_TARBALL)
    second = fmt.cached_standin(tmp_path, "cifar10", 10, 1, build, fmt.CIFAR_TARBALL)
    assert first == second and len(calls) == 1
    assert fmt.read_cifar10(first)[0].shape == (10, 3, 32, 32)
    assert not list(first.parent.glob(".*tmp*"))
