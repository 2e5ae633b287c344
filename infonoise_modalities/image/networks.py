"""A DDPM++-style U-Net, the raw network F_θ that ``suite.run.diffusion.EDMDenoiser`` preconditions.

The layout follows the DDPM++ family of Song et al. 2021 ("Score-Based Generative Modeling through
Stochastic Differential Equations", arXiv 2011.13456) as used by Karras et al. 2022 ("Elucidating the
Design Space of Diffusion-Based Generative Models", arXiv 2206.00364, Appendix F.2): residual blocks
with GroupNorm, SiLU, dropout and an embedding-driven scale/shift; self-attention at chosen resolutions;
average-pool down-sampling and nearest-neighbour up-sampling inside residual blocks; encoder outputs
concatenated into the decoder; residual sums scaled by 1/√2. Every line is written for this suite.

Inputs whose side is not a multiple of 2^(levels−1) are zero-padded symmetrically up to the next
multiple and the output is cropped back. Fashion-MNIST's 28×28 with the default three levels needs no
padding (28 → 14 → 7), so its attention resolution must be one of 28, 14, 7 (not 16).

Class conditioning takes one-hot rows (float) or integer indices. The label embedding is a bias-free
linear map, so an all-zero row adds nothing: it is the suite's *null label*, used for label dropout in
training and for the unconditional branch of classifier-free guidance (``suite.run.solvers.guided``).
Augmentation labels (``augment_labels``, the 9 parameters of ``augment.AugmentPipe``) enter the
same embedding through another bias-free linear map (Karras et al. 2022, Sec. 5 "non-leaking
augmentation"); None or zeros — no augmentation — add nothing, which is how the network is sampled.

The constructor's defaults are this suite's original layout. ``EDM_DDPMPP`` lists the options that turn
it into DDPM++ as EDM configures it (Karras et al. 2022, Appendix F.2 and Table 7; Song et al. 2021):
the noise embedding's frequencies 10⁴^(−i/(h−1)) with sines first; the embedding added to the
normalised features as a per-channel shift instead of a scale and shift; a 1×1 convolution on the
skip path of resampling blocks; self-attention with one head, and in the decoder only in the last block
of each level; Xavier-uniform initialisation (×1e-5 for the last layer of every residual branch, ×√0.2
for attention's query/key/value projection, zero biases); the one-hot label scaled by √label_dim.
With 128 channels, multipliers (2, 2, 2), 4 blocks per level and attention at 16×16 this is EDM's
CIFAR-10 network (55.7M parameters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_SKIP_SCALE = 1 / math.sqrt(2)
_SMALL_INIT = 1e-5
_MAX_POSITIONS = 10_000
_ATTENTION_QKV_GAIN = math.sqrt(0.2)

EDM_DDPMPP: dict[str, object] = {
    "noise_embedding": "ddpmpp",
    "modulation": "shift",
    "resample_skip": "conv",
    "attention_heads": 1,
    "decoder_attention": "last",
    "init": "xavier",
}
"""Constructor options that make ``UNet`` the DDPM++ network of EDM (sizes are given separately)."""

NOISE_EMBEDDINGS = ("suite", "ddpmpp")
MODULATIONS = ("scale_shift", "shift")
RESAMPLE_SKIPS = ("identity", "conv")
DECODER_ATTENTION = ("all", "last")
INITS = ("torch", "xavier")


def _check_choice(name: str, value: str, valid: Sequence[str]) -> None:
    if value not in valid:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, valid))}; got {value!r}")


def count_parameters(module: nn.Module) -> int:
    """The number of scalar parameters of ``module``."""
    return sum(p.numel() for p in module.parameters())


def _group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with the largest group count g ≤ min(32, channels/4) that divides ``channels``."""
    groups = max(1, min(32, channels // 4))
    while channels % groups:
        groups -= 1
    return nn.GroupNorm(groups, channels, eps=1e-6)


def _small_init_(layer: nn.Conv2d | nn.Linear) -> None:
    """Scale the default weights by 1e-5 and zero the bias, so a residual branch starts near zero."""
    with torch.no_grad():
        layer.weight.mul_(_SMALL_INIT)
        if layer.bias is not None:
            layer.bias.zero_()


class PositionalEmbedding(nn.Module):
    """Sinusoidal embedding of a scalar t: [cos(t·f_0..f_{h−1}), sin(t·f_0..f_{h−1})], f_i = 10⁴^(−i/h).

    h = channels/2 (Vaswani et al. 2017, as in DDPM++). With ``endpoint`` the frequencies are
    f_i = 10⁴^(−i/(h−1)), so the last is exactly 10⁻⁴, and the sines come first (DDPM++ as EDM writes
    it). The embedding is computed in float32.
    """

    def __init__(self, channels: int, endpoint: bool = False) -> None:
        super().__init__()
        if channels % 2:
            raise ValueError(f"the positional embedding needs an even channel count, got {channels}")
        half = channels // 2
        self.endpoint = endpoint
        denominator = max(half - 1, 1) if endpoint else half
        freqs = _MAX_POSITIONS ** (-torch.arange(half, dtype=torch.float32) / denominator)
        self.register_buffer("freqs", freqs, persistent=False)

    def forward(self, t: Tensor) -> Tensor:
        angles = t.to(torch.float32).outer(self.freqs)
        if self.endpoint:
            return torch.cat([angles.sin(), angles.cos()], dim=1)
        return torch.cat([angles.cos(), angles.sin()], dim=1)


class SelfAttention(nn.Module):
    """x + proj(softmax(QKᵀ/√d)·V) over the H·W positions, scaled by 1/√2.

    ``heads`` defaults to one head per 64 channels.
    """

    def __init__(self, channels: int, heads: int | None = None) -> None:
        super().__init__()
        self.heads = max(1, channels // 64) if heads is None else int(heads)
        if self.heads < 1:
            raise ValueError(f"attention needs at least one head, got {heads}")
        if channels % self.heads:
            raise ValueError(f"{channels} channels do not split into {self.heads} attention heads")
        self.norm = _group_norm(channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, kernel_size=1)
        self.proj = nn.Conv2d(channels, channels, kernel_size=1)
        _small_init_(self.proj)

    def forward(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        qkv = self.qkv(self.norm(x)).reshape(n, 3, self.heads, c // self.heads, h * w)
        q, k, v = qkv.permute(1, 0, 2, 4, 3).unbind(0)  # each [n, heads, h·w, c/heads]
        out = F.scaled_dot_product_attention(q, k, v)
        out = out.transpose(2, 3).reshape(n, c, h, w)
        return (x + self.proj(out)) * _SKIP_SCALE


class ResBlock(nn.Module):
    """A residual block with embedding-modulated normalisation, optional resampling and attention.

    h = conv₀(resample(SiLU(GN₀(x)))),
    h = conv₁(dropout(SiLU(GN₁(h)·(1 + a) + b))) with (a, b) = Linear(emb)   (``modulation="scale_shift"``)
    h = conv₁(dropout(SiLU(GN₁(h + b))))            with b = Linear(emb)         (``modulation="shift"``),
    out = (h + skip(resample(x)))/√2, then out = SelfAttention(out) where ``attention`` is set.
    ``resample`` is "none", "down" (2×2 average pooling) or "up" (2× nearest neighbour); skip is a 1×1
    convolution when the channel count changes, or when the block resamples and ``resample_skip`` is
    "conv", and the identity otherwise.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        emb_channels: int,
        dropout: float,
        resample: str = "none",
        attention: bool = False,
        modulation: str = "scale_shift",
        resample_skip: str = "identity",
        attention_heads: int | None = None,
    ) -> None:
        super().__init__()
        if resample not in ("none", "down", "up"):
            raise ValueError(f"resample must be 'none', 'down' or 'up', got {resample!r}")
        _check_choice("modulation", modulation, MODULATIONS)
        _check_choice("resample_skip", resample_skip, RESAMPLE_SKIPS)
        self.resample = resample
        self.modulation = modulation
        self.norm0 = _group_norm(in_channels)
        self.conv0 = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.affine = nn.Linear(emb_channels, (2 if modulation == "scale_shift" else 1) * out_channels)
        self.norm1 = _group_norm(out_channels)
        self.dropout = nn.Dropout(dropout)
        self.conv1 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1)
        _small_init_(self.conv1)
        project = in_channels != out_channels or (resample != "none" and resample_skip == "conv")
        self.skip = nn.Conv2d(in_channels, out_channels, kernel_size=1) if project else nn.Identity()
        self.attention = SelfAttention(out_channels, attention_heads) if attention else nn.Identity()

    def _resample(self, x: Tensor) -> Tensor:
        if self.resample == "down":
            return F.avg_pool2d(x, kernel_size=2)
        if self.resample == "up":
            return F.interpolate(x, scale_factor=2.0, mode="nearest")
        return x

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        h = self.conv0(self._resample(F.silu(self.norm0(x))))
        if self.modulation == "shift":
            h = F.silu(self.norm1(h + self.affine(emb)[:, :, None, None]))
        else:
            scale, shift = self.affine(emb)[:, :, None, None].chunk(2, dim=1)
            h = F.silu(torch.addcmul(shift, self.norm1(h), scale + 1))
        h = self.conv1(self.dropout(h))
        out = (h + self.skip(self._resample(x))) * _SKIP_SCALE
        return self.attention(out)


class UNet(nn.Module):
    """DDPM++-style U-Net F(x, noise_label, class_label, augment_label) → ``out_channels`` channels.

    Levels ℓ = 0..L−1 (L = len(channel_mult)) run at resolution r/2^ℓ with model_channels·channel_mult[ℓ]
    channels, where r is ``img_resolution`` padded up to a multiple of 2^(L−1). The encoder has a 3×3
    input convolution, then per level a down-sampling block (ℓ > 0) and ``num_blocks`` blocks; the middle
    has a block with attention and one without; the decoder has per level ``num_blocks + 1`` blocks, each
    fed the concatenation of its input and the matching encoder output, then an up-sampling block
    (ℓ > 0); the output is GroupNorm → SiLU → 3×3 convolution with weights scaled by 1e-5.
    Blocks at the resolutions in ``attn_resolutions`` (of the padded input) add self-attention; in the
    decoder every block at such a resolution (``decoder_attention="all"``) or only the last block of
    the level (``"last"``).

    Embedding: the noise label's positional embedding (model_channels wide), plus, for
    ``label_dim`` > 0, a bias-free linear map of the one-hot class label, plus, for ``augment_dim`` > 0,
    a bias-free linear map of the augmentation labels, goes through Linear → SiLU → Linear → SiLU to
    model_channels·embedding_dim_mult channels.

    Layout options (module docstring; ``EDM_DDPMPP`` sets all of them): ``noise_embedding``
    ("suite" | "ddpmpp"), ``modulation`` ("scale_shift" | "shift"), ``resample_skip``
    ("identity" | "conv"), ``attention_heads`` (None: one per 64 channels), ``decoder_attention``
    ("all" | "last"), ``init`` ("torch": PyTorch's defaults with the last layer of each residual branch
    scaled by 1e-5 | "xavier": EDM's).
    """

    channels_last: ClassVar[bool] = True
    compilable: ClassVar[bool] = True

    def __init__(
        self,
        img_resolution: int,
        in_channels: int,
        out_channels: int,
        model_channels: int = 64,
        channel_mult: Sequence[int] = (1, 2, 2),
        num_blocks: int = 2,
        attn_resolutions: Sequence[int] = (16,),
        dropout: float = 0.1,
        label_dim: int = 0,
        embedding_dim_mult: int = 4,
        augment_dim: int = 0,
        noise_embedding: str = "suite",
        modulation: str = "scale_shift",
        resample_skip: str = "identity",
        attention_heads: int | None = None,
        decoder_attention: str = "all",
        init: str = "torch",
    ) -> None:
        super().__init__()
        _check_choice("noise_embedding", noise_embedding, NOISE_EMBEDDINGS)
        _check_choice("decoder_attention", decoder_attention, DECODER_ATTENTION)
        _check_choice("init", init, INITS)
        levels = len(channel_mult)
        if levels < 1 or num_blocks < 1:
            raise ValueError("need at least one level and one block per level")
        multiple = 2 ** (levels - 1)
        padded = math.ceil(img_resolution / multiple) * multiple
        level_res = [padded // 2**level for level in range(levels)]
        missing = sorted(set(attn_resolutions) - set(level_res))
        if missing:
            raise ValueError(
                f"attention resolutions {missing} do not occur; this network runs at resolutions {level_res}"
            )
        self.img_resolution = img_resolution
        self.label_dim = label_dim
        self.augment_dim = augment_dim
        self._label_scale = math.sqrt(label_dim) if noise_embedding == "ddpmpp" and label_dim else 1.0
        self._pad = padded - img_resolution
        emb_channels = model_channels * embedding_dim_mult
        block = {"modulation": modulation, "resample_skip": resample_skip, "attention_heads": attention_heads}

        self.noise_embed = PositionalEmbedding(model_channels, endpoint=noise_embedding == "ddpmpp")
        self.label_embed = nn.Linear(label_dim, model_channels, bias=False) if label_dim else None
        self.embed_mlp = nn.Sequential(
            nn.Linear(model_channels, emb_channels),
            nn.SiLU(),
            nn.Linear(emb_channels, emb_channels),
            nn.SiLU(),
        )
        self.augment_embed = nn.Linear(augment_dim, model_channels, bias=False) if augment_dim else None

        self.conv_in = nn.Conv2d(in_channels, model_channels, kernel_size=3, padding=1)
        self.encoder = nn.ModuleList()
        skip_channels = [model_channels]
        channels = model_channels
        for level, mult in enumerate(channel_mult):
            if level > 0:
                self.encoder.append(
                    ResBlock(channels, channels, emb_channels, dropout, resample="down", **block)
                )
                skip_channels.append(channels)
            for _ in range(num_blocks):
                attention = level_res[level] in attn_resolutions
                self.encoder.append(
                    ResBlock(
                        channels, model_channels * mult, emb_channels, dropout, attention=attention, **block
                    )
                )
                channels = model_channels * mult
                skip_channels.append(channels)

        self.middle = nn.ModuleList(
            [
                ResBlock(channels, channels, emb_channels, dropout, attention=True, **block),
                ResBlock(channels, channels, emb_channels, dropout, **block),
            ]
        )

        self.decoder = nn.ModuleList()
        for level in reversed(range(levels)):
            for index in range(num_blocks + 1):
                attention = level_res[level] in attn_resolutions and (
                    decoder_attention == "all" or index == num_blocks
                )
                block_in = channels + skip_channels.pop()
                channels = model_channels * channel_mult[level]
                self.decoder.append(
                    ResBlock(block_in, channels, emb_channels, dropout, attention=attention, **block)
                )
            if level > 0:
                self.decoder.append(
                    ResBlock(channels, channels, emb_channels, dropout, resample="up", **block)
                )

        self.norm_out = _group_norm(channels)
        self.conv_out = nn.Conv2d(channels, out_channels, kernel_size=3, padding=1)
        _small_init_(self.conv_out)
        if init == "xavier":
            self._xavier_init_()

    def _xavier_init_(self) -> None:
        """EDM's initialisation: Xavier-uniform weights and zero biases for every convolution and linear
        map; the last layer of each residual branch (conv₁, attention's output projection, the output
        convolution) scaled by 1e-5 and attention's query/key/value projection by √0.2."""
        small = {id(m.conv1) for m in self.modules() if isinstance(m, ResBlock)}
        small |= {id(m.proj) for m in self.modules() if isinstance(m, SelfAttention)}
        small.add(id(self.conv_out))
        qkv = {id(m.qkv) for m in self.modules() if isinstance(m, SelfAttention)}
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, (nn.Conv2d, nn.Linear)):
                    nn.init.xavier_uniform_(module.weight)
                    if module.bias is not None:
                        module.bias.zero_()
                    if id(module) in small:
                        module.weight.mul_(_SMALL_INIT)
                    elif id(module) in qkv:
                        module.weight.mul_(_ATTENTION_QKV_GAIN)

    def _embedding(
        self, noise_labels: Tensor, class_labels: Tensor | None, augment_labels: Tensor | None = None
    ) -> Tensor:
        emb = self.noise_embed(noise_labels)
        if self.label_embed is None:
            if class_labels is not None:
                raise ValueError("this network is unconditional (label_dim = 0) but got class labels")
        else:
            if class_labels is None:
                raise ValueError(
                    "this network is class-conditional; pass labels (all-zero rows = null label)"
                )
            if not class_labels.is_floating_point():
                class_labels = F.one_hot(class_labels.long(), self.label_dim)
            labels = class_labels.to(emb.dtype)
            if self._label_scale != 1.0:
                labels = labels * self._label_scale
            emb = emb + self.label_embed(labels)
        if augment_labels is not None:
            if self.augment_embed is None:
                raise ValueError(
                    "this network was built without augmentation conditioning (augment_dim = 0) but got "
                    "augment_labels"
                )
            emb = emb + self.augment_embed(augment_labels.to(emb.dtype))
        return self.embed_mlp(emb)

    def forward(
        self,
        x: Tensor,
        noise_labels: Tensor,
        class_labels: Tensor | None = None,
        augment_labels: Tensor | None = None,
    ) -> Tensor:
        """F(x; noise_labels, class_labels, augment_labels) for x of shape [N, in_channels, R, R].

        R = img_resolution. ``noise_labels`` has shape [N]; ``class_labels`` is [N, label_dim] (one-hot
        or all-zero rows) or [N] integer indices, and None for an unconditional network;
        ``augment_labels`` is [N, augment_dim], or None (no augmentation, as when sampling).
        """
        if x.shape[-2:] != (self.img_resolution, self.img_resolution):
            raise ValueError(
                f"expected {self.img_resolution}×{self.img_resolution} inputs, got {tuple(x.shape)}"
            )
        emb = self._embedding(noise_labels, class_labels, augment_labels)
        before, after = self._pad // 2, self._pad - self._pad // 2
        if self._pad:
            x = F.pad(x, (before, after, before, after))

        h = self.conv_in(x)
        skips = [h]
        for block in self.encoder:
            h = block(h, emb)
            skips.append(h)
        for block in self.middle:
            h = block(h, emb)
        for block in self.decoder:
            if block.resample != "up":
                h = torch.cat([h, skips.pop()], dim=1)
            h = block(h, emb)
        out = self.conv_out(F.silu(self.norm_out(h)))

        if self._pad:
            out = out[..., before : before + self.img_resolution, before : before + self.img_resolution]
        return out
