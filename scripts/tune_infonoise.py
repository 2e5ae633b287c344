"""Choose InfoNoise's estimator defaults by experiment (the paper publishes none).

The sampler is fed the per-sample losses of the Bayes-optimal denoiser of three analytic data sets
(their expectation is the exact MMSE), exactly as training would feed it, and we measure the total
variation distance between its sampling density and the analytic target π ∝ MMSE/σ²·g_c/w after a fixed
number of steps. Usage: ``python scripts/tune_infonoise.py [--steps 3000] [--batch 512]``; the printed table
is the evidence behind docs/infonoise-defaults.md.
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from suite.noise.analytic import AnalyticData
from suite.noise.calibration import ANALYTIC_CASES, analytic_target, total_variation


def run(case: str, data: AnalyticData, steps: int, batch: int, seed: int, **params: object) -> float:
    sampler, _ = ANALYTIC_CASES[case].make_sampler(**params)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        sigma = sampler.sample(batch, gen, dtype=torch.float64)
        sampler.observe(sigma, data.optimal_losses(sigma, gen))
    return total_variation(sampler.density, analytic_target(case, sampler))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    grid = {
        "bins": [32, 64, 128],
        "smoothing_bins": [0.0, 1.0, 2.0],
        "decay": [0.8, 0.9, 0.97],
    }
    print(f"steps={args.steps} batch={args.batch}; TV to the analytic target per case")
    print("bins smoothing decay | " + " | ".join(ANALYTIC_CASES) + " | max")
    for bins, smoothing, decay in itertools.product(*grid.values()):
        t0 = time.perf_counter()
        tvs = [
            run(
                case,
                spec.data,
                args.steps,
                args.batch,
                seed=0,
                bins=bins,
                smoothing_bins=smoothing,
                decay=decay,
            )
            for case, spec in ANALYTIC_CASES.items()
        ]
        print(
            f"{bins:4d} {smoothing:9.1f} {decay:5.2f} | "
            + " | ".join(f"{tv:.4f}" for tv in tvs)
            + f" | {max(tvs):.4f}   ({time.perf_counter() - t0:.1f}s)"
        )


if __name__ == "__main__":
    main()
