"""Deterministic samplers of the probability-flow ODE dx/dσ = (x − D(x; σ))/σ.

Karras et al. 2022, "Elucidating the Design Space of Diffusion-Based Generative Models"
(arXiv 2206.00364): the time-step grid of Eq. 5 and the Heun solver of Algorithm 1 (deterministic,
S_churn = 0). The ODE state is kept in float64; the denoiser is called with x and σ cast to the
latents' dtype, and its output is cast back to float64.

A denoiser here is a callable (x, σ) → D(x; σ) with σ of shape [N]. Latents are the state at
sigmas[0], x = σ_max·ε with ε ~ N(0, I) drawn by the caller.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from suite.run.grids import karras_grid

Denoise = Callable[[Tensor, Tensor], Tensor]


def karras_sigmas(steps: int, sigma_min: float, sigma_max: float, rho: float = 7.0) -> Tensor:
    """The EDM grid of Karras et al. 2022, Eq. 5 (``suite.run.grids.karras_grid``): N + 1 float64 values."""
    return karras_grid(steps, sigma_min, sigma_max, rho)


def _check_grid(sigmas: Tensor) -> list[float]:
    levels = sigmas.reshape(-1).tolist()
    if sigmas.shape != (len(levels),) or len(levels) < 2 or levels[-1] != 0 or min(levels[:-1]) <= 0:
        raise ValueError("sigmas must be a 1-D grid of positive levels followed by a final 0")
    return levels


def _slope(denoise: Denoise, x: Tensor, sigma: float, dtype: torch.dtype) -> Tensor:
    """dx/dσ = (x − D(x; σ))/σ in float64."""
    sigma_batch = torch.full(x.shape[:1], sigma, dtype=dtype, device=x.device)
    return (x - denoise(x.to(dtype), sigma_batch).to(torch.float64)) / sigma


def heun_sample(denoise: Denoise, latents: Tensor, sigmas: Tensor) -> Tensor:
    """Heun's 2nd-order method along ``sigmas`` (Karras et al. 2022, Algorithm 1 with S_churn = 0).

    Step σ_i → σ_{i+1}: d_i = (x_i − D(x_i; σ_i))/σ_i, Euler predictor x̃ = x_i + (σ_{i+1} − σ_i)·d_i,
    then, unless σ_{i+1} = 0, the trapezoidal corrector
    x_{i+1} = x_i + (σ_{i+1} − σ_i)·(d_i + (x̃ − D(x̃; σ_{i+1}))/σ_{i+1})/2.
    The final step to σ = 0 stays an Euler step, so N steps cost 2N − 1 denoiser calls.
    Returns x at σ = 0 in the latents' dtype.
    """
    levels = _check_grid(sigmas)
    x = latents.to(torch.float64)
    for sigma, sigma_next in zip(levels[:-1], levels[1:], strict=True):
        d = _slope(denoise, x, sigma, latents.dtype)
        x_next = x + (sigma_next - sigma) * d
        if sigma_next > 0:
            d_next = _slope(denoise, x_next, sigma_next, latents.dtype)
            x_next = x + (sigma_next - sigma) * (d + d_next) / 2
        x = x_next
    return x.to(latents.dtype)


def euler_sample(denoise: Denoise, latents: Tensor, sigmas: Tensor) -> Tensor:
    """Euler's 1st-order method x_{i+1} = x_i + (σ_{i+1} − σ_i)·(x_i − D(x_i; σ_i))/σ_i along ``sigmas``.

    N steps cost N denoiser calls. Returns x at σ = 0 in the latents' dtype.
    """
    levels = _check_grid(sigmas)
    x = latents.to(torch.float64)
    for sigma, sigma_next in zip(levels[:-1], levels[1:], strict=True):
        x = x + (sigma_next - sigma) * _slope(denoise, x, sigma, latents.dtype)
    return x.to(latents.dtype)


SOLVERS: dict[str, Callable[[Denoise, Tensor, Tensor], Tensor]] = {"heun": heun_sample, "euler": euler_sample}


def nfe(solver: str, steps: int) -> int:
    """Denoiser calls per sample of ``solver`` over ``steps`` steps ending at σ = 0: Heun 2N − 1, Euler N."""
    if solver == "heun":
        return 2 * steps - 1
    if solver == "euler":
        return steps
    raise ValueError(f"unknown solver {solver!r}; valid solvers: {', '.join(sorted(SOLVERS))}")


def guided(
    denoiser: Callable[..., Tensor],
    cond: dict[str, Tensor],
    guidance: float,
    null_cond: dict[str, Tensor],
) -> Denoise:
    """Classifier-free guidance D = D_u + s·(D_c − D_u) (Ho & Salimans 2022, arXiv 2207.12598).

    D_c = denoiser(x, σ, **cond) and D_u = denoiser(x, σ, **null_cond) for two conditioning mappings with
    the same keys (the task's condition and its null condition); s = ``guidance``. With s = 1 only the
    conditional pass runs and with s = 0 only the unconditional one, so those two reproduce conditional
    and unconditional sampling exactly; otherwise both passes run as one batch of 2N. An empty mapping
    (an unconditional task) needs no guidance.
    """
    if set(cond) != set(null_cond):
        raise ValueError(f"condition keys {sorted(cond)} differ from null-condition keys {sorted(null_cond)}")
    if not cond or guidance == 1:
        return lambda x, sigma: denoiser(x, sigma, **cond)
    if guidance == 0:
        return lambda x, sigma: denoiser(x, sigma, **null_cond)
    both = {key: torch.cat([cond[key], null_cond[key].to(cond[key]).expand_as(cond[key])]) for key in cond}

    def denoise(x: Tensor, sigma: Tensor) -> Tensor:
        d_cond, d_uncond = denoiser(torch.cat([x, x]), torch.cat([sigma, sigma]), **both).chunk(2)
        return d_uncond + guidance * (d_cond - d_uncond)

    return denoise
