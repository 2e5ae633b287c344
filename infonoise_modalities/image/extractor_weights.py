"""Weights of torch-fidelity's other feature extractors, read by the suite as tensors only.

torch-fidelity reads an extractor's weights itself, in ways that run code from the file: ``vgg16``
through ``torch.load`` with ``weights_only`` off (its own ``feature_extractor_weights_path``, and
torchvision's download into torch.hub's cache through ``load_state_dict_from_url``, whose
``weights_only`` is off too), the
``clip-*`` extractors with ``torch.jit.load`` of a TorchScript archive (from the hub cache or the given
path), and the ``dinov2-*`` extractors with ``torch.hub.load``, which imports the Python code of a GitHub
repository. So the suite reads the weights first and torch-fidelity never sees a file:

* ``vgg16``: the given file, else torchvision's ``VGG16_Weights.IMAGENET1K_V1`` file in torch.hub's cache
  (``vgg16_hub_path``; absent: an error naming the URL and where to put it), read with
  ``torch.load(weights_only=True)`` and checked against torchvision's VGG16 layout (names and shapes, on
  the meta device); the extractor gets those tensors re-serialised in memory.
* an extractor registered by a plugin (``fid_extractor`` in the tests): a given file is read the same way,
  without a layout, and handed over in memory; without one, the plugin builds its own weights.
* ``clip-*`` and ``dinov2-*``: refused, naming the extractor (and the file, when one is given), since no
  tensors-only reading of TorchScript or of a hub repository exists.

A refused file is named in one ValueError line with the object the file would have built.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path

import torch
import torchvision
from torch import Tensor, nn

from infonoise_modalities.image.inception import read_state_dict

VGG16 = "vgg16"
VGG16_URL: str = torchvision.models.VGG16_Weights.IMAGENET1K_V1.url
UNREADABLE = {
    "clip-": "torch-fidelity loads its weights with torch.jit.load (a TorchScript archive can hold code)",
    "dinov2-": "torch-fidelity builds it with torch.hub.load, which imports a repository's Python code",
}


def vgg16_hub_path() -> Path:
    """Where torchvision's download of the VGG16 ImageNet weights lands in torch.hub's cache."""
    return Path(torch.hub.get_dir()) / "checkpoints" / VGG16_URL.rsplit("/", 1)[1]


def refuse_unreadable(feature_extractor: str, weights_path: str | os.PathLike | None) -> None:
    """ValueError for an extractor whose weights the suite cannot read as tensors only."""
    for prefix, why in UNREADABLE.items():
        if feature_extractor.startswith(prefix):
            given = f" (weights {weights_path})" if weights_path is not None else ""
            raise ValueError(
                f"refusing feature extractor {feature_extractor}{given}: {why}, and the suite reads "
                f"weights as tensors only; use inception-v3-compat (FID) or {VGG16}"
            )


def _refusal(path: Path, feature_extractor: str, problem: str) -> ValueError:
    remedy = f"download {VGG16_URL} to {path} again" if feature_extractor == VGG16 else "replace it"
    return ValueError(
        f"refusing {feature_extractor} weights {path}: {problem}. To fix: delete it and {remedy}."
    )


def load_extractor_weights(
    feature_extractor: str, weights_path: str | os.PathLike | None
) -> Mapping[str, Tensor] | None:
    """The tensors of ``feature_extractor``'s weights (module docstring); None for a plugin's extractor
    given no file."""
    refuse_unreadable(feature_extractor, weights_path)
    if weights_path is None and feature_extractor != VGG16:
        return None
    path = Path(weights_path) if weights_path is not None else vgg16_hub_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"no {feature_extractor} weights at {path}; download {VGG16_URL} there"
            if feature_extractor == VGG16
            else f"no {feature_extractor} weights at {path}"
        )
    state = read_state_dict(path, lambda problem: _refusal(path, feature_extractor, problem))
    if feature_extractor == VGG16:
        with torch.device("meta"):
            layout = torchvision.models.vgg16()
        try:
            nn.Module.load_state_dict(layout, state, strict=True, assign=True)
        except RuntimeError as err:
            first = str(err).strip().splitlines()[1:2] or [str(err)]
            raise _refusal(
                path, feature_extractor, f"it does not fit torchvision's VGG16: {first[0].strip()}"
            ) from None
    return state


def weights_archive(state: Mapping[str, Tensor]) -> bytes:
    """``state`` written with ``torch.save`` into memory: what the extractor reads instead of a file."""
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    return buffer.getvalue()
