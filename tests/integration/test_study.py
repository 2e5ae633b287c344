"""Studies run end to end through the CLI: a CPU smoke study's table shows exactly its grid, and the study
packed two runs per device writes the records of the study run one at a time."""

from __future__ import annotations

import math
import subprocess

import pytest

from suite.cli import main
from suite.config import compose_run, group_options
from suite.launch.cluster import max_array_size
from suite.launch.packed import usable_cores
from suite.launch.study import load_study
from suite.records import read_jsonl
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env
from tests.integration.test_faults import without_timing
from tests.unit.test_study import REDUCED, study_file

TINY = [
    "budget.kimg=0.192",
    "budget.batch=32",
    "budget.tick_kimg=0.064",
    "budget.checkpoint_kimg=0.096",
    "budget.eval_points=2",
    "budget.eval.samples=32",
    "budget.eval.reference=64",
    "budget.eval.batch_size=32",
    "budget.lr_rampup_kimg=0.064",
    "budget.adaptive.warmup_steps=2",
    "budget.adaptive.refresh_every=2",
    "task.metrics.fid.feature_extractor=rand-test",
    "task.metrics.fid.batch_size=32",
    "task.solver_steps=3",
    "task.network.model_channels=8",
    "task.network.channel_mult=[1,2]",
]


def cli(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def markdown_rows(text: str) -> list[dict[str, str]]:
    """The first Markdown table of ``text`` as dicts of cells."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]
    ]


@pytest.mark.slow
def test_a_smoke_study_runs_end_to_end_and_its_table_shows_exactly_its_grid(tmp_path, capsys):
    data = write_mnist_format(tmp_path / "fashion-idx")
    results = tmp_path / "results"
    path = study_file(tmp_path, seeds=3, samplers=["edm", "logu"], overrides=TINY)
    ran = cli("run", "--study", str(path), "--results", str(results), f"task.root={data}")
    assert ran.stdout.count("  done         bfashion/smoke/") == 6
    # a run outside the grid in the same comparison: edm's seed 3 (seeds 0-2 are done already)
    extra = cli(
        "run",
        "--task",
        "bfashion",
        "--sampler",
        "edm",
        "--seeds",
        "4",
        "--results",
        str(results),
        f"task.root={data}",
        *TINY,
    )
    assert extra.stdout.count("done already: ") == 3

    assert main(["table", "--results", str(results), "--format", "md"]) == 0
    (everything,) = markdown_rows(capsys.readouterr().out)
    assert everything["seeds"] == "3–4"
    assert main(["table", "--results", str(results), "--study", str(path), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "6 of 6 run(s) in the tables; 0 missing" in out
    (row,) = markdown_rows(out)
    assert row["seeds"] == "3" and row["task"] == "bfashion"
    for sampler in ("edm", "logu"):  # each cell: the mean of its sampler's three final values
        finals = []
        for seed in range(3):
            (folder,) = results.glob(f"runs/*/{sampler}/seed{seed}")
            finals.append(max(read_jsonl(folder / "records.jsonl"), key=lambda r: r["kimg"])["value"])
        assert row[sampler].strip("*").startswith(f"{sum(finals) / 3:.2f} ± ")
    assert all(row[s] == "–" for s in group_options("sampler") if s not in ("edm", "logu"))

    wider = study_file(tmp_path, "wider.yaml", seeds=3, samplers=["edm", "logu", "cos"], overrides=TINY)
    assert main(["table", "--results", str(results), "--study", str(wider), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "6 of 9 run(s) in the tables; 3 missing:" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("  missing ")] == [
        f"bfashion/smoke/cos/seed{k}" for k in range(3)
    ]


@pytest.mark.slow
def test_a_study_packed_two_per_device_gives_the_records_of_the_study_run_one_at_a_time(tmp_path):
    data = write_mnist_format(tmp_path / "fashion-idx")
    path = study_file(tmp_path, samplers=["edm", "infonoise"], overrides=TINY)
    threads = str(max(1, usable_cores() // 2))  # what each of two packed children gets
    found = {}
    for name, flags in (("one", []), ("packed", ["--runs-per-gpu", "2"])):
        results = tmp_path / name
        done = subprocess.run(
            cli_command("run", "--study", str(path), "--results", str(results), *flags, f"task.root={data}"),
            env=cli_env(OMP_NUM_THREADS=threads),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count("  done         bfashion/smoke/") == 2
        found[name] = {
            folder.relative_to(results).as_posix(): without_timing(read_jsonl(folder / "records.jsonl"))
            for folder in sorted(results.glob("runs/*/*/seed0"))
        }
    assert len(found["one"]) == 2
    assert found["packed"] == found["one"]


@pytest.mark.slow
def test_reduced_bfashion_dry_run_prints_the_grid_the_cost_and_the_slurm_arrays(tmp_path, capsys):
    from suite.launch.cost import planned_cost
    from suite.run.spec import run_spec

    argv = ["run", "--study", str(REDUCED), "--dry-run", "--results", str(tmp_path)]
    assert main([*argv, "--launcher", "slurm", "--partition", "gpu-x"]) == 0
    out = capsys.readouterr().out
    samplers = group_options("sampler")
    assert "27 run(s):" in out
    for sampler in samplers:
        for seed in range(3):
            assert f"[    pending] bfashion/short/{sampler}/seed{seed} " in out
    assert not list(tmp_path.iterdir())  # nothing written
    study = load_study(REDUCED)
    cost = planned_cost(run_spec(compose_run("bfashion", "edm", "short", list(study.overrides))))
    assert cost["examples"] == 256_000
    (row,) = [line.split() for line in out.splitlines() if line.startswith("  bfashion ")]
    (total,) = [line.split() for line in out.splitlines() if line.startswith("  total ")]
    assert row[1:3] == ["27", f"{cost['gflop_per_example']:.4g}"]
    assert float(row[4]) == pytest.approx(cost["device_hours"], rel=1e-2)
    assert float(row[5]) == float(total[2]) == pytest.approx(27 * cost["device_hours"], rel=1e-2)
    arrays = math.ceil(27 / max_array_size())
    assert f": {arrays} array(s) of 27 run(s); 0 run(s) done already" in out
    assert "run(s) of bfashion (gpu-x, 0 GPU(s)" in out
