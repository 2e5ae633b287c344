"""A transformer denoiser for diffusion in token-embedding space, the raw network of the text task.

Tokens map to learned embeddings normalised to length √D (every coordinate has mean square 1 on average,
so σ_data = 1), as in CDCD (Dieleman et al. 2022, arXiv 2211.15089). The noisy sequence x = x₀ + σε of
L embeddings enters through EDM's preconditioning (Karras et al. 2022, arXiv 2206.00364, Eq. 7):
the network sees c_in·x and c_noise = ¼ ln σ. Its trunk is a bidirectional pre-norm transformer whose
blocks are modulated by the noise level through adaptive LayerNorm with zero-initialised gates (adaLN-Zero,
Peebles & Xie 2023, arXiv 2212.09748); its head gives token logits ℓ ∈ ℝ^{L×V}.

The denoised embedding is the posterior-mean estimate x̂₀ = softmax(ℓ)·Ê under the network's categorical
belief, Ê the normalised embedding table. EDM's wrapper computes D = c_skip·x + c_out·F, so the network
returns F = (x̂₀ − c_skip·x)/c_out, which makes D = x̂₀ (up to float32 rounding): x is recovered as
(c_in·x)/c_in with c_in = 1/√(σ² + σ_d²) and σ = exp(4·c_noise). x̂₀ and F are computed in float32
outside autocast. The logits of the same forward pass are handed to the caller through a ``LogitsSink``
passed as ``logits_out`` (for a cross-entropy term).

Prefix conditioning is in context: the P prefix tokens (clean normalised embeddings through their own input
projection, positions 0..P−1) precede the L noisy positions (P..P+L−1) in the attention; only the noisy
positions are read out. ``prefix_mask`` [N, P] (1 = use) removes masked prefix positions from every
attention key set, so with an all-zero mask — the suite's null condition — the output does not depend on
the prefix at all, exactly (softmax weight exp(−∞) = 0); classifier-free guidance uses that as its
unconditional branch.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from infonoise_modalities.image.networks import PositionalEmbedding


class LogitsSink:
    """Receives the logits of a forward pass (``logits_out=``): a plain object, so wrappers that copy
    lists and tuples of arguments (DistributedDataParallel) pass it through unchanged."""

    def __init__(self) -> None:
        self.logits: Tensor | None = None


def _modulate(x: Tensor, shift: Tensor, scale: Tensor) -> Tensor:
    return x * (1 + scale[:, None]) + shift[:, None]


class TransformerBlock(nn.Module):
    """x + g₁·Attn(LN(x)·(1 + a₁) + b₁), then x + g₂·MLP(LN(x)·(1 + a₂) + b₂); (a, b, g) = Linear(emb)."""

    def __init__(self, width: int, heads: int, emb_channels: int, mlp_ratio: int, dropout: float) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} does not split into {heads} attention heads")
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(width, mlp_ratio * width),
            nn.GELU(approximate="tanh"),
            nn.Dropout(dropout),
            nn.Linear(mlp_ratio * width, width),
        )
        self.dropout = nn.Dropout(dropout)
        self.ada = nn.Linear(emb_channels, 6 * width)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)

    def forward(self, x: Tensor, emb: Tensor, key_mask: Tensor | None) -> Tensor:
        n, length, width = x.shape
        shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(emb).chunk(6, dim=1)
        qkv = self.qkv(_modulate(self.norm1(x), shift1, scale1))
        q, k, v = qkv.reshape(n, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
        x = x + gate1[:, None] * self.dropout(self.proj(attn.transpose(1, 2).reshape(n, length, width)))
        return x + gate2[:, None] * self.dropout(self.mlp(_modulate(self.norm2(x), shift2, scale2)))


class TextTransformer(nn.Module):
    """F(c_in·x, c_noise; prefix, prefix_mask) for x of shape [N, L, D]; see the module docstring.

    ``vocab_size`` is the model's vocabulary (possibly a corpus sub-vocabulary), ``seq_len`` = L,
    ``prefix_len`` = P (0 for unconditional), ``embed_dim`` = D, ``width``/``depth``/``heads`` the trunk.
    """

    channels_last = False
    compilable = True

    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        prefix_len: int,
        embed_dim: int,
        width: int,
        depth: int,
        heads: int,
        mlp_ratio: int = 4,
        dropout: float = 0.0,
        sigma_data: float = 1.0,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("seq_len", seq_len), ("embed_dim", embed_dim)):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if prefix_len < 0:
            raise ValueError(f"prefix_len must be ≥ 0, got {prefix_len}")
        self.vocab_size, self.seq_len, self.prefix_len, self.embed_dim = (
            vocab_size,
            seq_len,
            prefix_len,
            embed_dim,
        )
        self.sigma_data = float(sigma_data)
        emb_channels = width
        self.embedding = nn.Parameter(torch.empty(vocab_size, embed_dim))
        self.map_noise = PositionalEmbedding(width)
        self.map_emb = nn.Sequential(
            nn.Linear(width, emb_channels), nn.SiLU(), nn.Linear(emb_channels, emb_channels)
        )
        self.x_in = nn.Linear(embed_dim, width)
        self.prefix_in = nn.Linear(embed_dim, width) if prefix_len else None
        self.positions = nn.Parameter(torch.randn(prefix_len + seq_len, width) * 0.02)
        self.blocks = nn.ModuleList(
            TransformerBlock(width, heads, emb_channels, mlp_ratio, dropout) for _ in range(depth)
        )
        self.norm_out = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.ada_out = nn.Linear(emb_channels, 2 * width)
        self.head = nn.Linear(width, vocab_size)
        for layer in (self.ada_out, self.head):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        # Drawn after every other layer, so the table does not start on the stream's first normal draws.
        nn.init.normal_(self.embedding)

    def embedding_table(self) -> Tensor:
        """Ê: the embedding rows normalised to length √D, float32 [V, D]."""
        table = self.embedding.float()
        return F.normalize(table, dim=1) * math.sqrt(self.embed_dim)

    def embed(self, ids: Tensor) -> Tensor:
        """Token indices [N, L] → normalised embeddings [N, L, D] (float32)."""
        return F.embedding(ids, self.embedding_table())

    def nearest_tokens(self, x: Tensor) -> Tensor:
        """The token of the nearest normalised embedding at each position of x [N, L, D]: argmax ⟨x, ê_v⟩."""
        return (x.float() @ self.embedding_table().T).argmax(dim=-1)

    def logits(
        self,
        x_in: Tensor,
        noise_labels: Tensor,
        prefix: Tensor | None = None,
        prefix_mask: Tensor | None = None,
    ) -> Tensor:
        """Token logits [N, L, V] of the clean sequence given the preconditioned input c_in·x."""
        n = x_in.shape[0]
        if x_in.shape[1:] != (self.seq_len, self.embed_dim):
            raise ValueError(
                f"expected x of shape [N, {self.seq_len}, {self.embed_dim}], got {tuple(x_in.shape)}"
            )
        emb = self.map_emb(self.map_noise(noise_labels.reshape(-1).broadcast_to(n)))
        h = self.x_in(x_in.to(self.x_in.weight.dtype))
        key_mask = None
        if self.prefix_len:
            if prefix is None or prefix_mask is None:
                raise ValueError(f"this network takes a prefix of {self.prefix_len} tokens and its mask")
            if prefix.shape != (n, self.prefix_len) or prefix_mask.shape != (n, self.prefix_len):
                raise ValueError(
                    f"prefix and prefix_mask must have shape [{n}, {self.prefix_len}], got "
                    f"{tuple(prefix.shape)} and {tuple(prefix_mask.shape)}"
                )
            h = torch.cat([self.prefix_in(self.embed(prefix.long()).to(h.dtype)), h], dim=1)
            keep = torch.cat(
                [prefix_mask > 0, prefix_mask.new_ones(n, self.seq_len, dtype=torch.bool)], dim=1
            )
            key_mask = keep[:, None, None, :]
        elif prefix is not None and prefix.numel():
            raise ValueError("this network is unconditional (prefix_len = 0) but got a prefix")
        h = h + self.positions.to(h.dtype)
        for block in self.blocks:
            h = block(h, emb, key_mask)
        shift, scale = self.ada_out(emb).chunk(2, dim=1)
        return self.head(_modulate(self.norm_out(h[:, self.prefix_len :]), shift, scale))

    def forward(
        self,
        x_in: Tensor,
        noise_labels: Tensor,
        prefix: Tensor | None = None,
        prefix_mask: Tensor | None = None,
        logits_out: LogitsSink | None = None,
    ) -> Tensor:
        """F = (x̂₀ − c_skip·x)/c_out with x̂₀ = softmax(logits)·Ê, so that EDM's D(x; σ) = x̂₀."""
        logits = self.logits(x_in, noise_labels, prefix, prefix_mask)
        if logits_out is not None:
            logits_out.logits = logits
        device_type = x_in.device.type
        exact = (
            torch.autocast(device_type, enabled=False)
            if torch.amp.is_autocast_available(device_type)
            else nullcontext()
        )
        with exact:
            x0_hat = logits.float().softmax(dim=-1) @ self.embedding_table()
            sigma = (4 * noise_labels.float()).exp().reshape(-1, 1, 1)
            sd2 = self.sigma_data**2
            x = x_in.float() * (sigma**2 + sd2).sqrt()
            c_skip = sd2 / (sigma**2 + sd2)
            c_out = sigma * self.sigma_data / (sigma**2 + sd2).sqrt()
            return (x0_hat - c_skip * x) / c_out
