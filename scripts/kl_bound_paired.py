"""The Monte Carlo error of a *difference* of two runs' ``kl-bound``, against the seed-to-seed spread.

Every run is scored on the same draws (common random numbers, ``infonoise_modalities.points.metrics``), so
the error that can pass for a seed effect is that of a difference, not of one value. For seeds 2i and 2i+1 of
a sampler, at each kimg given, both snapshots are scored on the same draws at every node (the counts the
first seed's row recorded, its second stage), each with the control-variate coefficients β its own row
recorded, and the standard error of B̂_a − B̂_b is
√(Σ_j ω_j² (var(r_a − r_b)_j/n_j + ‖(β_a − β_b)_j ∘ se(E c)_j‖²)/σ_j⁴) with r = e − βᵀc (the known means
E c cancel but for their error). Printed beside √2 × the seed standard
deviation of the recorded values (the spread of a difference of two seeds), as one markdown table:

    python scripts/kl_bound_paired.py RESULTS_COMPARISON_FOLDER SAMPLER KIMG [KIMG ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

from infonoise_modalities.points.metrics import CHUNK, KLBound, NodeDraws, quadrature
from suite.paths import cache_dir
from suite.records import read_jsonl
from suite.run.assembly import build_task
from suite.run.evaluation import open_run


def recorded(run: Path, nimg: int) -> dict:
    (row,) = [r for r in read_jsonl(run / "records.jsonl") if r["metric"] == "kl-bound" and r["nimg"] == nimg]
    return row


def residuals_of(
    run: Path, nimg: int, draws: NodeDraws | None, counts: list[int]
) -> tuple[list[torch.Tensor], list[list[float]], NodeDraws, torch.Tensor, np.ndarray, np.ndarray]:
    """(per-node e − β·c on the common draws, β, the draws, E c and its error, ω, σ) of ``run``'s snapshot
    at ``nimg``, with the β its own row recorded."""
    opened = open_run(run, nimg / 1000, "cpu", "only finished runs are compared")
    task = build_task(opened.spec)
    model, _ = opened.network(task, torch.device("cpu"))
    model.load_state_dict(opened.snapshot(nimg)["ema"])
    metric = next(m for m in task.metrics(torch.device("cpu"), cache_dir()) if isinstance(m, KLBound))
    sigmas, weights, _ = quadrature(int(metric.options["nodes"]), metric.sigma_min, metric.sigma_max)
    seed = int(metric.options.get("seed", 0))
    if draws is None:
        draws = NodeDraws(metric.distribution(), sigmas.tolist(), seed)
    controls = metric.controls(sigmas)
    beta = recorded(run, nimg)["extra"]["curve"]["beta"]
    pilot = max(1, int(metric.options["samples"]) // 8 // CHUNK)
    with torch.no_grad():
        pairs = [draws.errors(model, j, pilot, n // CHUNK, "cpu") for j, n in enumerate(counts)]
    residuals = [e - c @ torch.tensor(b, dtype=torch.float64) for (e, c), b in zip(pairs, beta, strict=True)]
    return residuals, beta, draws, controls, weights, sigmas


def main(comparison: str, sampler: str, kimgs: list[float]) -> None:
    torch.set_num_threads(1)
    runs = sorted((Path(comparison) / sampler).glob("seed*"), key=lambda p: int(p.name[4:]))
    print("| kimg | seed pair | MC SE of the difference | √2 × seed sd | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for kimg in kimgs:
        nimg = int(round(kimg * 1000))
        values = [recorded(run, nimg)["value"] for run in runs]
        spread = math.sqrt(2) * statistics.stdev(values)
        for a, b in zip(runs[0::2], runs[1::2], strict=False):
            counts = recorded(a, nimg)["extra"]["curve"]["draws"]
            ra, beta_a, draws, controls, weights, sigmas = residuals_of(a, nimg, None, counts)
            rb, beta_b, *_ = residuals_of(b, nimg, draws, counts)
            var = np.array(
                [
                    (x - y).var().item() / len(x)
                    + float(((torch.tensor(p) - torch.tensor(q)) * m_se).square().sum())
                    for x, y, p, q, m_se in zip(ra, rb, beta_a, beta_b, controls[1], strict=True)
                ]
            )
            se = math.sqrt(float((weights**2 * var / sigmas**4).sum()))
            print(f"| {kimg:g} | {a.name}–{b.name} | {se:.4f} | {spread:.3f} | {se / spread:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], [float(k) for k in sys.argv[3:]])
