"""``suite bench statistics``: simulated studies run through the table's own statistics, cell by cell,
against the bounds a conclusion must meet.

Model (per study; units of the run length T = 1, so kimg = t·``TOTAL_KIMG``): sampler j's curve is the power
law FID_j(t) = 2 + 8·(K/(c_j·t))^0.7 with K = 0.1, c = 1 for the 4 baselines and c ∈ {1, 1.5} (the true
speed-up) for the candidate. Seed s of every sampler shares a time-scale effect t → t·e^{u_s}, u_s ~ N(0,
0.25²) (the same weights and data order: it cancels in a pair); each sampler's seed adds its own noise,

* ``normal``: an additive offset 0.5·z_js FID at every evaluation (z ~ N(0, 1)),
* ``lognormal``: the excess over 2 multiplied by e^{0.5·z_js} (skewness of the factor 1.75),

and each evaluation a multiplicative noise e^{0.01·w} (1% evaluation noise). Evaluations: 3 evenly spaced
(T/3, 2T/3, T) or ``dense``, the ``paper`` budget's log-spaced grid
(``suite.run.schedule.evaluation_points``). With 3, 5 or 10 seeds and both noises, speed-ups and grids: 24
cells.

Each study goes through the functions ``suite.report.comparisons.comparison_intervals`` applies to records,
called on arrays of all studies at once: ``t_limits`` on the ln of the finals (every sampler's final interval)
and on the paired differences of logs (candidate vs each baseline),
``suite.report.time_to_target.pair_log_ratios`` (the crossing ``suite.report.time_to_target.crossings`` in
log kimg × ln FID, a pair never reaching censored at its last evaluation) and ``censored_normal`` for the time
ratio, and ``holm`` over the 4 baselines, since a study
of 4 equal baselines without a declared target compares the candidate with each of them. A unit test runs
one simulated study through ``comparison_intervals`` from written records and gets the same numbers.

Per cell: coverage of the final, difference and ratio intervals (over every interval of the cell: 5 finals
and 4 differences and ratios per study); false "better"/"worse" (a Holm-adjusted difference whose sign is
wrong, or any at c = 1), false "sooner"/"longer" likewise for the ratio; the share of studies with a speed-up
statement (a ratio interval against every baseline, censored pairs included); the median speed-up
estimate. True values: ratio c; difference and final on the log scale E[ln FID] from 400 000 draws of the
model (fixed seed). Bounds (PASS/FAIL): every coverage ≥ 0.93, except the ratio at c = 1.5, ≥ 0.90; every
false-verdict rate ≤ 3.5%; a speed-up statement in ≥ 95% of studies. The default 1 000 replications give
a standard error of at most √(0.93·0.07/1000) = 0.8% for a coverage at its bound and 0.6% for a rate at
3.5%.

Then the seed plan: 3- and 5-pair pilots of normal paired differences (sd 1) planning for D = 1 and 0.5,
from the measured sd and from its 80% upper bound (``suite.report.seed_plan.spread_bound``,
``seeds_needed``), with the true power (``paired_t_power`` at the true sd) of each plan: mean and share below
0.8; PASS when the upper-bound plans' mean power ≥ 0.8.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from suite.report.seed_plan import POWER, paired_t_power, seeds_needed, spread_bound
from suite.report.statistics import CONFIDENCE, censored_normal, holm, t_limits
from suite.report.time_to_target import pair_log_ratios
from suite.run.schedule import evaluation_points

K, EXPONENT, FLOOR, AMPLITUDE = 0.1, 0.7, 2.0, 8.0
SEED_SHARED, SEED_OWN, EVALUATION = 0.25, 0.5, 0.01
BASELINES = 4
NOISES = ("normal", "lognormal")
SEED_COUNTS = (3, 5, 10)
GRIDS = ("3", "dense")
SPEEDUPS = (1.0, 1.5)
REPLICATIONS = 1000
COVERAGE, RATIO_COVERAGE_AT_SPEEDUP, FALSE_RATE, STATEMENT = 0.93, 0.90, 0.035, 0.95
TOTAL_KIMG = 1000.0
BUDGETS = Path(__file__).resolve().parents[1] / "conf" / "budget"
TRUTH_DRAWS = 400_000


def budget_grid(name: str) -> np.ndarray:
    """A budget config's evaluation points as fractions of its run."""
    budget = yaml.safe_load((BUDGETS / f"{name}.yaml").read_text())
    total = int(round(float(budget["kimg"]) * 1000))
    spacing = budget.get("eval_spacing", "linear")
    points = evaluation_points(total, int(budget["batch"]), int(budget["eval_points"]), spacing)
    return np.asarray(points, dtype=float) / total


def grid_of(name: str) -> np.ndarray:
    """ "3": evenly spaced thirds; "dense": the ``paper`` budget's grid; else that budget's grid."""
    if name == "3":
        return np.array([1 / 3, 2 / 3, 1.0])
    return budget_grid("paper" if name == "dense" else name)


def curves(
    t: np.ndarray,
    speedup: np.ndarray,
    shared: np.ndarray,
    own: np.ndarray,
    noise: str,
    evaluation: np.ndarray,
) -> np.ndarray:
    """Model values at times ``t`` (P,) for arrays of speed-ups c, seed effects u and own noises z that
    broadcast to the leading shape; ``evaluation`` the per-point w (…, P)."""
    excess = AMPLITUDE * (K / (speedup[..., None] * t * np.exp(shared[..., None]))) ** EXPONENT
    if noise == "lognormal":
        values = FLOOR + excess * np.exp(SEED_OWN * own[..., None])
    else:
        values = FLOOR + excess + SEED_OWN * own[..., None]
    return values * np.exp(EVALUATION * evaluation)


@functools.cache
def true_log_final(speedup: float, noise: str) -> float:
    """E[ln FID_final] of a sampler of speed-up c under the model (400 000 draws, fixed seed)."""
    rng = np.random.default_rng(12345)
    u, z = rng.normal(0, SEED_SHARED, TRUTH_DRAWS), rng.normal(size=TRUTH_DRAWS)
    values = curves(np.ones(1), np.full(TRUTH_DRAWS, speedup), u, z, noise, np.zeros((TRUTH_DRAWS, 1)))
    return float(np.mean(np.log(values[:, 0])))


@dataclass(frozen=True)
class Cell:
    noise: str
    seeds: int
    grid: str
    speedup: float


def simulate_values(cell: Cell, replications: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """kimg (P,) and the values (replications, 4 baselines + candidate, seeds, P) of a cell's studies."""
    t = grid_of(cell.grid)
    n, samplers = cell.seeds, BASELINES + 1
    c = np.array([1.0] * BASELINES + [cell.speedup])[None, :, None] * np.ones((replications, samplers, n))
    shared = rng.normal(0, SEED_SHARED, (replications, 1, n)) * np.ones((1, samplers, 1))
    own = rng.normal(size=(replications, samplers, n))
    values = curves(t, c, shared, own, cell.noise, rng.normal(size=(replications, samplers, n, t.size)))
    return t * TOTAL_KIMG, values


def study_statistics(kimg: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """What ``comparison_intervals`` computes for studies of FID values (R, 4 + 1, n, P), on the log scale:
    every sampler's final (mean, low, high) of ln FID; the candidate against each baseline: the paired
    difference of logs (mean, low, high, sd) with Holm-adjusted p, the log time ratio (μ̂, low, high) with its
    censoring (R, 4, n) and Holm-adjusted p."""
    logs = np.log(values[..., -1])
    final = t_limits(logs)[:3]
    differences = logs[:, -1:, :] - logs[:, :BASELINES, :]
    mean, low, high, p = t_limits(differences)
    candidate = np.broadcast_to(values[:, -1:, :, :], values[:, :BASELINES].shape)
    log_ratio, censored = pair_log_ratios((kimg, values[:, :BASELINES]), (kimg, candidate), False, "log")
    estimate, r_low, r_high, r_p = censored_normal(log_ratio, censored)
    return {
        "final": np.stack(final),
        "difference": np.stack([mean, low, high, differences.std(-1, ddof=1)]),
        "difference_p": holm(p),
        "ratio": np.stack([estimate, r_low, r_high]),
        "ratio_p": holm(r_p),
        "censored": censored,
    }


def simulate(cell: Cell, replications: int, rng: np.random.Generator) -> dict[str, float]:
    """One cell's rates over ``replications`` studies (module docstring)."""
    kimg, values = simulate_values(cell, replications, rng)
    got = study_statistics(kimg, values)
    truth = np.array(
        [true_log_final(1.0, cell.noise)] * BASELINES + [true_log_final(cell.speedup, cell.noise)]
    )
    _, low, high = got["final"]
    final_cover = (low <= truth) & (truth <= high)
    mean, low, high, _ = got["difference"]
    true_difference = truth[-1] - truth[0]
    difference_cover = (low <= true_difference) & (true_difference <= high)
    significant = got["difference_p"] < 1 - CONFIDENCE
    better, worse = significant & (mean < 0), significant & (mean > 0)
    estimate, low, high = got["ratio"]
    true_ratio = math.log(cell.speedup)
    ratio_cover = (low <= true_ratio) & (true_ratio <= high)
    significant = got["ratio_p"] < 1 - CONFIDENCE
    sooner, longer = significant & (low > 0), significant & (high < 0)
    stated = (~np.isnan(low) & ~np.isnan(high)).all(-1)
    faster = cell.speedup > 1
    return {
        "coverage final": float(final_cover.mean()),
        "coverage difference": float(difference_cover.mean()),
        "coverage ratio": float(ratio_cover.mean()),
        "false better": 0.0 if faster else float(better.any(-1).mean()),
        "false worse": float(worse.any(-1).mean()),
        "false sooner": 0.0 if faster else float(sooner.any(-1).mean()),
        "false longer": float(longer.any(-1).mean()),
        "speed-up stated": float(stated.mean()),
        "censored pairs": float((got["censored"] != 0).mean()),
        "median speed-up": float(np.exp(np.nanmedian(estimate))),
    }


def verdict(cell: Cell, rates: dict[str, float]) -> list[str]:
    """The bounds a cell misses (empty: PASS)."""
    missed = []
    for key in ("coverage final", "coverage difference", "coverage ratio"):
        bound = RATIO_COVERAGE_AT_SPEEDUP if key == "coverage ratio" and cell.speedup > 1 else COVERAGE
        if rates[key] < bound:
            missed.append(f"{key} {rates[key]:.3f} < {bound}")
    for key in ("false better", "false worse", "false sooner", "false longer"):
        if rates[key] > FALSE_RATE:
            missed.append(f"{key} {rates[key]:.3f} > {FALSE_RATE}")
    if rates["speed-up stated"] < STATEMENT:
        missed.append(f"speed-up stated {rates['speed-up stated']:.3f} < {STATEMENT}")
    return missed


def interpolation_bias(speedups: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0)) -> pd.DataFrame:
    """Noise-free ratio estimate / true ratio − 1 of one pair, per grid (the cells' two and the ``short``
    budget's), value axis and true speed-up."""
    lines = []
    for grid in (*GRIDS, "short"):
        t = grid_of(grid)
        kimg = t * TOTAL_KIMG
        zero = np.zeros(1)
        target = curves(t, np.ones(1), zero, zero, "normal", np.zeros((1, t.size)))
        for scale in ("log", "linear"):
            line: dict[str, object] = {"grid": grid, "value axis": f"{scale} (kimg: log)"}
            for speedup in speedups:
                candidate = curves(t, np.full(1, speedup), zero, zero, "normal", np.zeros((1, t.size)))
                log_ratio, _ = pair_log_ratios((kimg, target), (kimg, candidate), False, scale)
                line[f"bias at {speedup:g}×"] = float(np.exp(log_ratio[0]) / speedup - 1)
            lines.append(line)
    return pd.DataFrame(lines)


def seed_plan_power(pilots: int, rng: np.random.Generator) -> pd.DataFrame:
    """Mean true power of seed plans from pilot standard deviations (sd 1), per pilot size, difference and
    method, and the share of plans below ``POWER``."""
    lines = []
    for pairs, difference in itertools.product((3, 5), (1.0, 0.5)):
        spreads = rng.normal(size=(pilots, pairs)).std(-1, ddof=1)
        for method in ("measured sd", "80% upper bound"):
            powers = []
            for s in spreads:
                plan_sd = spread_bound(float(s), pairs) if method != "measured sd" else float(s)
                planned = seeds_needed(difference, plan_sd)
                powers.append(paired_t_power(planned, difference, 1.0))
            powers = np.array(powers)
            lines.append(
                {
                    "pilot pairs": pairs,
                    "difference / sd": difference,
                    "plan from": method,
                    "mean power": float(powers.mean()),
                    "share below 0.8": float((powers < POWER).mean()),
                }
            )
    return pd.DataFrame(lines)


def table_markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    lines = [header, "| " + " | ".join("---" for _ in frame.columns) + " |"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)


def run(replications: int, seed: int, pilots: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, bool]:
    """Every cell, the interpolation bias and the seed plans; whether every bound holds."""
    rng = np.random.default_rng(seed)
    lines, ok = [], True
    for noise, seeds, grid, speedup in itertools.product(NOISES, SEED_COUNTS, GRIDS, SPEEDUPS):
        cell = Cell(noise, seeds, grid, speedup)
        rates = simulate(cell, replications, rng)
        missed = verdict(cell, rates)
        ok &= not missed
        lines.append(
            {"noise": noise, "seeds": seeds, "grid": grid, "true speed-up": speedup}
            | rates
            | {"result": "PASS" if not missed else "FAIL: " + "; ".join(missed)}
        )
    plans = seed_plan_power(pilots, rng)
    bound_plans = plans[plans["plan from"] == "80% upper bound"]
    plans_ok = bool((bound_plans["mean power"] >= POWER).all())
    return pd.DataFrame(lines), interpolation_bias(), plans, ok and plans_ok


def print_simulation(replications: int, pilots: int, seed: int) -> int:
    """``suite bench statistics``: print the cells of ``replications`` studies each, the interpolation bias
    and the seed plans of ``pilots`` pilot studies (simulation ``seed``); exit 1 when a bound is missed."""
    if replications < 20:
        raise ValueError(f"--replications {replications}: give at least 20 studies per cell")
    started = time.perf_counter()
    cells, bias, plans, ok = run(replications, seed, pilots)
    print(
        f"suite bench statistics · {replications} studies per cell · seed {seed} · "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print(table_markdown(cells), end="\n\n")
    print("Ratio bias of the crossing without noise (ratio estimate / true speed-up − 1):\n")
    print(table_markdown(bias), end="\n\n")
    print(f"Seed plans ({pilots} pilots each; true sd 1):\n")
    print(table_markdown(plans), end="\n\n")
    print("every cell within its bounds" if ok else "a bound is missed (FAIL above)")
    sys.stdout.flush()
    return 0 if ok else 1
