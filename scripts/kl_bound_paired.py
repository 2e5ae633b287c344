"""The Monte Carlo error of a *difference* of two runs' ``kl-bound``, against the seed-to-seed spread.

Every run is scored on the same draws (common random numbers, ``infonoise_modalities.points.metrics``), so
the error that can pass for a seed effect is that of a difference, not of one value. For seeds 2i and 2i+1 of
a sampler, at each kimg given, both snapshots are scored on the same draws at every node (the counts the
first seed's row recorded, its second stage), and the standard error of B̂_a − B̂_b is
√(Σ_j ω_j² var(e_a − e_b)_j / n_j)/σ_j². Printed beside √2 × the seed standard deviation of the recorded
values (the spread of a difference of two seeds), as one markdown table:

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
from suite.records import read_jsonl
from suite.run.assembly import build_parts, build_task
from suite.run.evaluation import finished_run, load_snapshot


def recorded(run: Path, nimg: int) -> dict:
    (row,) = [r for r in read_jsonl(run / "records.jsonl") if r["metric"] == "kl-bound" and r["nimg"] == nimg]
    return row


def errors_of(
    run: Path, nimg: int, draws: NodeDraws | None, counts: list[int]
) -> tuple[list[torch.Tensor], NodeDraws, np.ndarray, np.ndarray]:
    """(per-node errors on the common draws, the draws) of ``run``'s snapshot at ``nimg``."""
    folder, spec, snapshots = finished_run(run, nimg / 1000, "cpu", "only finished runs are compared")
    task = build_task(spec)
    model = build_parts(spec, task, torch.device("cpu")).model.eval().requires_grad_(False)
    model.load_state_dict(load_snapshot(snapshots[nimg])["ema"])
    metric = next(m for m in task.metrics(torch.device("cpu"), Path(".")) if isinstance(m, KLBound))
    sigmas, weights = quadrature(int(metric.options["nodes"]), metric.sigma_min, metric.sigma_max)
    if draws is None:
        draws = NodeDraws(metric.distribution(), sigmas.tolist(), int(metric.options.get("seed", 0)))
    pilot = max(1, int(metric.options["samples"]) // 8 // CHUNK)
    with torch.no_grad():
        errs = [draws.errors(model, j, pilot, n // CHUNK, "cpu") for j, n in enumerate(counts)]
    return errs, draws, weights, sigmas


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
            ea, draws, weights, sigmas = errors_of(a, nimg, None, counts)
            eb, *_ = errors_of(b, nimg, draws, counts)
            var = np.array([(x - y).var().item() / len(x) for x, y in zip(ea, eb, strict=True)])
            se = math.sqrt(float((weights**2 * var / sigmas**4).sum()))
            print(f"| {kimg:g} | {a.name}–{b.name} | {se:.4f} | {spread:.3f} | {se / spread:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], [float(k) for k in sys.argv[3:]])
