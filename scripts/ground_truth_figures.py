"""Figures of a ground-truth study (``studies/ground-truth.yaml``): where each sampler's network is worse
than D*, and how InfoNoise's learned density approaches its exact target.

``excess.png``: per sampler, the final evaluation's integrand of the KL bound, E‖D_θ − D*‖²/σ² per unit ln σ
(the ``curve`` each ``kl-bound`` row records, mean over seeds), beside the sampler's training density π(u)
and the effective allocation φ = π·w with the task's loss weight w (fixed samplers: their density;
adaptive ones: the density of their last rebuild, ``sampler.jsonl``, mean over seeds), and the exact
InfoNoise target π* (``pi-tv``'s target) for reference; and, where the comparison folder holds the null
network's rows (``suite eval --null``), its integrand too: how much each network has learned over doing
nothing, per σ band.

``infonoise.png``: InfoNoise's density at its rebuilds over training (seed 0, ``sampler.jsonl``) against the
exact target π*, and the TV distance ``pi-tv`` at each evaluation (mean and range over seeds).

Usage: ``python scripts/ground_truth_figures.py COMPARISON [--out DIR]``, COMPARISON being one comparison
folder of the study (``RESULTS/runs/<task>-<budget>-<hash>``: a results folder can hold several, which are
never mixed); writes both PNGs into DIR (default: RESULTS).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from infonoise_modalities.points.metrics import LearnedDensityTV  # noqa: E402
from suite.paths import cache_dir  # noqa: E402
from suite.records import NULL_FILE, NULL_SAMPLER  # noqa: E402
from suite.run.assembly import build_loss_weight, build_noise_sampler, build_task  # noqa: E402
from suite.run.spec import run_spec  # noqa: E402


def read_jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    )


def exact_target(run: Path) -> tuple[np.ndarray, np.ndarray, object]:
    """u grid, the InfoNoise target π* of the run's task, and the run's loss weight."""
    spec = run_spec(OmegaConf.load(run / "config.yaml"))
    task = build_task(spec)
    weight = build_loss_weight(spec)
    sampler = build_noise_sampler(spec, weight)  # pi-tv's one target, whatever the sampler
    options = dict(task.cfg["metrics"]["pi-tv"])
    metric = LearnedDensityTV(options, torch.device("cpu"), cache_dir())
    metric.bind(task.distribution, spec.diffusion.sigma_min, spec.diffusion.sigma_max)
    density, _ = metric.target(sampler)
    u = torch.linspace(sampler.u_min, sampler.u_max, 401, dtype=torch.float64)
    return u.numpy(), density.prob(u).numpy(), weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("comparison", type=Path, help="RESULTS/runs/<task>-<budget>-<hash>")
    parser.add_argument("--out", type=Path, help="folder of the PNGs (default: RESULTS)")
    args = parser.parse_args()
    runs = sorted(p.parent for p in args.comparison.glob("*/seed*/records.jsonl"))
    if not runs:
        parser.error(f"no run records under {args.comparison}/<sampler>/seed*/; give a comparison folder")
    out = args.out or args.comparison.parents[1]
    by_sampler: dict[str, list[Path]] = defaultdict(list)
    for run in runs:
        by_sampler[run.parent.name].append(run)
    u_star, pi_star, weight = exact_target(runs[0])

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    for name, folders in sorted(by_sampler.items()):
        curves, densities = [], []
        for run in folders:
            rows = [r for r in read_jsonl(run / "records.jsonl") if r["metric"] == "kl-bound"]
            last = max(rows, key=lambda r: r["nimg"])
            sigma = np.asarray(last["extra"]["curve"]["sigma"])
            curves.append(np.asarray(last["extra"]["curve"]["excess"]) / sigma**2)
            spec = run_spec(OmegaConf.load(run / "config.yaml"))
            log = read_jsonl(run / "sampler.jsonl")
            if log:
                u, density = np.asarray(log[-1]["u"]), np.asarray(log[-1]["density"])
            else:
                sampler = build_noise_sampler(spec, build_loss_weight(spec))
                grid = torch.linspace(sampler.u_min, sampler.u_max, 401, dtype=torch.float64)
                u, density = grid.numpy(), sampler.density_on(grid).numpy()
            densities.append(np.interp(u_star, u, density))
        line = axes[0].plot(sigma, np.mean(curves, 0), marker="o", ms=3, label=name)[0]
        pi = np.mean(densities, 0)
        w = weight(torch.from_numpy(np.exp(u_star))).numpy()
        axes[1].plot(np.exp(u_star), pi, color=line.get_color(), label=name)
        axes[2].plot(np.exp(u_star), pi * w, color=line.get_color(), label=name)
    null = [r for r in read_jsonl(args.comparison / NULL_FILE) if r["metric"] == "kl-bound"]
    if null:  # suite eval --null: what a network that learned nothing leaves, per σ
        curve = null[-1]["extra"]["curve"]
        sigma = np.asarray(curve["sigma"])
        axes[0].plot(sigma, np.asarray(curve["excess"]) / sigma**2, "k:", lw=2, label=NULL_SAMPLER)
        axes[0].legend(fontsize=7)
    w = weight(torch.from_numpy(np.exp(u_star))).numpy()
    axes[1].plot(np.exp(u_star), pi_star, "k--", lw=2, label="exact InfoNoise target π*")
    axes[2].plot(np.exp(u_star), pi_star * w, "k--", lw=2, label="π*·w")
    axes[0].set(xscale="log", yscale="log", xlabel="σ", ylabel="E‖D_θ − D*‖²/σ²  (per unit ln σ)")
    axes[0].set_title("excess error at the final evaluation (mean over seeds)")
    axes[1].set(xscale="log", xlabel="σ", ylabel="π(u) per unit ln σ", title="training density π")
    axes[2].set(
        xscale="log", yscale="log", xlabel="σ", ylabel="φ = π·w", title="effective allocation φ = π·w"
    )
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "excess.png", dpi=120)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    info = sorted(by_sampler.get("infonoise", []))
    log = read_jsonl(info[0] / "sampler.jsonl")
    learned = [row for row in log if "cdf_change" in row]
    cmap = plt.get_cmap("viridis")
    for k, row in enumerate(learned):
        axes[0].plot(np.exp(row["u"]), row["density"], color=cmap(k / max(1, len(learned) - 1)), lw=1)
    axes[0].plot(np.exp(u_star), pi_star, "k--", lw=2, label="exact target π*")
    axes[0].set(xscale="log", xlabel="σ", ylabel="π(u) per unit ln σ")
    axes[0].set_title(f"InfoNoise π at its {len(learned)} rebuilds (seed 0; light = late)")
    axes[0].legend()
    tv: dict[float, list[float]] = defaultdict(list)
    for run in info:
        for row in read_jsonl(run / "records.jsonl"):
            if row["metric"] == "pi-tv":
                tv[row["kimg"]].append(row["value"])
    kimg = sorted(tv)
    mean = [np.mean(tv[k]) for k in kimg]
    axes[1].plot(kimg, mean, marker="o", label=f"InfoNoise, mean of {len(info)} seeds")
    axes[1].fill_between(kimg, [min(tv[k]) for k in kimg], [max(tv[k]) for k in kimg], alpha=0.3)
    axes[1].set(xlabel="kimg", ylabel="TV(π, π*)", title="distance of the learned π to its exact target")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(out / "infonoise.png", dpi=120)
    print(f"wrote {out / 'excess.png'} and {out / 'infonoise.png'}")


if __name__ == "__main__":
    main()
