"""Exact Fréchet distance between two feature sets, in sample space when the features outnumber the samples.

FD(X, Y) = ‖μ₁ − μ₂‖² + tr Σ₁ + tr Σ₂ − 2 tr((Σ₁Σ₂)^½) between the Gaussians fitted to the rows of
X [n₁, d] and Y [n₂, d] (Fréchet 1957; Dowson & Landau 1982; as FID in Heusel et al. 2017, arXiv:1706.08500),
with unbiased covariances Σ₁ = AᵀA, A = (X − μ₁)/√(n₁ − 1), and Σ₂ = BᵀB, B = (Y − μ₂)/√(n₂ − 1).

Sample space. Σ₁Σ₂ = Aᵀ(ABᵀB): its non-zero eigenvalues are those of (ABᵀB)Aᵀ = MMᵀ with M = ABᵀ [n₁, n₂]
(AB and BA share their non-zero spectrum), i.e. the squared singular values of M. Hence

    tr((Σ₁Σ₂)^½) = Σᵢ sᵢ(ABᵀ) = ‖ABᵀ‖_*,   tr Σ₁ = ‖A‖²_F,   tr Σ₂ = ‖B‖²_F,

exact for every d, costing one n₁×d·d×n₂ product and the singular values of an n₁×n₂ matrix; no d×d
matrix is formed. This is what makes a Fréchet distance on Sei's 21,907 outputs from a few thousand
sequences cheap.

Feature space. When d is small against the sample counts, the d×d route is cheaper: with Σ₁^½ from a
symmetric eigendecomposition, tr((Σ₁Σ₂)^½) = Σ √λᵢ(Σ₁^½Σ₂Σ₁^½), a symmetric PSD matrix similar to Σ₁Σ₂.
`frechet_distance` takes whichever route has fewer multiply-adds; both are exact (float64, on the CPU
or, for the paper budget's 10k–50k samples, on the metric's GPU).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import Tensor


def _centred(features: np.ndarray | Tensor, what: str, device: torch.device) -> tuple[Tensor, Tensor]:
    """(mean, centred rows scaled by 1/√(n − 1)) of ``features`` [n, d] as float64 on ``device`` (a copy)."""
    array = torch.as_tensor(features).to(device=device, dtype=torch.float64, copy=True)
    if array.ndim != 2:
        raise ValueError(f"{what}: expected a feature matrix [n, d], got shape {tuple(array.shape)}")
    if array.shape[0] < 2:
        raise ValueError(f"{what}: a covariance needs at least 2 rows, got {array.shape[0]}")
    if not torch.isfinite(array).all():
        raise ValueError(f"{what}: features contain NaN or infinite values")
    mean = array.mean(dim=0)
    array -= mean
    array /= (array.shape[0] - 1) ** 0.5
    return mean, array


def _sqrt_psd(matrix: Tensor) -> Tensor:
    """Symmetric square root of a symmetric PSD matrix (negative round-off eigenvalues clipped to 0)."""
    w, v = torch.linalg.eigh((matrix + matrix.T) / 2)
    return (v * w.clamp(min=0).sqrt()) @ v.T


def sample_space_is_cheaper(n1: int, n2: int, d: int) -> bool:
    """Whether the n₁×n₂ route costs fewer multiply-adds than the d×d route for these sizes."""
    sample = n1 * n2 * d + n1 * n2 * min(n1, n2)
    feature = (n1 + n2) * d * d + 3 * d**3
    return sample <= feature


def trace_sqrt_product(a: Tensor, b: Tensor, sample_space: bool | None = None) -> float:
    """tr((AᵀA·BᵀB)^½) for scaled centred features A [n₁, d], B [n₂, d] (float64 tensors on one device).

    ``sample_space`` None picks the cheaper route (`sample_space_is_cheaper`); True forces the nuclear norm
    of ABᵀ, False the d×d eigendecompositions.
    """
    (n1, d), n2 = a.shape, b.shape[0]
    if sample_space is None:
        sample_space = sample_space_is_cheaper(n1, n2, d)
    if sample_space:
        return float(torch.linalg.svdvals(a @ b.T).sum())
    root = _sqrt_psd(a.T @ a)
    inner = root @ (b.T @ b) @ root
    eig = torch.linalg.eigvalsh((inner + inner.T) / 2)
    return float(eig.clamp(min=0).sqrt().sum())


def frechet_distance(
    x: np.ndarray | Tensor,
    y: np.ndarray | Tensor,
    sample_space: bool | None = None,
    device: torch.device | str = "cpu",
) -> float:
    """Exact Fréchet distance between Gaussians fitted to the rows of ``x`` [n₁, d] and ``y`` [n₂, d].

    Computed in float64 on ``device``. ``sample_space`` as in `trace_sqrt_product`; the default never forms
    a d×d matrix when d exceeds the sample counts.
    """
    device = torch.device(device)
    mu1, a = _centred(x, "first feature set", device)
    mu2, b = _centred(y, "second feature set", device)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feature dimensions differ: {a.shape[1]} vs {b.shape[1]}")
    diff = mu1 - mu2
    trace = a.square().sum() + b.square().sum()
    return float(diff @ diff + trace) - 2 * trace_sqrt_product(a, b, sample_space)


def time_frechet(
    d: int = 21_907, n: int = 2_000, seed: int = 0, device: torch.device | str = "cpu"
) -> dict[str, float]:
    """Seconds for one `frechet_distance` between two random [n, d] float32 feature sets (Sei-sized default).

    Returns {"d", "n", "seconds", "value", "sample_space"}; the inputs are drawn before the clock starts.
    """
    rng = np.random.default_rng(seed)
    x = rng.random((n, d), dtype=np.float32)
    y = rng.random((n, d), dtype=np.float32) ** 1.1
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    value = frechet_distance(x, y, device=device)
    seconds = time.perf_counter() - start
    return {
        "d": float(d),
        "n": float(n),
        "seconds": seconds,
        "value": value,
        "sample_space": float(sample_space_is_cheaper(n, n, d)),
    }
