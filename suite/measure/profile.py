"""``suite profile``: the post hoc information profile of a task's data, and where samplers put effort.

The profile is the conditional-entropy rate of the clean example given its noisy version, per unit
u = ln σ on the variance-exploding path x = x₀ + σε (I–MMSE, Guo, Shamai & Verdú 2005; InfoNoise, Raya et
al., arXiv 2602.18647, Sec. 3):

    ρ(u) ∝ MMSE(σ)/σ²,     MMSE(σ) = E‖x₀ − E[x₀ | x]‖² (summed over dimensions),

normalised over [ln σ_min, ln σ_max]. It is reported by its peak σ (the grid value of the largest density)
and its 10–90% band: the σ where the cumulative ∫ρ du reaches 10% and 90%, linearly interpolated in u.

MMSE curves of the data x₀ (the model-space examples of the training split, flattened), on a geometric σ
grid:

* **empirical prior** (the paper's post hoc diagnostic, App. B.4): the
  optimal denoiser of the uniform distribution on N examples
  (``suite.noise.information.empirical_prior_mmse``) with its memorisation diagnostics: E[max_i w_i(x)], the
  effective count E[1/Σ w_i²] and the memorisation scale σ_mem = d_NN/√(2 ln N) (d_NN the median
  nearest-neighbour distance), below which the posterior sits on one example and MMSE → 0. On continuous data
  this profile sits above (at larger σ than) the informative region of the data distribution, whose MMSE ≈
  D·σ² at small σ.
* **exact point set**, when the whole training split has at most ``max_points`` distinct examples: MMSE of
  the data distribution itself, Σ_k w_k δ(x_k) with the examples' frequencies (``point_set_mmse``: exact
  posterior; trapezoid quadrature over the noise for one dimension, Monte Carlo otherwise).
* **linear (Gaussian) bound**: with λ_i the eigenvalues of the data covariance, the linear estimator's error
  Σ_i λ_i·σ²/(λ_i + σ²) is at least the MMSE of any distribution with that covariance and equals it for
  Gaussian data (Kay 1993, "Fundamentals of Statistical Signal Processing: Estimation Theory", §12.5).
* **coordinate-wise bound**, when every coordinate takes at most ``max_levels`` values (binary pixels, one-hot
  bases, digitised levels): Σ_j E‖x₀ⱼ − E[x₀ⱼ | xⱼ]‖², each term the exact two- (or L-) point MMSE of that
  coordinate's marginal by quadrature. Conditioning on one noisy coordinate instead of all of them can only
  lose information, so this too is at least the MMSE of the data distribution.

The headline profile is the exact one when it exists, else the empirical prior; every curve is printed with
its peak and band, written as a CSV (one row per σ) and drawn against every registered sampler's effective
allocation φ = π·w (the task's loss weight, each sampler at its config defaults; adaptive samplers at their
warm-up prior). A task that declares a learned model space (``model_space = "learned"``: its objective
encodes examples into an embedding the network learns, as text does) has no fixed model-space data
distribution, and the command says so instead of computing anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from suite.config import compose_run, to_dict
from suite.noise.information import empirical_prior_mmse, point_set_mmse
from suite.outputs import claim, guarded_output
from suite.report.profile import PosthocProfile, ProfileCurve, ProfileReport, plot_profile, write_posthoc
from suite.run.assembly import build_task
from suite.run.spec import run_spec
from suite.task import Task

MAX_ELEMENTS = 50_000_000


MAX_GRAM = 4096


@dataclass(frozen=True)
class ProfileSettings:
    """How much work a profile does: examples in the empirical prior, noisy queries, σ values, the cap on
    rows loaded for the exact curves and bounds, and the cap on distinct points for the exact profile."""

    n_points: int
    n_queries: int
    n_sigma: int
    max_rows: int = 20000
    max_points: int = 64
    max_levels: int = 16
    n_mc: int = 1024


SETTINGS = {
    "smoke": ProfileSettings(n_points=512, n_queries=128, n_sigma=41),
    "short": ProfileSettings(n_points=4096, n_queries=256, n_sigma=61),
    "paper": ProfileSettings(n_points=20000, n_queries=1024, n_sigma=81, max_rows=60000),
}


class ProfileNotApplicable(ValueError):
    """The task's data have no fixed model-space distribution to profile (the message says why)."""


def posthoc_profile(
    x: Tensor, sigma: np.ndarray, n_queries: int = 256, generator: torch.Generator | None = None
) -> PosthocProfile:
    """``empirical_prior_mmse`` of the examples ``x`` ([N, …], flattened) with its diagnostics and d_NN, the
    median distance of a distinct example to its nearest distinct neighbour (0 with one distinct example)."""
    x = x.reshape(x.shape[0], -1).to(torch.float64)
    mmse, diagnostics = empirical_prior_mmse(
        torch.as_tensor(sigma, dtype=torch.float64),
        x,
        n_queries=n_queries,
        generator=generator,
        return_diagnostics=True,
    )
    distinct = torch.unique(x, dim=0)
    dist = torch.cdist(distinct, distinct)
    dist.fill_diagonal_(math.inf)
    nn_distance = float(dist.min(1).values.median()) if distinct.shape[0] > 1 else 0.0
    return PosthocProfile(
        np.asarray(sigma, dtype=float),
        mmse.numpy(),
        nn_distance,
        x.shape[0],
        x.shape[1],
        diagnostics,
    )


def exact_point_set(
    x: Tensor, sigma: np.ndarray, max_points: int, n_mc: int = 1024, generator: torch.Generator | None = None
) -> ProfileCurve | None:
    """MMSE of the distribution of ``x``'s rows (distinct rows, weighted by frequency), when at most
    ``max_points`` rows are distinct; None otherwise."""
    points, counts = torch.unique(x.reshape(x.shape[0], -1).to(torch.float64), dim=0, return_counts=True)
    if points.shape[0] > max_points:
        return None
    if points.shape[0] == 1:
        mmse = np.zeros_like(np.asarray(sigma, dtype=float))
    else:
        mmse = point_set_mmse(
            torch.as_tensor(sigma, dtype=torch.float64),
            points,
            counts.to(torch.float64),
            n_mc=n_mc,
            generator=generator,
        ).numpy()
    how = "quadrature" if points.shape[1] == 1 else f"{n_mc} noise draws per point"
    return ProfileCurve(
        "exact",
        f"exact: the data's {points.shape[0]} distinct points ({how})",
        np.asarray(sigma, dtype=float),
        mmse,
    )


def linear_bound(x: Tensor, sigma: np.ndarray) -> ProfileCurve:
    """Σ_i λ_i σ²/(λ_i + σ²), λ_i the eigenvalues of the covariance of ``x``'s rows (exact for Gaussians)."""
    flat = x.reshape(x.shape[0], -1).to(torch.float64)
    centred = flat - flat.mean(0)
    # the nonzero eigenvalues of XᵀX/N are those of XXᵀ/N, whichever side is smaller
    gram = centred.T @ centred if centred.shape[1] <= centred.shape[0] else centred @ centred.T
    lam = torch.linalg.eigvalsh(gram / flat.shape[0]).clamp_min(0.0).numpy()
    s2 = np.asarray(sigma, dtype=float)[:, None] ** 2
    mmse = (lam[None, :] * s2 / (lam[None, :] + s2)).sum(1)
    return ProfileCurve(
        "linear", "linear (Gaussian) bound, exact for Gaussian data", np.asarray(sigma, float), mmse
    )


def coordinate_bound(x: Tensor, sigma: np.ndarray, max_levels: int) -> ProfileCurve | None:
    """Σ_j of the exact MMSE of coordinate j from its own noisy value, when all coordinates share at most
    ``max_levels`` values; None otherwise."""
    flat = x.reshape(x.shape[0], -1).to(torch.float64)
    levels = torch.unique(flat)
    if levels.numel() > max_levels:
        return None
    if levels.numel() == 1:
        return ProfileCurve(
            "coordinate", "coordinate-wise bound (1 level)", np.asarray(sigma, float), np.zeros(len(sigma))
        )
    index = torch.searchsorted(levels, flat)
    freq = torch.stack([(index == k).to(torch.float64).mean(0) for k in range(levels.numel())], dim=1)
    kinds, multiplicity = torch.unique(freq, dim=0, return_counts=True)
    s = torch.as_tensor(sigma, dtype=torch.float64)
    total = torch.zeros_like(s)
    for weights, times in zip(kinds, multiplicity.tolist(), strict=True):
        present = weights > 0
        if int(present.sum()) > 1:
            total += times * point_set_mmse(s, levels[present], weights[present])
    return ProfileCurve(
        "coordinate",
        f"coordinate-wise bound ({levels.numel()} levels per coordinate)",
        np.asarray(sigma, float),
        total.numpy(),
    )


def profile_report(
    x: Tensor, sigma: np.ndarray, settings: ProfileSettings, total: int | None = None, seed: int = 0
) -> ProfileReport:
    """All curves of the examples ``x`` ([N, …] model-space x₀), a random subset of ``total`` examples when
    given (the exact profile needs them all). At most ``settings.max_rows`` rows enter the exact curve and
    the bounds, and the linear bound's Gram matrix is at most ``MAX_GRAM`` on a side."""
    gen = torch.Generator().manual_seed(seed)
    total = x.shape[0] if total is None else total
    notes = []
    rows = x
    if x.shape[0] > settings.max_rows:
        rows = x[torch.randperm(x.shape[0], generator=gen)[: settings.max_rows]]
    if rows.shape[0] < total:
        notes.append(f"bounds from {rows.shape[0]} random examples of {total}")
    pick = torch.randperm(x.shape[0], generator=gen)[: settings.n_points]
    empirical = posthoc_profile(x[pick], sigma, settings.n_queries, gen)
    curves = [empirical.curve()]
    exact = None
    if rows.shape[0] < total:
        notes.append("no exact profile: it needs every example of the training split (more than max_rows)")
    else:
        exact = exact_point_set(rows, sigma, settings.max_points, settings.n_mc, gen)
        if exact is None:
            notes.append(
                f"no exact profile: the examples are more than {settings.max_points} distinct points (the "
                "empirical prior is the paper's post hoc diagnostic instead)"
            )
    if exact is not None:
        curves.insert(0, exact)
    flat = rows.reshape(rows.shape[0], -1)
    if min(flat.shape) > MAX_GRAM:
        notes.append(f"linear bound from the covariance of {MAX_GRAM} of those examples")
        flat = flat[:MAX_GRAM]
    curves.append(linear_bound(flat, sigma))
    coordinate = coordinate_bound(rows, sigma, settings.max_levels)
    if coordinate is not None:
        curves.append(coordinate)
    return ProfileReport(np.asarray(sigma, dtype=float), empirical, curves, notes)


def task_examples(task: Task, max_rows: int | None = None, seed: int = 0) -> tuple[Tensor, str, int]:
    """Model-space x₀ of a task's training split, flattened ([n, D], CPU), the data variant loaded and the
    split's size N; n = N, or ``max_rows`` random examples (fewer when D is so large that ``MAX_ELEMENTS``
    would be exceeded) when given and smaller.

    Raises ProfileNotApplicable for a task that declares a learned model space (e.g. token embeddings).
    """
    if task.model_space == "learned":
        raise ProfileNotApplicable(
            f"task {task.name!r} declares a learned model space: its objective maps examples into an "
            "embedding that moves with the network, so its data have no fixed distribution whose MMSE could "
            "be computed post hoc. Its information profile is the one InfoNoise learns during a run (the "
            "'profile' rows of sampler.jsonl)."
        )
    data = task.load()
    n = len(data.train)
    first = data.train.batch(torch.zeros(1, dtype=torch.long), torch.device("cpu")).x0
    cap = max(1, MAX_ELEMENTS // max(1, first[0].numel()))
    cap = cap if max_rows is None else min(cap, max_rows)
    index = torch.arange(n)
    if n > cap:
        index = torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:cap].sort().values
    x0 = data.train.batch(index, torch.device("cpu")).x0
    return x0.reshape(len(index), -1), data.variant, n


def empirical_profile(
    task: Task, sigma: np.ndarray, n_points: int = 512, n_queries: int = 256, seed: int = 0
) -> PosthocProfile:
    """Post hoc profile of a task's training data: ``empirical_prior_mmse`` of ``n_points`` examples."""
    x, _, _ = task_examples(task, max_rows=n_points, seed=seed)
    return posthoc_profile(x, sigma, n_queries, torch.Generator().manual_seed(seed))


def write_profile(
    task: str,
    budget: str = "smoke",
    results: str = "results",
    out: str | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> int:
    """``suite profile --task T [--budget B] [--results R] [--out DIR] [key=value …]``: print the profile's
    peak and band (every curve), write ``<out>/<task>-<budget>_profile.csv``, its figure (PNG, PDF) and the
    empirical-prior profile that ``suite plot`` draws (``<out>`` defaults to ``<results>/profiles``). An
    ``--out`` folder is guarded as ``suite plot``'s is (``suite.outputs``: never in a run folder, never over
    a file suite did not write there unless ``force``), checked before anything is computed."""

    with guarded_output(out, force):
        return _write_profile(task, budget, Path(out or Path(results) / "profiles"), overrides)


def _write_profile(task: str, budget: str, folder: Path, overrides: Sequence[str]) -> int:
    spec = run_spec(compose_run(task, "edm", budget, list(overrides)))
    if spec.budget.size not in SETTINGS:
        raise ValueError(
            f"no profile settings for budget size {spec.budget.size!r}; valid: {', '.join(SETTINGS)}"
        )
    settings = SETTINGS[spec.budget.size]
    task_cfg = to_dict(spec.task_cfg)
    try:
        x, variant, total = task_examples(build_task(spec), max_rows=settings.max_rows)
    except ProfileNotApplicable as err:
        print(f"suite profile does not apply to task {task!r}: {err}")
        return 1
    sigma = np.geomspace(spec.diffusion.sigma_min, spec.diffusion.sigma_max, settings.n_sigma)
    report = profile_report(x, sigma, settings, total)
    print(
        f"{task} ({variant}): {total} examples of dimension {x.shape[1]}, {settings.n_sigma} σ "
        f"values on [{sigma[0]:g}, {sigma[-1]:g}] (grid step {math.log(sigma[1] / sigma[0]):.3f} in ln σ)"
    )
    for line in report.lines():
        print(line)
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{task}-{budget}_profile"
    claim(stem.with_suffix(".csv"))
    report.frame().to_csv(stem.with_suffix(".csv"), index=False)
    written = [stem.with_suffix(".csv"), write_posthoc(folder, task_cfg, report.empirical, variant)]
    written += plot_profile(report, spec, f"{task} · {variant} · budget {budget}", stem)
    for path in written:
        print(f"wrote {path}")
    return 0
