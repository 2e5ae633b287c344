"""Whole figure sets and the report, drawn end to end in process from synthetic run folders: each test draws
every figure of a results folder, PNG and PDF (seconds per figure on a CPU core). The single figures and
what they draw are tested in the unit tier (``tests/unit/test_plots.py``), whose fixtures these share."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from suite.report.plots import plot_results, write_figures
from suite.report.profile import write_posthoc
from suite.report.report import write_report
from suite.report.rows import load_published, load_records
from suite.report.table_command import print_tables
from suite.report.three_tables import render_tables
from tests.unit.test_plots import KIMG, assert_figure, config, tiny_profile
from tests.unit.test_plots import results as results  # the fixture: two seeds of four samplers with records
from tests.unit.test_table import rescore


def test_plot_main_writes_png_and_pdf_from_the_saved_profile_without_data(results: Path, capsys):
    task_cfg = config({})["task"]
    sigma = np.geomspace(0.002, 80.0, 41)
    write_posthoc(results / "profiles", task_cfg, tiny_profile(task_cfg, sigma), "tiny")
    assert plot_results(str(results)) == 0
    written = [Path(line.removeprefix("wrote ")) for line in capsys.readouterr().out.splitlines()]
    names = {p.name for p in written}
    stem = "fashion-smoke-aaaa000000"
    for kind in ("alignment", "infonoise-profile", "quality-fid", "pmean-sweep-fid"):
        for suffix in (".png", ".pdf"):
            assert f"{stem}_{kind}{suffix}" in names
    for path in written:
        assert_figure(path)
        assert path.parent == results / "figures"


def test_report_links_figures_and_commands_and_shows_the_tables_suite_table_prints(results: Path, capsys):
    for run in results.rglob("config.yaml"):  # real, composable configs for the command reconstruction
        from omegaconf import OmegaConf

        from suite.config import compose_run

        sampler = OmegaConf.load(run)["sampler"]
        overrides = ["sampler.p_mean=0.0"] if sampler.get("p_mean") == 0.0 else []
        run.write_text(OmegaConf.to_yaml(compose_run("fashion", sampler["name"], "smoke", overrides)))
    out = write_report(results, profile_fn=tiny_profile)
    text = out.read_text()
    assert "![alignment](figures/fashion-smoke-aaaa000000_alignment.png)" in text
    assert "| fashion | smoke (budget: suite choice) | fid ↓ |" in text  # the comparison table
    assert "| fashion | smoke | fid ↓ |" in text  # the statistics table
    assert "suite run --task fashion --sampler edm --budget smoke --seeds 2 --results" in text
    assert "sampler.p_mean=0.0" in text
    # Target: EDM's seed-mean final 10.5, which EDM first reaches at kimg 8 and InfoNoise between kimg 4
    # (14) and 8 (6), interpolated in ln kimg × ln FID: 4·2^(ln(10.5/14)/ln(6/14)), so the speed-up is
    # 8 over that.
    crossing = 4 * 2 ** (math.log(10.5 / 14) / math.log(6 / 14))
    assert f"{8 / crossing:.2f}×" in text
    capsys.readouterr()
    assert print_tables(str(results), fmt="md") == 0
    printed = capsys.readouterr().out
    tables = render_tables(load_records(results), "md", published=load_published(results))
    assert len(tables) == 3 and all(table in printed and table in text for table in tables)


def test_rescored_rows_get_their_own_figure_and_leave_the_quality_figures_as_drawn(results: Path):
    """InfoNoise re-scored on InfoGrid at every point, with values far from its Karras ones: the quality and
    P_mean sweep figures are the same bytes as before (no InfoGrid value enters a mean or a std band), and
    the InfoGrid values are drawn in a figure of their own."""
    figures = results / "figures"
    drawn = {p.name for p in write_figures(results, tiny_profile)}
    before = {p.name: p.read_bytes() for p in figures.glob("*.png")}
    for run in results.glob("runs/*/infonoise/seed*"):
        rescore(run, "infogrid", 15, {k: 1.0 + int(run.name[-1]) for k in KIMG})
    written = {p.name for p in write_figures(results, tiny_profile)}
    assert {name: (figures / name).read_bytes() for name in before} == before
    stem = "fashion-smoke-aaaa000000"
    assert written - drawn == {f"{stem}_quality-fid-infogrid-15steps{s}" for s in (".png", ".pdf")}
