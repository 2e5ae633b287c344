"""The recorded Monte Carlo error of each ``kl-bound`` row against the seed-to-seed spread, per sampler and
evaluation point of one comparison folder.

For every sampler and every evaluation (``nimg``) that all of its seeds recorded: the mean of the recorded
values, their standard deviation over seeds (n − 1), the largest recorded ``extra.mc_se`` over the seeds and
the ratio of the two (the ground-truth criterion asks for ≤ 0.1). The last column is the worst ratio of a
sampler over the evaluations at or after ``--from-kimg``. One markdown table per call:

    python scripts/kl_bound_error.py RESULTS/runs/<task>-<budget>-<hash> [--from-kimg K]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from suite.records import read_jsonl


def rows_by_point(run: Path) -> dict[int, dict]:
    return {r["nimg"]: r for r in read_jsonl(run / "records.jsonl") if r["metric"] == "kl-bound"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("comparison", type=Path, help="RESULTS/runs/<task>-<budget>-<hash>")
    parser.add_argument("--from-kimg", type=float, default=0.0, help="first kimg of the worst ratio")
    args = parser.parse_args()
    by_sampler: dict[str, list[dict[int, dict]]] = defaultdict(list)
    for records in sorted(args.comparison.glob("*/seed*/records.jsonl")):
        by_sampler[records.parent.parent.name].append(rows_by_point(records.parent))
    if not by_sampler:
        parser.error(f"no run records under {args.comparison}/<sampler>/seed*/; give a comparison folder")
    print("| sampler | seeds | kimg | mean kl-bound | seed sd | largest MC SE | MC SE / seed sd |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    worst: dict[str, float] = {}
    for sampler, runs in sorted(by_sampler.items()):
        points = sorted(set.intersection(*(set(r) for r in runs)))
        for nimg in points:
            values = [r[nimg]["value"] for r in runs]
            if len(values) < 2:
                continue
            sd = statistics.stdev(values)
            se = max(r[nimg]["extra"]["mc_se"] for r in runs)
            ratio = se / sd if sd > 0 else float("inf")
            if nimg >= args.from_kimg * 1000:
                worst[sampler] = max(worst.get(sampler, 0.0), ratio)
            print(
                f"| {sampler} | {len(runs)} | {nimg / 1000:g} | {statistics.fmean(values):.2f} | {sd:.3f} "
                f"| {se:.4f} | {ratio:.3f} |"
            )
    print()
    print(f"Worst MC SE / seed sd from {args.from_kimg:g} kimg on:")
    print()
    print("| sampler | worst ratio |")
    print("| --- | --- |")
    for sampler, ratio in sorted(worst.items()):
        print(f"| {sampler} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
