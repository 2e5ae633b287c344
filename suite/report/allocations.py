"""What the runs of a comparison spent their effort on: each run's initial and final effective allocation
φ = π·w per unit ln σ (``suite.report.plots`` gives the formula), the mean over seeds per sampler label, and
InfoNoise's learned profile ρ̂ at its last rebuild."""

from __future__ import annotations

import math

import numpy as np
import torch

from suite.noise.sampler import build_sampler
from suite.report.figures import (
    effective_allocation,
)
from suite.report.results import RunRecord
from suite.report.rows import (
    sampler_order,
)
from suite.run.assembly import build_loss_weight, build_noise_sampler


def initial_density(run: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """(u, π) of the run's sampler as configured, before any adaptation (None without a config)."""
    if run.spec is None:
        return None
    lo, hi = run.spec.diffusion.sigma_min, run.spec.diffusion.sigma_max
    try:
        sampler = build_noise_sampler(run.spec, build_loss_weight(run.spec))
    except (ValueError, KeyError):  # a sampler renamed or re-parametrised since the run
        return None
    u = np.linspace(math.log(lo), math.log(hi), 129)
    return u, sampler.density_on(torch.as_tensor(u, dtype=torch.float64)).numpy()


def final_allocation(run: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """(u, φ) of ``run`` at the end of training; None when neither its sampler log nor its config says.

    From the last sampler.jsonl row; an adaptive run that never rebuilt (budget shorter than its warm-up)
    logs no row, and its density is the configured one (the warm-up prior). With KG's importance correction
    the loss is reweighted by π_ref/π, so φ = π_ref·w, with w the task's loss weight.
    """
    if run.spec is None:
        return None
    weight = build_loss_weight(run.spec)
    rows = [r for r in run.sampler_log() if "density" in r]
    if rows:
        u = np.asarray(rows[-1]["u"], dtype=float)
        pi = np.asarray(rows[-1]["density"], dtype=float)
    elif (initial := initial_density(run)) is not None:
        u, pi = initial
    else:
        return None
    hyper = run.info.get("sampler_hyperparameters", {})
    if hyper.get("importance_correction") and isinstance(hyper.get("base"), dict):
        base = dict(hyper["base"])
        lo, hi = base.pop("sigma_min", math.exp(u[0])), base.pop("sigma_max", math.exp(u[-1]))
        reference = build_sampler(base.pop("name"), lo, hi, None, **base)
        pi = reference.density_on(torch.as_tensor(u, dtype=torch.float64)).numpy()
    return u, effective_allocation(u, pi, weight)


def mean_allocations(runs: list[RunRecord]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per sampler label, the seed-mean final φ (u, φ)."""
    out = {}
    for label in sampler_order([r.label for r in runs]):
        curves = [c for r in runs if r.label == label and (c := final_allocation(r)) is not None]
        if curves:
            out[label] = (curves[0][0], np.mean([c[1] for c in curves], axis=0))
    return out


def learned_profile(runs: list[RunRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """InfoNoise's final (u, ρ̂, m̂), averaged over seeds (plain ``infonoise`` label preferred)."""
    infonoise = [r for r in runs if r.sampler_name == "infonoise" and r.profiles()]
    plain = [r for r in infonoise if r.label == "infonoise"] or infonoise
    if not plain:
        return None
    last = [r.profiles()[-1] for r in plain if r.label == plain[0].label]
    u = np.asarray(last[0]["u"], dtype=float)
    return (u, np.mean([p["rho"] for p in last], axis=0), np.mean([p["m_hat"] for p in last], axis=0))
