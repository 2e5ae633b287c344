"""``suite bench statistics``: simulated studies run through the table's own statistics, cell by cell,
against the bounds a conclusion must meet, with the bench's own Monte Carlo error allowed for.

Model (per study; units of the run length T = 1, so kimg = t·``TOTAL_KIMG``). Sampler j's curve is
FID_j(t) = 2 + E(c_j·t·e^{u_s}), with the excess E of one of three families,

* ``power``: E(x) = 8·(K/x)^0.7, K = 0.1 (a straight line in log kimg × ln FID),
* ``flat``: E(x) = 8·(K/x)^0.3 (a curve still far from its floor at the end),
* ``exponential``: E(x) = 8·e^{−x/τ}, τ = 1/ln 5 (an exponential approach, at 1.6 above the floor at t = 1),

c = 1 for the 4 baselines and the true speed-up c ∈ {1/2, 1/1.5, 1, 1.5, 2} for the candidate: a time
rescaling, so its speed-up is c at every quality level. Seed s of every sampler shares a time-scale effect
u_s ~ N(0, 0.25²) (the same weights and data order: it cancels in a pair); each run adds its own noise,

* ``normal``: an additive offset 0.5·z FID at every evaluation (z ~ N(0, 1)),
* ``lognormal``: the excess multiplied by e^{0.5·z} (skewness of the factor 1.75),
* ``diverged``: ``normal``, and 3% of runs diverge: their FID doubles from a uniformly drawn time on,
* ``skewed``: the baselines' runs ``normal``, the candidate's ``lognormal`` (a right-skewed sampler against
  symmetric ones; power law, dense grid),

and each evaluation a multiplicative noise e^{0.01·w} (1% evaluation noise). Evaluations: 3 evenly spaced
(T/3, 2T/3, T) or ``dense``, the ``paper`` budget's log-spaced grid
(``suite.run.schedule.evaluation_points``). 3, 5 or 10 seeds. Full: the power family on both grids, the others
on the dense grid, every noise but ``skewed``, seed count and speed-up, and ``skewed`` (195 cells);
``--quick``: the power family on the dense grid, normal and lognormal noise, 3 and 5 seeds, speed-ups 1/1.5, 1
and 1.5 (12 cells).

Each study goes through the functions ``suite.report.comparisons.comparison_intervals`` applies to records,
on arrays of all studies at once: ``t_limits`` on the ln of the finals and on the paired differences of
logs (the candidate against each baseline), ``suite.report.time_to_target.pair_log_ratios`` and
``censored_normal`` for the time ratio, and ``holm`` over the 4 baselines (no declared target). The
assembly check then writes studies as run records (``runs/<row>/<sampler>/seed<k>/``: ``run.json`` and
``records.jsonl``, as runs write them), reads them back with ``load_records`` and runs the table's own
``comparison_intervals`` on them: every p-value and interval must equal the vectorised path's, on studies
chosen to hold censored pairs, so that a break in the table's assembly (a dropped pair, a wrong target)
changes the output.

Per cell: coverage of the final, difference and ratio intervals (every interval of the cell: 5 finals and 4
differences and ratios per study; of the ratio's, those with an estimate: a comparison with fewer than two
observed crossings states a bound on its pairs, not an interval, and is counted under "no estimate"); the
power of the true direction ("better"/"worse", "sooner"/"longer") per comparison line; false
"better"/"worse"/"sooner"/"longer" (a study with any Holm-adjusted statement of the wrong direction); the
share of uninformative ratio intervals ([0, ∞]) and of comparisons with no estimate; the median speed-up,
comparisons without an estimate counted at the side their bound allows (0 or ∞); the share of censored pairs;
the share of studies in which the table names one of the candidate's finals as an outlier
(``suite.report.statistics.outliers``, 8 seeds or more). True values: the ratio c; the difference and finals
on the log scale, E[ln FID] from 400 000 draws of the model (fixed seed). Bounds (PASS/FAIL): every coverage ≥
0.93, the ratio's ≥ 0.90 where c ≠ 1 (offsets that do not rescale time move the level's crossing); every false
rate ≤ 0.035; at 5 and 10 seeds the power of "longer" at 1/1.5 within 0.1 of that of "sooner" at 1.5 where the
model is symmetric under exchanging the two samplers (``symmetry``), reported elsewhere; each FAIL only where
the rate misses its bound by more than 3 of its standard errors (√(b(1−b)/R) at the bound b, R studies), so
correct code passes at every bench seed while a t quantile replaced by a normal one fails (the 3-seed finals'
coverage drops to about 0.82). Diverged-seed cells are gated on their false rates and power only: an outlier
that survives the logarithm moves a mean and its interval by construction, which ``suite table`` answers by
naming the seed (``suite.report.comparisons``).

Then the seed plan for the verdict the table prints (Holm over 4 baselines): 3- and 5-pair pilots of normal
paired differences (sd 1) planning for D = 1 and 0.5, from the measured sd and from its 70% upper bound
(``suite.report.seed_plan``), each plan's true power (the Holm-adjusted line's rejection rate at the
planned n, by simulation); PASS when the upper-bound plans' mean power ≥ 0.8 within 3 standard errors of
the mean over the pilots.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from suite.report.comparisons import comparison_intervals
from suite.report.rows import TARGET_BASELINES, load_records
from suite.report.seed_plan import POWER, SPREAD_CONFIDENCE, holm_level, seeds_needed, spread_bound
from suite.report.statistics import CONFIDENCE, censored_normal, holm, outliers, t_limits
from suite.report.time_to_target import pair_log_ratios
from suite.run.schedule import evaluation_points

K, FLOOR, AMPLITUDE = 0.1, 2.0, 8.0
EXPONENTS = {"power": 0.7, "flat": 0.3}
TAU = 1.0 / math.log(5.0)
SEED_SHARED, SEED_OWN, EVALUATION, MINIMUM = 0.25, 0.5, 0.01, 1e-3
DIVERGED_SHARE, DIVERGED_FACTOR = 0.03, 2.0
BASELINES = len(TARGET_BASELINES)
LABELS = (*TARGET_BASELINES, "infonoise")
FAMILIES = ("power", "flat", "exponential")
NOISES = ("normal", "lognormal", "diverged")
SEED_COUNTS = (3, 5, 10)
GRIDS = ("3", "dense")
SPEEDUPS = (0.5, 1 / 1.5, 1.0, 1.5, 2.0)
REPLICATIONS = 1000
COVERAGE, RATIO_COVERAGE_AT_SPEEDUP, FALSE_RATE, POWER_GAP = 0.93, 0.90, 0.035, 0.1
MONTE_CARLO_SE = 3.0
TOTAL_KIMG = 1000.0
BUDGETS = Path(__file__).resolve().parents[1] / "conf" / "budget"
TRUTH_DRAWS = 400_000
UPPER_BOUND = f"{100 * SPREAD_CONFIDENCE:g}% upper bound"


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


@dataclass(frozen=True)
class Cell:
    family: str
    noise: str
    seeds: int
    grid: str
    speedup: float


def cells(quick: bool = False) -> list[Cell]:
    """The full bench's 195 cells, or the 12 of ``--quick`` (module docstring)."""
    if quick:
        grid = itertools.product(("power",), ("normal", "lognormal"), (3, 5), ("dense",), (1 / 1.5, 1.0, 1.5))
        return [Cell(*values) for values in grid]
    out = []
    for family in FAMILIES:
        grids = GRIDS if family == "power" else ("dense",)
        for noise, seeds, grid, speedup in itertools.product(NOISES, SEED_COUNTS, grids, SPEEDUPS):
            out.append(Cell(family, noise, seeds, grid, speedup))
    for seeds, speedup in itertools.product(SEED_COUNTS, SPEEDUPS):
        out.append(Cell("power", "skewed", seeds, "dense", speedup))
    return out


def excess(family: str, x: np.ndarray) -> np.ndarray:
    """E(x) of the family at effective time x = c·t·e^u."""
    if family == "exponential":
        return AMPLITUDE * np.exp(-x / TAU)
    return AMPLITUDE * (K / x) ** EXPONENTS[family]


def curves(
    t: np.ndarray,
    family: str,
    noise: str,
    speedup: np.ndarray,
    shared: np.ndarray,
    own: np.ndarray,
    evaluation: np.ndarray,
    diverged_at: np.ndarray,
) -> np.ndarray:
    """Model values at times ``t`` (P,) for arrays of speed-ups c, seed effects u, own noises z and
    divergence times (∞: none) that broadcast to the leading shape; ``evaluation`` the per-point w (…, P). A
    FID is positive: an additive offset that would take it below ``MINIMUM`` (z < −4) stops there."""
    e = excess(family, speedup[..., None] * t * np.exp(shared[..., None]))
    if noise == "lognormal":
        values = FLOOR + e * np.exp(SEED_OWN * own[..., None])
    else:
        values = FLOOR + e + SEED_OWN * own[..., None]
    values = np.where(t >= diverged_at[..., None], DIVERGED_FACTOR * values, values)
    return np.maximum(values, MINIMUM) * np.exp(EVALUATION * evaluation)


def _divergence(noise: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Per run, the time its FID doubles from (∞ for a run that does not diverge)."""
    if noise != "diverged":
        return np.full(shape, np.inf)
    return np.where(rng.uniform(size=shape) < DIVERGED_SHARE, rng.uniform(size=shape), np.inf)


@functools.cache
def true_log_final(family: str, noise: str, speedup: float) -> float:
    """E[ln FID_final] of a sampler of speed-up c under the model (400 000 draws, fixed seed)."""
    rng = np.random.default_rng(12345)
    u, z = rng.normal(0, SEED_SHARED, TRUTH_DRAWS), rng.normal(size=TRUTH_DRAWS)
    at = _divergence(noise, (TRUTH_DRAWS,), rng)
    c = np.full(TRUTH_DRAWS, speedup)
    values = curves(np.ones(1), family, noise, c, u, z, np.zeros((TRUTH_DRAWS, 1)), at)
    return float(np.mean(np.log(values[:, 0])))


def simulate_values(cell: Cell, replications: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """kimg (P,) and the values (replications, 4 baselines + candidate, seeds, P) of a cell's studies."""
    t = grid_of(cell.grid)
    shape = (replications, BASELINES + 1, cell.seeds)
    c = np.array([1.0] * BASELINES + [cell.speedup])[None, :, None] * np.ones(shape)
    shared = rng.normal(0, SEED_SHARED, (replications, 1, cell.seeds)) * np.ones(shape)
    own = rng.normal(size=shape)
    evaluation = rng.normal(size=(*shape, t.size))
    parts = []
    for noise, part in zip(noises_of(cell), (slice(0, BASELINES), slice(BASELINES, None)), strict=True):
        at = _divergence(noise, c[:, part].shape, rng)
        parts.append(
            curves(t, cell.family, noise, c[:, part], shared[:, part], own[:, part], evaluation[:, part], at)
        )
    values = np.concatenate(parts, axis=1)
    return t * TOTAL_KIMG, values


def noises_of(cell: Cell) -> tuple[str, str]:
    """The noise of the baselines' runs and of the candidate's: the cell's for both, except ``skewed``, where
    the baselines' is ``normal`` and the candidate's ``lognormal`` (a right-skewed sampler against
    symmetric ones)."""
    return ("normal", "lognormal") if cell.noise == "skewed" else (cell.noise, cell.noise)


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


def censored_median(estimate: np.ndarray, low: np.ndarray, high: np.ndarray) -> float:
    """Median of log speed-ups, a comparison without an estimate counted at the side its bound leaves
    open (−∞ below an upper bound, +∞ above a lower bound; left out when unbounded both ways)."""
    side = np.where(
        np.isfinite(high) & ~np.isfinite(low), -np.inf, np.where(np.isfinite(low), np.inf, np.nan)
    )
    values = np.where(np.isnan(estimate), side, estimate).reshape(-1)
    values = values[~np.isnan(values)]
    return float(np.exp(np.median(values))) if values.size else math.nan


def simulate(cell: Cell, replications: int, rng: np.random.Generator) -> dict[str, float]:
    """One cell's rates over ``replications`` studies (module docstring)."""
    kimg, values = simulate_values(cell, replications, rng)
    got = study_statistics(kimg, values)
    truth = np.array(
        [true_log_final(cell.family, noises_of(cell)[0], 1.0)] * BASELINES
        + [true_log_final(cell.family, noises_of(cell)[1], cell.speedup)]
    )
    _, low, high = got["final"]
    final_cover = (low <= truth) & (truth <= high)
    mean, low, high, _ = got["difference"]
    true_difference = truth[-1] - truth[0]
    difference_cover = (low <= true_difference) & (true_difference <= high)
    significant = got["difference_p"] < 1 - CONFIDENCE
    better, worse = significant & (mean < 0), significant & (mean > 0)
    estimate, r_low, r_high = got["ratio"]
    true_ratio = math.log(cell.speedup)
    estimated = ~np.isnan(estimate)
    ratio_cover = ((r_low <= true_ratio) & (true_ratio <= r_high))[estimated]
    significant = got["ratio_p"] < 1 - CONFIDENCE
    sooner, longer = significant & (r_low > 0), significant & (r_high < 0)
    faster, slower = cell.speedup > 1, cell.speedup < 1
    return {
        "coverage final": float(final_cover.mean()),
        "coverage difference": float(difference_cover.mean()),
        "coverage ratio": float(ratio_cover.mean()) if ratio_cover.size else math.nan,
        "power better": float(better.mean()) if true_difference < 0 else math.nan,
        "power worse": float(worse.mean()) if true_difference > 0 else math.nan,
        "false better": 0.0 if true_difference < 0 else float(better.any(-1).mean()),
        "false worse": 0.0 if true_difference > 0 else float(worse.any(-1).mean()),
        "power sooner": float(sooner.mean()) if faster else math.nan,
        "power longer": float(longer.mean()) if slower else math.nan,
        "false sooner": 0.0 if faster else float(sooner.any(-1).mean()),
        "false longer": 0.0 if slower else float(longer.any(-1).mean()),
        "uninformative": float((np.isinf(r_low) & np.isinf(r_high)).mean()),
        "no estimate": float((~estimated).mean()),
        "censored pairs": float((got["censored"] != 0).mean()),
        "outlier named": float(outliers(np.log(values[..., -1])).any(-1).mean()),
        "median speed-up": censored_median(estimate, r_low, r_high),
    }


def _allowed(bound: float, replications: int) -> float:
    """How far a rate may miss ``bound`` before the miss exceeds the bench's Monte Carlo error."""
    return MONTE_CARLO_SE * math.sqrt(bound * (1.0 - bound) / replications)


def verdict(cell: Cell, rates: dict[str, float], replications: int) -> list[str]:
    """The bounds a cell misses beyond its Monte Carlo error (empty: PASS)."""
    missed = []
    if cell.noise != "diverged":
        for key in ("coverage final", "coverage difference", "coverage ratio"):
            bound = RATIO_COVERAGE_AT_SPEEDUP if key == "coverage ratio" and cell.speedup != 1 else COVERAGE
            if rates[key] < bound - _allowed(bound, replications):
                missed.append(f"{key} {rates[key]:.3f} < {bound}")
    for key in ("false better", "false worse", "false sooner", "false longer"):
        if rates[key] > FALSE_RATE + _allowed(FALSE_RATE, replications):
            missed.append(f"{key} {rates[key]:.3f} > {FALSE_RATE}")
    return missed


SYMMETRIC = {("power", "lognormal"), ("flat", "lognormal")}


def symmetry(frame: pd.DataFrame, replications: int) -> pd.DataFrame:
    """Per family, noise, grid and seed count ≥ 5: the power of "longer" at 1/1.5 beside that of "sooner"
    at 1.5. Gated (within ``POWER_GAP`` beyond the Monte Carlo error) where the model is the same under
    exchanging the two samplers up to a time scale (``SYMMETRIC``: power laws with multiplicative noise,
    where the noise is itself a time rescaling); elsewhere reported: an additive FID offset moves a crossing
    less where the curve is steep, so the slower pair's level, higher on the curve, is timed more sharply."""
    lines = []
    keys = ["family", "noise", "grid", "seeds"]
    for key, part in frame[frame["seeds"] >= 5].groupby(keys, sort=False):
        by = part.set_index("true speed-up")
        if not {1 / 1.5, 1.5} <= set(by.index):
            continue
        longer, sooner = float(by.loc[1 / 1.5, "power longer"]), float(by.loc[1.5, "power sooner"])
        if (key[0], key[1]) in SYMMETRIC:
            allowed = POWER_GAP + MONTE_CARLO_SE * math.sqrt(0.5 / (BASELINES * replications))
            result = "PASS" if abs(longer - sooner) <= allowed else "FAIL"
        else:
            result = "reported (not symmetric under exchange)"
        lines.append(
            dict(zip(keys, key, strict=True))
            | {"power longer at 1/1.5": longer, "power sooner at 1.5": sooner, "result": result}
        )
    return pd.DataFrame(lines)


def write_study(root: Path, kimg: np.ndarray, values: np.ndarray) -> None:
    """One study (values of shape (4 + 1, n, P)) as run records: ``runs/<row>/<label>/seed<k>/`` with the
    ``run.json`` and ``records.jsonl`` a finished run leaves (the same fields; written plainly, without the
    runs' atomic replace and fsync, which a scratch folder does not need), FID on the log scale."""
    for label, runs in zip(LABELS, values, strict=True):
        for seed, curve in enumerate(runs):
            folder = root / "runs" / "bench-short-0000000000" / label / f"seed{seed}"
            folder.mkdir(parents=True)
            common = {
                "task": "bench",
                "budget": "short",
                "sampler": label,
                "seed": seed,
                "comparison_hash": "0000000000",
                "config_hash": f"{label}-{seed}",
                "data": "simulated",
            }
            rows = [
                common
                | {
                    "schema_version": 1,
                    "nimg": int(round(k * 1000)),
                    "kimg": float(k),
                    "metric": "fid",
                    "value": float(v),
                    "higher_is_better": False,
                    "scale": "log",
                }
                for k, v in zip(kimg, curve, strict=True)
            ]
            (folder / "records.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
            run = common | {"status": "done", "sampler_name": label}
            (folder / "run.json").write_text(json.dumps(run))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def _log(ratio: object, field: str) -> float:
    """ln of one field of a table's ratio ``Interval`` (−inf at 0; NaN without a ratio)."""
    if ratio is None:
        return math.nan
    value = float(getattr(ratio, field))
    return -math.inf if value == 0 else math.log(value)


def assembly_check(studies: int, rng: np.random.Generator) -> tuple[int, int, list[str]]:
    """Studies written as run records and read back through the table's ``comparison_intervals``: the
    number checked, the number with a censored pair, and every number that differs from the vectorised
    path. Cells with early crossings (3 evaluations, speed-ups 1/2 and 2) supply censored pairs."""
    checked, with_censored, differences = 0, 0, []
    for speedup, seeds in itertools.product((0.5, 2.0), (3, 5)):
        kimg, values = simulate_values(Cell("power", "normal", seeds, "3", speedup), 200, rng)
        got = study_statistics(kimg, values)
        has = (got["censored"] != 0).any(axis=(1, 2))
        chosen = [*np.nonzero(has)[0][: max(1, studies - 1)], *np.nonzero(~has)[0][:1]]
        for study in chosen:
            checked += 1
            with_censored += bool(has[study])
            with tempfile.TemporaryDirectory() as folder:
                write_study(Path(folder), kimg, values[study])
                lines = comparison_intervals(load_records(folder))
            info = (
                lines[lines["sampler"] == LABELS[-1]].set_index("target_sampler").loc[list(TARGET_BASELINES)]
            )
            for j, (_, line) in enumerate(info.iterrows()):
                ratio = line["ratio"]
                pairs = {
                    "difference p": (line["difference_p"], got["difference_p"][study, j]),
                    "ratio p": (line["ratio_p"], got["ratio_p"][study, j]),
                    "ratio": (_log(ratio, "estimate"), got["ratio"][0][study, j]),
                    "ratio low": (_log(ratio, "low"), got["ratio"][1][study, j]),
                    "ratio high": (_log(ratio, "high"), got["ratio"][2][study, j]),
                }
                for name, (table, bench) in pairs.items():
                    if not _same(float(table), float(bench)):
                        differences.append(
                            f"speed-up {speedup:g}, {seeds} seeds, study {study}, {LABELS[j]}: {name} "
                            f"{float(table):.6g} in the table, {float(bench):.6g} in the bench"
                        )
    return checked, with_censored, differences


def interpolation_bias(speedups: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0)) -> pd.DataFrame:
    """Noise-free ratio estimate / true ratio − 1 of one pair of power-law curves, per grid (the cells' two
    and the ``short`` budget's), value axis and true speed-up."""
    lines = []
    for grid in (*GRIDS, "short"):
        t = grid_of(grid)
        kimg = t * TOTAL_KIMG
        zero, never, flat = np.zeros(1), np.full(1, np.inf), np.zeros((1, t.size))
        target = curves(t, "power", "normal", np.ones(1), zero, zero, flat, never)
        for scale in ("log", "linear"):
            line: dict[str, object] = {"grid": grid, "value axis": f"{scale} (kimg: log)"}
            for speedup in speedups:
                candidate = curves(t, "power", "normal", np.full(1, speedup), zero, zero, flat, never)
                log_ratio, _ = pair_log_ratios((kimg, target), (kimg, candidate), False, scale)
                line[f"bias at {speedup:g}×"] = float(np.exp(log_ratio[0]) / speedup - 1)
            lines.append(line)
    return pd.DataFrame(lines)


def holm_power(n: int, effect: float, rng: np.random.Generator, studies: int = 2000) -> float:
    """True power of one Holm-adjusted line at n pairs: a candidate better by ``effect`` (in sd of the
    paired differences) than each of 4 equal baselines, compared with all four."""
    half = math.sqrt(0.5)
    candidate = rng.normal(effect * 1.0, half, (studies, 1, n))
    baselines = rng.normal(0.0, half, (studies, BASELINES, n))
    adjusted = holm(t_limits(candidate - baselines)[3])
    return float((adjusted[:, 0] < 1 - CONFIDENCE).mean())


POWER_GRID = np.unique(np.round(np.geomspace(2, 400, 40)).astype(int))


def seed_plan_power(pilots: int, rng: np.random.Generator) -> pd.DataFrame:
    """Mean true power of seed plans for the Holm verdict over 4 baselines, from pilot standard deviations
    (sd 1), per pilot size, difference and method, and the share of plans below ``POWER``; the true power
    of n pairs is interpolated between simulations at 40 log-spaced n from 2 to 400."""
    lines = []
    level = holm_level(BASELINES)
    for difference in (1.0, 0.5):
        table = np.array([holm_power(int(n), difference, rng) for n in POWER_GRID])
        for pairs in (3, 5):
            spreads = rng.normal(size=(pilots, pairs)).std(-1, ddof=1)
            for method in ("measured sd", UPPER_BOUND):
                plans = np.array(
                    [
                        seeds_needed(
                            difference,
                            float(s) if method == "measured sd" else spread_bound(float(s), pairs),
                            POWER,
                            level,
                        )
                        for s in spreads
                    ]
                )
                powers = np.interp(plans, POWER_GRID, table)
                allowed = MONTE_CARLO_SE * float(powers.std(ddof=1)) / math.sqrt(pilots)
                ok = powers.mean() >= POWER - allowed
                lines.append(
                    {
                        "pilot pairs": pairs,
                        "difference / sd": difference,
                        "plan from": method,
                        "median seeds": float(np.median(plans)),
                        "mean power": float(powers.mean()),
                        "share below 0.8": float((powers < POWER).mean()),
                        "result": "reported" if method == "measured sd" else ("PASS" if ok else "FAIL"),
                    }
                )
    return pd.DataFrame(lines).sort_values(["pilot pairs", "difference / sd"], ascending=[True, False])


def table_markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    lines = [header, "| " + " | ".join("---" for _ in frame.columns) + " |"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Bench:
    cells: pd.DataFrame
    symmetry: pd.DataFrame
    assembly: tuple[int, int, list[str]]
    bias: pd.DataFrame
    plans: pd.DataFrame

    @property
    def ok(self) -> bool:
        return bool(
            self.cells["result"].eq("PASS").all()
            and not self.symmetry["result"].eq("FAIL").any()
            and not self.assembly[2]
            and not self.plans["result"].eq("FAIL").any()
        )


def run(replications: int, seed: int, pilots: int, quick: bool = False) -> Bench:
    """Every cell, the symmetry of the two directions, the assembly check, the interpolation bias and the
    seed plans."""
    rng = np.random.default_rng(seed)
    lines = []
    for cell in cells(quick):
        rates = simulate(cell, replications, rng)
        missed = verdict(cell, rates, replications)
        lines.append(
            {
                "family": cell.family,
                "noise": cell.noise,
                "seeds": cell.seeds,
                "grid": cell.grid,
                "true speed-up": cell.speedup,
            }
            | rates
            | {"result": "PASS" if not missed else "FAIL: " + "; ".join(missed)}
        )
    frame = pd.DataFrame(lines)
    assembly = assembly_check(2 if quick else 3, rng)
    plans = seed_plan_power(pilots, rng)
    return Bench(frame, symmetry(frame, replications), assembly, interpolation_bias(), plans)


def print_simulation(replications: int, pilots: int, seed: int, quick: bool = False) -> int:
    """``suite bench statistics``: print the cells of ``replications`` studies each, the symmetry of the two
    time directions, the assembly check, the interpolation bias and the seed plans of ``pilots`` pilot
    studies (simulation ``seed``); exit 1 when a bound is missed."""
    if replications < 20:
        raise ValueError(f"--replications {replications}: give at least 20 studies per cell")
    started = time.perf_counter()
    bench = run(replications, seed, pilots, quick)
    mode = "quick" if quick else "full"
    print(
        f"suite bench statistics ({mode}) · {replications} studies per cell · seed {seed} · "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print(table_markdown(bench.cells), end="\n\n")
    print("Both directions of the time ratio (power per comparison line):\n")
    print(table_markdown(bench.symmetry), end="\n\n")
    checked, censored, differences = bench.assembly
    print(
        f"Assembly: {checked} studies written as run records and read back through comparison_intervals "
        f"({censored} with a censored pair): "
        + (
            "every number equal to the bench's: PASS"
            if not differences
            else "FAIL:\n  " + "\n  ".join(differences)
        ),
        end="\n\n",
    )
    print("Ratio bias of the crossing without noise (ratio estimate / true speed-up − 1):\n")
    print(table_markdown(bench.bias), end="\n\n")
    print(f"Seed plans for the Holm verdict over {BASELINES} baselines ({pilots} pilots each; true sd 1):\n")
    print(table_markdown(bench.plans), end="\n\n")
    print("every cell within its bounds" if bench.ok else "a bound is missed (FAIL above)")
    sys.stdout.flush()
    return 0 if bench.ok else 1
