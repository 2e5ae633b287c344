"""A small random-weight conv feature extractor for torch-fidelity, registered as "rand-test".

Test use only: a Fréchet distance in its features is not FID. Its weights are drawn from a fixed-seed
generator (N(0, 1/fan_in), biases zero), so every instance computes the same features. Input is uint8
[B, 3, H, W], scaled to [-1, 1] and resized bilinearly to 32×32; features are the spatial means of two
stride-2 3×3 conv + ReLU layers (32-d).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_fidelity import register_feature_extractor
from torch_fidelity.feature_extractor_base import FeatureExtractorBase
from torch_fidelity.registry import FEATURE_EXTRACTORS_REGISTRY

NAME = "rand-test"
FEATURE = "32"
SEED = 1234
SIZE = 32


class RandomConvExtractor(FeatureExtractorBase):
    """Random-init two-layer conv net with global average pooling; `images_seen` counts forwarded images."""

    images_seen = 0

    def __init__(self, name: str, features_list: list[str], **kwargs: object) -> None:
        # torch-fidelity passes all of calculate_metrics' keyword arguments on; none apply here.
        super().__init__(name, features_list)
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1)
        generator = torch.Generator().manual_seed(SEED)
        with torch.no_grad():
            for conv in (self.conv1, self.conv2):
                fan_in = conv.weight[0].numel()
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator) / fan_in**0.5)
                conv.bias.zero_()
        self.requires_grad_(False)
        self.eval()

    @staticmethod
    def get_provided_features_list() -> tuple[str, ...]:
        return (FEATURE,)

    @staticmethod
    def get_default_feature_layer_for_metric(metric: str) -> str:
        return {"fid": FEATURE, "kid": FEATURE, "prc": FEATURE}[metric]

    @staticmethod
    def can_be_compiled() -> bool:
        return False

    @staticmethod
    def get_dummy_input_for_compile() -> Tensor:
        return torch.zeros(1, 3, SIZE, SIZE, dtype=torch.uint8)

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        if x.dtype != torch.uint8 or x.dim() != 4 or x.shape[1] != 3:
            raise ValueError(f"expected uint8 [B, 3, H, W], got {x.dtype} {tuple(x.shape)}")
        type(self).images_seen += x.shape[0]
        h = x.to(torch.float32) / 127.5 - 1.0
        h = F.interpolate(h, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
        h = F.relu(self.conv2(F.relu(self.conv1(h))))
        return (h.mean(dim=(2, 3)),)


if NAME not in FEATURE_EXTRACTORS_REGISTRY:
    register_feature_extractor(NAME, RandomConvExtractor)
