"""``suite eval``: re-scoring a finished run's saved snapshots without the trainer, on runs launched through
the CLI: a recorded point recomputed exactly, the infogrid rows beside the Karras rows, refusals naming the
valid choices."""

import json
import subprocess
from pathlib import Path

import pytest

from suite import cli
from suite.records import read_jsonl
from tests.helpers import fid_extractor  # noqa: F401  (registers "rand-test", which TINY names)
from tests.helpers.datagen import write_mnist_format
from tests.helpers.subprocesses import cli_command, cli_env
from tests.helpers.tiny import TINY
from tests.unit.test_table import inserted_lines


def suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    data = write_mnist_format(tmp_path_factory.mktemp("idx"))
    results = tmp_path_factory.mktemp("results")
    done = suite("run", "--task", "bfashion", "--sampler", "infonoise", "--results", str(results),
                 f"task.root={data}", *TINY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder,) = results.glob("runs/*/infonoise/seed0")
    return folder


def test_eval_recomputes_a_recorded_point_exactly_and_adds_no_row(run_dir):
    before = read_jsonl(run_dir / "records.jsonl")
    out = suite("eval", str(run_dir), "--kimg", "0.192")
    assert out.returncode == 0, out.stderr
    (recorded,) = [r for r in before if r["kimg"] == 0.192]
    assert f"{recorded['value']:.6g} (recorded {recorded['value']:.6g})" in out.stdout
    assert read_jsonl(run_dir / "records.jsonl") == before


def test_eval_on_the_infogrid_writes_labelled_rows_beside_the_karras_rows_once(run_dir):
    for _ in range(2):
        out = suite("eval", str(run_dir), "--grid", "infogrid", "--steps", "3")
        assert out.returncode == 0, out.stderr
    rows = read_jsonl(run_dir / "records.jsonl")
    karras = [(r["kimg"], r["nfe"]) for r in rows if r["grid"] == "karras"]
    infogrid = [(r["kimg"], r["nfe"]) for r in rows if r["grid"] == "infogrid"]
    # InfoNoise learned its first profile at the end (a batch of 16 fills its bins slowly): the earlier
    # snapshot has none and is skipped on the InfoGrid.
    assert karras == [(0.192, 7), (0.384, 7)] and infogrid == [(0.384, 5)]
    assert "kimg 0.192: no learned profile yet" in out.stdout
    out = suite("eval", str(run_dir), "--grid", "infogrid-rescaled", "--steps", "3", "--kimg", "0.384")
    assert out.returncode == 0, out.stderr
    rescaled = [r for r in read_jsonl(run_dir / "records.jsonl") if r["grid"] == "infogrid-rescaled"]
    assert [(r["kimg"], r["nfe"]) for r in rescaled] == [(0.384, 5)]


def test_eval_names_the_valid_choices_for_a_bad_point_metric_or_grid(run_dir, capsys):
    before = (run_dir / "records.jsonl").read_bytes()
    for args, message in (
        (["--kimg", "0.3"], "valid kimg: 0.192, 0.384"),
        (["--metric", "mauve"], "unknown metric 'mauve' for task bfashion; valid metrics: fd-rand-test"),
        (["--grid", "linear"], "unknown solver grid 'linear'; valid grids: karras, infogrid"),
    ):
        assert cli.main(["eval", str(run_dir), *args]) == 2
        err = capsys.readouterr().err
        assert message in err, err
    assert (run_dir / "records.jsonl").read_bytes() == before


def published(results: Path, capsys) -> tuple[dict[str, str], dict[str, bytes]]:
    """What ``suite table`` (md, csv) and ``suite report`` publish, run through the CLI's entry point in this
    process: the texts (the report without its time stamp line) and the bytes of every PNG figure (``suite
    report`` writes them as ``suite plot`` does)."""
    texts = {}
    capsys.readouterr()
    for fmt in ("md", "csv"):
        assert cli.main(["table", "--results", str(results), "--format", fmt]) == 0
        texts[fmt] = capsys.readouterr().out
    assert cli.main(["report", "--results", str(results)]) == 0
    report = (results / "REPORT.md").read_text().splitlines()
    texts["report"] = "\n".join(line for line in report if not line.startswith("Written "))
    return texts, {p.name: p.read_bytes() for p in (results / "figures").glob("*.png")}


def test_rescoring_on_infogrid_adds_labelled_rows_and_leaves_every_published_row_as_it_was(tmp_path, capsys):
    """EDM and InfoNoise trained on the same data; InfoNoise re-scored with `suite eval --grid infogrid`
    (the task's 4 steps) and `--grid infogrid-rescaled --steps 8`. Every line of the tables and the report
    and every figure stay as they were; the re-scored rows appear as rows, figures, records and commands of
    their own, labelled with their grid and steps."""
    data = write_mnist_format(tmp_path / "idx")
    results = tmp_path / "results"
    done = suite("run", "--task", "bfashion", "--sampler", "edm,infonoise", "--results", str(results),
                 f"task.root={data}", *TINY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    before, figures = published(results, capsys)
    (infonoise,) = results.glob("runs/*/infonoise/seed0")
    for args in (["--grid", "infogrid"], ["--grid", "infogrid-rescaled", "--steps", "8"]):
        out = suite("eval", str(infonoise), *args)
        assert out.returncode == 0, out.stderr
    after, figures_after = published(results, capsys)
    labels = ["(re-scored: InfoGrid rescaled, 8 steps)", "(re-scored: InfoGrid, 4 steps)"]
    for fmt in ("md", "csv"):
        added = inserted_lines(before[fmt], after[fmt])
        found = [label for line in added for label in labels if label in line]
        assert set(found) == set(labels) and len(found) == len(added), added  # every added row labelled
    added = [line for line in inserted_lines(before["report"], after["report"]) if line]
    assert all("InfoGrid" in line or "infogrid" in line for line in added), added
    assert f"suite eval {infonoise} --grid infogrid --steps 4 --kimg 0.384" in added
    assert f"suite eval {infonoise} --grid infogrid-rescaled --steps 8 --kimg 0.384" in added
    assert {name: figures_after[name] for name in figures} == figures
    (stem,) = {name.split("_")[0] for name in figures}
    slugs = ("infogrid-4steps", "infogrid-rescaled-8steps")
    assert set(figures_after) - set(figures) == {f"{stem}_quality-fd-rand-test-{slug}.png" for slug in slugs}


@pytest.mark.parametrize("guidance", ["3", "0", "-1", "nan", "inf"])
def test_eval_refuses_guidance_on_an_unconditional_task_and_outside_zero_to_infinity(
    run_dir, guidance, capsys
):
    before = (run_dir / "records.jsonl").read_bytes()
    assert cli.main(["eval", str(run_dir), "--guidance", guidance]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --guidance: guidance {float(guidance)!r}: ")
    positive = float(guidance) > 0 and float(guidance) != float("inf")
    assert ("the task is unconditional" if positive else "must be a number in (0, inf)") in err
    assert (run_dir / "records.jsonl").read_bytes() == before


@pytest.mark.slow
def test_nan_statistics_in_the_cache_are_named_and_computed_again_and_the_run_scores_as_with_a_clean_cache(
    tmp_path, monkeypatch, capsys
):
    import numpy as np

    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    data = write_mnist_format(tmp_path / "idx")
    tiny = [*TINY, "budget.kimg=0.032", "budget.eval_points=1", "budget.checkpoint_kimg=0.032"]

    def run(seed: str) -> int:
        argv = ["run", "--task", "bfashion", "--sampler", "edm", "--seeds", seed, "--results", str(tmp_path)]
        return cli.main([*argv, f"task.root={data}", *tiny])

    assert run("0-0") == 0  # writes the reference statistics into the cache
    (cached,) = (tmp_path / "cache" / "fid-stats").glob("*.npz")
    with np.load(cached) as archive:
        np.savez(cached, mu=np.full_like(archive["mu"], np.nan), sigma=archive["sigma"])
    capsys.readouterr()
    assert run("1-1") == 0
    err = capsys.readouterr().err
    assert (
        err.count(f"warning: cache {cached}: its mu holds 32 non-finite value(s) (NaN or inf); recomputing")
        == 1
    )
    (folder,) = tmp_path.glob("runs/*/edm/seed1")
    fid = [row["value"] for row in read_jsonl(folder / "records.jsonl") if row["metric"] == "fd-rand-test"]
    assert len(fid) == 1 and np.isfinite(fid[0])
    assert json.loads((folder / "run.json").read_text())["status"] == "done"
    with np.load(cached, allow_pickle=False) as archive:
        assert np.isfinite(archive["mu"]).all() and "proof" in archive.files
