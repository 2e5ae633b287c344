"""Figures and the report on synthetic run folders (tiny, injected information profiles keep them fast)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.collections import PathCollection
from omegaconf import OmegaConf

from suite.config import compose_run, to_dict
from suite.measure.profile import empirical_profile
from suite.noise.weighting import EDMWeight, UniformWeight
from suite.report.allocations import final_allocation
from suite.report.figures import effective_allocation, registered_densities
from suite.report.plots import discover_runs, plot_alignment, plot_results, plot_sampler_densities
from suite.report.profile import PosthocProfile, posthoc_path, saved_profile, write_posthoc
from suite.report.quality_figure import figure_target, quality_figure
from suite.report.report import config_overrides, hydra_value, reproduce_command
from suite.report.rows import load_records
from suite.report.sweep_figure import allocation_median
from tests.plugins import mog2d
from tests.plugins.mog2d import MixtureOfGaussians
from tests.unit.test_table import final_protocol_run, write_run

PLUGIN_TASK = Path(mog2d.__file__).parent / "conf" / "task" / "mog2d.yaml"
U = np.linspace(math.log(0.002), math.log(80.0), 129)
CENTRES = np.linspace(U[0], U[-1], 17)[:-1] + (U[-1] - U[0]) / 32
KIMG = [2.0, 4.0, 8.0]


def normal(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    return np.exp(-0.5 * ((u - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi))


def fixed_log(mean: float) -> list[dict]:
    return [{"nimg": 0, "kimg": 0.0, "u": U.tolist(), "density": normal(U, mean, 1.2).tolist()}]


def infonoise_log() -> list[dict]:
    rows = []
    for i, k in enumerate([1.0, 3.0, 6.0]):
        rho = normal(CENTRES, -1.0 + 0.2 * i, 1.0)
        rows.append(
            {
                "nimg": int(k * 1000),
                "kimg": k,
                "u": U.tolist(),
                "density": normal(U, -1.0, 1.0).tolist(),
                "cdf_change": 0.1 / (i + 1),
                "gate_c": 0.15,
                "step": 10 * (i + 1),
                "profile": {
                    "u": CENTRES.tolist(),
                    "m_hat": (784 * np.exp(2 * CENTRES)).tolist(),
                    "rho": rho.tolist(),
                    "pi": rho.tolist(),
                },
            }
        )
    return rows


def kg_log() -> list[dict]:
    return [
        {
            "nimg": int(k * 1000),
            "kimg": k,
            "u": U.tolist(),
            "density": normal(U, 0.0, 2.0).tolist(),
            "cdf_change": 0.2 / (i + 1),
            "step": 10 * (i + 1),
        }
        for i, k in enumerate([1.0, 3.0, 6.0])
    ]


def config(sampler: dict) -> dict:
    """The resolved config of a fashion smoke run of ``sampler`` (its name and parameters)."""
    params = {k: v for k, v in sampler.items() if k != "name"}
    overrides = [f"sampler.{k}={v}" for k, v in params.items()]
    return to_dict(compose_run("fashion", sampler.get("name", "edm"), "smoke", overrides))


def tiny_profile(task_cfg: dict, sigma: np.ndarray) -> PosthocProfile:
    """Empirical-prior-like MMSE of a 784-dimensional set: D·v·σ²/(v+σ²) cut off below σ = 1."""
    mmse = 784 * 0.25 * sigma**2 / (0.25 + sigma**2) * (sigma > 1.0)
    return PosthocProfile(sigma, mmse, nn_distance=6.0, n_points=64, dim=784)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    edm_hyper = {"name": "edm", "p_mean": -1.2, "p_std": 1.2}
    for seed in range(2):
        write_run(
            tmp_path,
            "fashion",
            "edm",
            seed,
            list(zip(KIMG, [30.0, 20.0, 10.0 + seed], strict=True)),
            config=config({"name": "edm", "p_mean": -1.2, "p_std": 1.2}),
            sampler_log=fixed_log(-1.2),
            hyper=edm_hyper,
        )
        write_run(
            tmp_path,
            "fashion",
            "edm[p_mean=0.0]",
            seed,
            list(zip(KIMG, [35.0, 25.0, 15.0], strict=True)),
            config=config({"name": "edm", "p_mean": 0.0, "p_std": 1.2}),
            sampler_log=fixed_log(0.0),
            hyper=edm_hyper | {"p_mean": 0.0},
        )
        write_run(
            tmp_path,
            "fashion",
            "infonoise",
            seed,
            list(zip(KIMG, [25.0, 14.0, 6.0], strict=True)),
            config=config({"name": "infonoise"}),
            sampler_log=infonoise_log(),
            hyper={"name": "infonoise"},
        )
        write_run(
            tmp_path,
            "fashion",
            "kg",
            seed,
            list(zip(KIMG, [28.0, 18.0, 9.0], strict=True)),
            config=config({"name": "kg"}),
            sampler_log=kg_log(),
            hyper={
                "name": "kg",
                "importance_correction": True,
                "base": {"name": "edm", "p_mean": -1.2, "p_std": 1.2, "sigma_min": 0.002, "sigma_max": 80.0},
            },
        )
    return tmp_path


def assert_figure(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 5000, path


def test_sampler_densities_png(tmp_path: Path):
    out = tmp_path / "samplers.png"
    plot_sampler_densities(out, weight="edm", sigma_data=0.5)
    assert_figure(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_effective_allocation_is_normalised_pi_times_w():
    phi = effective_allocation(U, normal(U, -1.2, 1.2), EDMWeight(0.5))
    assert np.trapezoid(phi, U) == pytest.approx(1.0)
    w = EDMWeight(0.5)(torch.as_tensor(np.exp(U))).numpy()
    ratio = phi / (normal(U, -1.2, 1.2) * w)
    assert np.allclose(ratio, ratio[0])
    # with w = 1, φ = π = N(−1.2, 0.5²) in u (negligibly truncated): its median σ is e^−1.2
    flat = effective_allocation(U, normal(U, -1.2, 0.5), UniformWeight())
    assert allocation_median(U, flat) == pytest.approx(math.exp(-1.2), rel=1e-3)


def test_kg_importance_corrected_allocation_is_the_base_priors(results: Path):
    runs = next(iter(discover_runs(results).values()))
    kg = next(r for r in runs if r.label == "kg")
    edm = next(r for r in runs if r.label == "edm")
    u_kg, phi_kg = final_allocation(kg)
    u_edm, phi_edm = final_allocation(edm)
    assert np.allclose(phi_kg, phi_edm, rtol=1e-6, atol=1e-9)


def test_alignment_without_a_profile(results: Path, tmp_path: Path):
    """Data not on this machine: the alignment figure is still written, without the profile (why is said in
    the caption file and on stderr, never inside the image)."""
    runs = next(iter(discover_runs(results).values()))
    written = plot_alignment(runs, None, "no data", tmp_path / "alignment")
    for path in written:
        assert_figure(path)


def test_empirical_profile_through_a_task_plugin(tmp_path: Path):
    """The default profile loads the training split through the task registry: the mixture plugin's 32 points
    are memorised at small σ and cost their total variance at large σ."""
    task_cfg = OmegaConf.to_container(OmegaConf.load(PLUGIN_TASK))
    task_cfg |= MixtureOfGaussians.example_data(tmp_path, 32)
    points = torch.from_numpy(np.load(tmp_path / "points.npy")).double()
    sigma = np.geomspace(0.001, 100, 12)
    profile = empirical_profile(
        MixtureOfGaussians(OmegaConf.create(task_cfg)), sigma, n_points=32, n_queries=16
    )
    assert profile.n_points == 32 and profile.dim == 2
    assert profile.mmse[0] < 1e-6 * profile.mmse[-1]  # memorised at small σ
    total_variance = points.var(dim=0, unbiased=False).sum().item()
    assert profile.mmse[-1] == pytest.approx(total_variance, rel=0.05)  # the mean is all σ = 100 leaves
    assert profile.memorisation_sigma == pytest.approx(profile.nn_distance / math.sqrt(2 * math.log(32)))
    assert np.trapezoid(profile.density(), np.log(sigma)) == pytest.approx(1.0)


def test_both_kg_readings_are_drawn_with_their_own_labels():
    labels = [label for label, _ in registered_densities(U, EDMWeight(0.5))]
    kg = [label for label in labels if label.startswith("kg")]
    assert [label.split(" ")[0] for label in kg] == ["kg", "kg-uncorrected"]


def test_figure_target_falls_back_to_every_fixed_sampler(tmp_path: Path):
    write_run(tmp_path, "dna", "laplace", 0, [(1.0, 9.0), (2.0, 4.0)], metric="sei-fid")
    write_run(tmp_path, "dna", "infonoise", 0, [(1.0, 5.0), (2.0, 3.0)], metric="sei-fid")
    target, which = figure_target(load_records(tmp_path))
    assert which == "best fixed sampler" and (target["target_sampler"] == "laplace").all()
    write_run(tmp_path, "dna", "cos", 0, [(1.0, 9.0), (2.0, 6.0)], metric="sei-fid")
    target, which = figure_target(load_records(tmp_path))
    assert which == "best of the paper's fixed baselines" and (target["target_sampler"] == "cos").all()


def test_hydra_values():
    assert hydra_value(None) == "null"
    assert hydra_value(True) == "true"
    assert hydra_value(1.28) == "1.28"
    assert hydra_value([1, 2, 2]) == "[1,2,2]"
    assert hydra_value("inception-v3-compat") == "inception-v3-compat"
    assert hydra_value("a b") == "'a b'"


def test_reproduce_command_lists_only_differing_keys():
    from suite.config import compose_run, to_dict

    cfg = to_dict(
        compose_run(
            "bfashion",
            "edm",
            "smoke",
            ["sampler.p_mean=0.0", "budget.kimg=1.28", "seed=1", "results=/somewhere"],
        )
    )
    assert sorted(config_overrides(cfg)) == ["budget.kimg=1.28", "sampler.p_mean=0.0"]


def test_reproduce_command_for_seeds(results: Path):
    for config_file in results.glob("runs/*/edm/seed*/config.yaml"):
        config_file.write_text(OmegaConf.to_yaml(compose_run("fashion", "edm", "smoke")))
    runs = [r for r in next(iter(discover_runs(results).values())) if r.label == "edm"]
    assert reproduce_command(runs, "results") == (
        "suite run --task fashion --sampler edm --budget smoke --seeds 2 --results results"
    )


def test_saved_profile_round_trips_and_a_missing_one_names_the_command(tmp_path: Path):
    task_cfg = config({})["task"] | {"root": "/somewhere"}
    sigma = np.geomspace(0.002, 80.0, 41)
    read = saved_profile(tmp_path / "profiles")
    with pytest.raises(FileNotFoundError, match="suite profile --task fashion --results"):
        read(task_cfg, sigma)
    written = tiny_profile(task_cfg, sigma)
    write_posthoc(tmp_path / "profiles", task_cfg, written, "tiny")
    moved = task_cfg | {"root": "/elsewhere"}  # where the data sit does not change which profile it is
    back = read(moved, sigma[:3])
    assert np.array_equal(back.sigma, written.sigma) and np.array_equal(back.mmse, written.mmse)
    assert (back.nn_distance, back.n_points, back.dim) == (6.0, 64, 784)


def test_a_saved_profile_that_fails_its_proof_is_refused_naming_the_file_and_the_command(tmp_path: Path):
    task_cfg = config({})["task"]
    sigma = np.geomspace(0.002, 80.0, 41)
    path = write_posthoc(tmp_path / "profiles", task_cfg, tiny_profile(task_cfg, sigma), "tiny")
    saved = json.loads(path.read_text())
    path.write_text(json.dumps(saved | {"mmse": [0.0] * len(saved["mmse"])}))
    with pytest.raises(ValueError) as err:
        saved_profile(tmp_path / "profiles")(task_cfg, sigma)
    message = str(err.value)
    assert message.startswith(f"the saved post hoc profile {path} is not used: its values are not the ones")
    assert f"To fix: `suite profile --task fashion --results {tmp_path}`" in message
    other = task_cfg | {"train_size": 7}  # another config's profile, copied under this one's name
    posthoc_path(tmp_path / "profiles", other).write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="it was computed from other inputs"):
        saved_profile(tmp_path / "profiles")(other, sigma)


def test_each_sampler_keeps_its_colour_whichever_others_a_figure_draws():
    from suite.report.figures import style_map

    everything = style_map(
        ["logu", "cos", "fm", "edm", "kg", "kg-uncorrected", "infonoise", "laplace", "cauchy"]
    )
    for subset in (["edm"], ["infonoise", "cauchy"], ["cauchy", "edm[p_mean=0.0]", "logu"]):
        styles = style_map(subset)
        for label in subset:
            if label in everything:
                assert styles[label].color == everything[label].color
    assert len({s.color for s in everything.values()}) == 9


def test_plot_draws_the_users_runs_and_brings_in_committed_evidence_only_with_all(tmp_path: Path, capsys):
    write_run(tmp_path, "bfashion", "edm", 0, [(1.0, 9.0), (2.0, 4.0)], budget="demo")
    write_run(tmp_path, "bfashion", "edm", 0, [(1.0, 8.0), (2.0, 3.0)], origin="cpu-smoke")
    (tmp_path / "cpu-smoke" / "EVIDENCE").write_text("committed\n")
    assert plot_results(str(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    names = {Path(line.removeprefix("wrote ")).name for line in out if line.startswith("wrote ")}
    assert names == {"bfashion-demo-aaaa000000_quality-fid.png", "bfashion-demo-aaaa000000_quality-fid.pdf"}
    assert out[-1] == f"Left out: committed evidence {tmp_path / 'cpu-smoke'}; `suite plot --all` adds it."
    assert plot_results(str(tmp_path), everything=True) == 0
    out = capsys.readouterr().out
    assert "cpu-smoke_bfashion-smoke-aaaa000000_quality-fid.png" in out and "Left out" not in out


def test_the_final_protocol_point_is_drawn_apart_from_the_curve_and_named_in_the_legend(tmp_path: Path):
    final_protocol_run(tmp_path, "edm", 0, [30.0, 20.0, 10.0], 4.0)
    final_protocol_run(tmp_path, "infonoise", 0, [24.0, 13.0, 5.0], 3.0)
    ax = quality_figure(load_records(tmp_path), "cifar10 · paper").axes[0]
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert curves and all(max(line.get_xdata()) == 40.0 for line in curves)
    diamonds = {tuple(c.get_offsets()[0]) for c in ax.collections if len(c.get_offsets()) == 1}
    assert {(80.0, 4.0), (80.0, 3.0)} <= diamonds
    labels = ax.get_legend_handles_labels()[1]
    assert "final protocol: 50000 samples, best of 3 seed ranges" in labels
    assert "target: edm's last curve quality (best of the paper's fixed baselines)" in labels


def test_the_samplers_figure_gives_each_sampler_the_colour_it_has_in_every_other_figure():
    from suite.report.figures import sampler_of, style_map

    u = np.linspace(math.log(0.002), math.log(80.0), 50)
    labels = [label for label, _ in registered_densities(u, EDMWeight(0.5))]
    assert any(label != sampler_of(label) for label in labels)  # decorated: "kg (warm-up prior: edm)"
    drawn, plain = style_map(labels), style_map([sampler_of(label) for label in labels])
    assert all(drawn[label].color == plain[sampler_of(label)].color for label in labels)


def test_one_evaluation_is_the_samplers_side_by_side_and_one_seed_is_never_called_a_mean_and_std(tmp_path):
    for sampler, value in (("edm", 300.0), ("infonoise", 280.0)):
        write_run(tmp_path, "bfashion", sampler, 0, [(1.6, value)], budget="demo")
    fig = quality_figure(load_records(tmp_path), "bfashion · demo")
    ax = fig.axes[0]
    assert ax.get_title().endswith("one evaluation, at 1.6 kimg (one seed each)")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["edm", "infonoise"]
    dots = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert sorted(tuple(map(float, c.get_offsets()[0])) for c in dots) == [(0.0, 300.0), (1.0, 280.0)]
    texts = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
    assert not any("±" in text for text in texts)


def test_every_png_is_one_column_wide_at_300_dpi_with_a_vector_pdf_beside_it(results: Path, tmp_path: Path):
    plot_sampler_densities(tmp_path / "samplers.png")
    assert plot_results(str(results)) == 0
    pngs = [tmp_path / "samplers.png", *sorted(results.glob("figures/*.png"))]
    assert len(pngs) > 2
    for png in pngs:
        width = int.from_bytes(png.read_bytes()[16:20], "big")
        assert abs(width - 1050) <= 10, (png.name, width)  # 3.5 in at 300 dpi, within 1%
        if png.parent.name == "figures":
            assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
