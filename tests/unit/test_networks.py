"""The U-Net, the EDM preconditioning and the per-sample denoising losses."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from infonoise_modalities.image.networks import UNet
from suite.noise.weighting import EDMWeight
from suite.objectives import GaussianX0Objective
from suite.run.diffusion import EDMDenoiser


def small_unet(resolution: int, label_dim: int = 0, attn: tuple[int, ...] = (14,)) -> UNet:
    torch.manual_seed(0)
    return UNet(resolution, 1, 1, model_channels=16, attn_resolutions=attn, label_dim=label_dim)


@pytest.mark.parametrize(("resolution", "attn"), [(28, (14,)), (32, (16,)), (30, (16,))])
@pytest.mark.parametrize("label_dim", [0, 10])
def test_unet_output_shape(resolution, attn, label_dim):
    net = small_unet(resolution, label_dim, attn).eval()
    x = torch.randn(3, 1, resolution, resolution)
    labels = torch.eye(10)[:3] if label_dim else None
    with torch.no_grad():
        out = net(x, torch.randn(3), labels)
    assert out.shape == x.shape
    assert out.dtype == torch.float32
    assert torch.isfinite(out).all()


def test_class_labels_as_indices_or_one_hot_agree():
    net = small_unet(28, label_dim=10).eval()
    x, noise_labels = torch.randn(2, 1, 28, 28), torch.randn(2)
    with torch.no_grad():
        by_index = net(x, noise_labels, torch.tensor([3, 7]))
        by_one_hot = net(x, noise_labels, torch.eye(10)[[3, 7]])
    torch.testing.assert_close(by_index, by_one_hot)


def test_null_label_zeroes_the_label_embedding():
    net = small_unet(28, label_dim=10).eval()
    noise_labels = torch.randn(2)
    emb_null = net._embedding(noise_labels, torch.zeros(2, 10))
    emb_plain = net.embed_mlp(net.noise_embed(noise_labels))
    torch.testing.assert_close(emb_null, emb_plain)


def test_label_presence_must_match_the_network():
    x, noise_labels = torch.randn(1, 1, 28, 28), torch.randn(1)
    with pytest.raises(ValueError, match="unconditional"):
        small_unet(28)(x, noise_labels, torch.zeros(1, 10))
    with pytest.raises(ValueError, match="class-conditional"):
        small_unet(28, label_dim=10)(x, noise_labels)


def test_attention_resolution_must_occur():
    with pytest.raises(ValueError, match=r"\[16\] do not occur.*\[28, 14, 7\]"):
        UNet(28, 1, 1, model_channels=16, attn_resolutions=(16,))


def test_attention_is_built_where_asked():
    net = small_unet(28, attn=(7,)).eval()
    attention_blocks = [m for m in net.modules() if type(m).__name__ == "SelfAttention"]
    # 2 encoder + 3 decoder blocks at 7×7, plus the middle block.
    assert len(attention_blocks) == 6
    seen = []
    for block in attention_blocks:
        block.register_forward_hook(lambda _m, args, _out: seen.append(tuple(args[0].shape[-2:])))
    with torch.no_grad():
        net(torch.randn(1, 1, 28, 28), torch.zeros(1))
    assert seen == [(7, 7)] * 6  # every attention block runs on the 7×7 feature maps


def test_bf16_autocast_and_channels_last_on_cpu():
    net = small_unet(28, label_dim=10).to(memory_format=torch.channels_last)
    x = torch.randn(2, 1, 28, 28).contiguous(memory_format=torch.channels_last)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x, torch.randn(2), torch.tensor([1, 2]))
    assert out.dtype == torch.bfloat16
    assert out.shape == x.shape
    assert torch.isfinite(out.float()).all()


def test_gradient_reaches_every_parameter():
    net = small_unet(28, label_dim=10)
    x = torch.randn(2, 1, 28, 28, requires_grad=True)
    net(x, torch.randn(2), torch.tensor([0, 9])).square().sum().backward()
    for name, p in net.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name
    assert x.grad.abs().sum() > 0


class Recorder(nn.Module):
    """A raw network that records its inputs and returns a fixed output."""

    def __init__(self, output: float) -> None:
        super().__init__()
        self.output = output

    def forward(self, x, noise_labels, class_labels=None):
        self.x, self.noise_labels, self.class_labels = x, noise_labels, class_labels
        return torch.full_like(x, self.output)


def test_preconditioning_coefficients():
    sigma_data = 0.5
    raw = Recorder(output=0.3)
    denoiser = EDMDenoiser(raw, sigma_data)
    sigma = torch.tensor([0.002, 0.5, 3.0, 80.0])
    x = torch.randn(4, 1, 2, 2)
    labels = torch.eye(10)[:4]
    out = denoiser(x, sigma, class_labels=labels)
    s = sigma.reshape(-1, 1, 1, 1)
    c_skip = sigma_data**2 / (s**2 + sigma_data**2)
    c_out = s * sigma_data / (s**2 + sigma_data**2).sqrt()
    c_in = 1 / (s**2 + sigma_data**2).sqrt()
    torch.testing.assert_close(raw.x, c_in * x)
    torch.testing.assert_close(raw.noise_labels, sigma.log() / 4)
    assert raw.class_labels is labels
    torch.testing.assert_close(out, c_skip * x + c_out * 0.3)


def test_large_sigma_output_is_the_scaled_network_output():
    """For σ ≫ σ_d, c_skip·x = σ_d²x/(σ²+σ_d²) → 0 for x ~ σε and c_out → σ_d, so D ≈ σ_d·F."""
    sigma_data, sigma = 0.5, 1e4
    denoiser = EDMDenoiser(Recorder(output=0.3), sigma_data)
    x = sigma * torch.randn(2, 1, 4, 4)
    out = denoiser(x, torch.tensor(sigma))
    c_skip = sigma_data**2 / (sigma**2 + sigma_data**2)
    torch.testing.assert_close(out, c_skip * x + 0.3 * sigma_data, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out, torch.full_like(x, 0.3 * sigma_data), rtol=0, atol=1e-3)


def test_denoiser_with_unet_under_autocast_returns_float32():
    denoiser = EDMDenoiser(small_unet(28), sigma_data=0.5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = denoiser(torch.randn(2, 1, 28, 28), torch.tensor([0.1, 10.0]))
    assert out.dtype == torch.float32


def test_weighted_loss_is_weight_times_unweighted():
    sigma_data = 0.5
    weight = EDMWeight(sigma_data)
    torch.manual_seed(0)
    net = UNet(8, 1, 1, model_channels=16, channel_mult=(1, 2), attn_resolutions=(4,)).eval()
    denoiser = EDMDenoiser(net, sigma_data)
    generator = torch.Generator().manual_seed(1)
    x0 = torch.rand(4, 1, 8, 8, generator=generator) * 2 - 1
    noise = torch.randn(4, 1, 8, 8, generator=generator)
    sigma = torch.tensor([0.01, 0.3, 2.0, 50.0])
    importance = torch.tensor([1.0, 0.5, 2.0, 1.5])

    weighted, unweighted = GaussianX0Objective(weight).losses(denoiser, x0, sigma, noise, {})
    assert weighted.shape == unweighted.shape == (4,)
    torch.testing.assert_close(weighted, weight(sigma) * unweighted)
    assert weighted.requires_grad and not unweighted.requires_grad

    expected = (denoiser(x0 + sigma.reshape(-1, 1, 1, 1) * noise, sigma) - x0).square().sum(dim=(1, 2, 3))
    torch.testing.assert_close(unweighted, expected)

    weighted_is, unweighted_is = GaussianX0Objective(weight).losses(
        denoiser, x0, sigma, noise, {}, importance
    )
    torch.testing.assert_close(unweighted_is, unweighted)
    torch.testing.assert_close(weighted_is, weight(sigma) * importance * unweighted)


def test_edm_weighted_loss_of_the_identity_network_is_unit_scale():
    """With F = 0, D = c_skip·x; data of scale σ_d then gives an EDM-weighted loss of d (Karras Eq. 8)."""
    sigma_data = 0.5
    denoiser = EDMDenoiser(Recorder(output=0.0), sigma_data)
    generator = torch.Generator().manual_seed(2)
    n, d = 4096, 8
    x0 = sigma_data * torch.randn(n, d, generator=generator)
    noise = torch.randn(n, d, generator=generator)
    sigma = torch.full((n,), 1.7)
    weighted, _ = GaussianX0Objective(EDMWeight(sigma_data)).losses(denoiser, x0, sigma, noise, {})
    # E‖c_skip(x₀+σε) − x₀‖² = d·σ²σ_d²/(σ²+σ_d²) and w = (σ²+σ_d²)/(σσ_d)², so w·E‖·‖² = d.
    assert math.isclose(weighted.mean().item(), d, rel_tol=0.05)
