"""The post hoc information profile: peak and band against closed forms on the analytic test beds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from suite.cli import main
from suite.config import compose_run
from suite.measure.profile import (
    SETTINGS,
    ProfileNotApplicable,
    coordinate_bound,
    exact_point_set,
    linear_bound,
    profile_report,
    task_examples,
)
from suite.noise.analytic import GaussianData, PointSetData
from suite.noise.information import gaussian_mmse, point_set_mmse
from suite.report.profile import ProfileCurve
from suite.task import TASKS
from tests.plugins import seqtoy
from tests.plugins.seqtoy import SequenceToy

PLUGIN_TASK = Path(seqtoy.__file__).parent / "conf" / "task" / "seqtoy.yaml"
SIGMA = np.geomspace(0.002, 80.0, 41)
STEP = math.log(SIGMA[1] / SIGMA[0])


def assert_same_figures(curve: ProfileCurve, exact: ProfileCurve, lines: list[str]) -> None:
    """Peak and both band ends within one grid step (in ln σ) of the exact curve's, and printed."""
    assert abs(math.log(curve.peak() / exact.peak())) <= STEP + 1e-12
    for mine, truth in zip(curve.band(), exact.band(), strict=True):
        assert abs(math.log(mine / truth)) <= STEP
    assert any(curve.summary() in line for line in lines)


def test_two_point_test_bed_prints_the_exact_profile():
    gen = torch.Generator().manual_seed(0)
    x = PointSetData(torch.tensor([[-1.0], [1.0]])).sample(2000, gen)
    report = profile_report(x, SIGMA, SETTINGS["smoke"])
    exact = ProfileCurve(
        "truth", "±1", SIGMA, point_set_mmse(torch.as_tensor(SIGMA), torch.tensor([-1.0, 1.0])).numpy()
    )
    lines = report.lines()
    assert report.headline.key == "exact"
    assert_same_figures(report.headline, exact, lines)
    assert f"peak σ = {report.headline.peak():.4g}" in lines[0]
    assert f"σ ∈ [{report.headline.band()[0]:.4g}, {report.headline.band()[1]:.4g}]" in lines[1]
    # two points cannot be memorised beyond what the data are: the empirical prior agrees too
    assert_same_figures(report.empirical.curve(), exact, lines)


def test_gaussian_test_bed_linear_bound_is_the_exact_profile():
    gen = torch.Generator().manual_seed(1)
    x = GaussianData(variance=0.25, dim=16).sample(4000, gen)
    report = profile_report(x, SIGMA, SETTINGS["smoke"])
    exact = ProfileCurve(
        "truth", "N(0, 0.25 I)", SIGMA, gaussian_mmse(torch.as_tensor(SIGMA), 0.25, dim=16).numpy()
    )
    linear = next(c for c in report.curves if c.key == "linear")
    assert_same_figures(linear, exact, report.lines())
    assert report.headline.key == "empirical" and any("no exact profile" in n for n in report.notes)
    # the empirical prior memorises: its profile sits at larger σ than the data's
    assert report.empirical.curve().band()[0] > 10 * exact.band()[0]
    assert report.empirical.memorisation_sigma > 0.1


def test_memorisation_diagnostics_run_from_one_point_to_the_prior():
    gen = torch.Generator().manual_seed(2)
    x = GaussianData(variance=1.0, dim=8).sample(300, gen)
    d = profile_report(x, SIGMA, SETTINGS["smoke"]).empirical.diagnostics
    assert d is not None
    assert float(d.max_weight[0]) == pytest.approx(1.0, abs=1e-6)
    assert float(d.effective_count[0]) == pytest.approx(1.0, abs=1e-6)
    assert float(d.effective_count[-1]) == pytest.approx(300, rel=0.05)


def test_coordinate_bound_is_exact_for_independent_binary_coordinates():
    """Three independent ±1 coordinates with P(+1) = 0.2, 0.5, 0.7: the coordinate-wise MMSE is the MMSE."""
    gen = torch.Generator().manual_seed(3)
    p = torch.tensor([0.2, 0.5, 0.7])
    x = torch.where(torch.rand(20000, 3, generator=gen) < p, 1.0, -1.0)
    bound = coordinate_bound(x, SIGMA, max_levels=16)
    assert bound is not None
    freq = (x > 0).to(torch.float64).mean(0)
    truth = sum(
        point_set_mmse(torch.as_tensor(SIGMA), torch.tensor([-1.0, 1.0]), torch.stack([1 - q, q]))
        for q in freq
    )
    assert np.allclose(bound.mmse, truth.numpy(), rtol=1e-10, atol=1e-14)
    exact = exact_point_set(x, SIGMA, max_points=64, n_mc=4096, generator=gen)
    assert exact is not None
    visible = bound.mmse > 1e-3 * bound.mmse.max()  # Monte Carlo misses the rare errors far below
    assert np.allclose(exact.mmse[visible], bound.mmse[visible], rtol=0.05)


def test_bounds_lie_above_the_exact_mmse_of_correlated_data():
    """Two points (1, 1) and (−1, −1): each coordinate alone tells less than both together."""
    x = torch.tensor([[1.0, 1.0], [-1.0, -1.0]]).repeat(50, 1)
    exact = exact_point_set(x, SIGMA, max_points=64, n_mc=8192, generator=torch.Generator().manual_seed(4))
    coordinate = coordinate_bound(x, SIGMA, max_levels=16)
    linear = linear_bound(x, SIGMA)
    assert exact is not None and coordinate is not None
    assert np.all(coordinate.mmse >= exact.mmse * 0.99)
    assert np.all(linear.mmse >= exact.mmse * 0.99)
    assert coordinate.mmse[20] > 1.2 * exact.mmse[20]
    assert coordinate_bound(torch.randn(50, 2), SIGMA, max_levels=16) is None


def test_a_task_that_declares_a_learned_model_space_says_why_the_profile_does_not_apply():
    assert TASKS.get("owt").model_space == "learned"
    with pytest.raises(ProfileNotApplicable, match="learned model space"):
        task_examples(TASKS.get("owt")(compose_run("owt", "edm", "smoke").task))


def test_task_examples_are_the_flattened_examples_of_the_training_split(tmp_path: Path):
    task_cfg = OmegaConf.to_container(OmegaConf.load(PLUGIN_TASK))
    task_cfg |= SequenceToy.example_data(tmp_path, 5)
    train = SequenceToy(OmegaConf.create(task_cfg)).load().train
    examples = train.batch(torch.arange(5), torch.device("cpu")).x0
    x, variant, total = task_examples(SequenceToy(OmegaConf.create(task_cfg)))
    assert x.shape == (5, 4 * 32) and total == 5 and variant == "toy sequences (5)"
    assert torch.equal(x, examples.reshape(5, -1))
    subset, _, total = task_examples(SequenceToy(OmegaConf.create(task_cfg)), max_rows=2)
    assert subset.shape == (2, 4 * 32) and total == 5
    assert all(any(torch.equal(row, example) for example in x) for row in subset)


def test_a_subset_never_claims_the_exact_profile():
    x = torch.tensor([[-1.0], [1.0]]).repeat(10, 1)
    report = profile_report(x, SIGMA, SETTINGS["smoke"], total=100)
    assert report.headline.key == "empirical"
    assert any("needs every example" in note for note in report.notes)


def test_a_results_override_contradicting_the_flag_is_refused_before_any_profile_is_computed(
    tmp_path, capsys
):
    argv = ["profile", "--task", "ring2d", f"results={tmp_path / 'a'}", "--results", str(tmp_path / "b")]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(
        f"error: the override results={tmp_path / 'a'} contradicts --results"
    )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_profile_out_inside_a_finished_run_folder_is_refused_before_any_profile_is_computed(tmp_path, capsys):
    run = tmp_path / "runs" / "ring2d-smoke-aaaa000000" / "edm" / "seed0"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"status": "done"}')
    assert main(["profile", "--task", "ring2d", "--out", str(run / "profiles")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {run / 'profiles'} is inside the run folder {run}, which only its")
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]


def test_profile_results_naming_a_file_is_refused_before_any_profile_is_computed(tmp_path, capsys):
    file = tmp_path / "results.txt"
    file.write_text("not a folder")
    assert main(["profile", "--task", "ring2d", "--results", str(file)]) == 2
    assert capsys.readouterr().err == (
        f"error: --results {file} is a file; give a results folder (the one holding runs/)\n"
    )
