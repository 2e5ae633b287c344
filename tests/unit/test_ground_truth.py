"""The ground-truth point tasks and their exact metrics, checked against closed forms."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from infonoise_modalities.points import metrics as point_metrics
from infonoise_modalities.points.distributions import (
    IsotropicMixture,
    build_distribution,
    exact_mmse,
    moments,
)
from suite.commands import eval as eval_command
from suite.config import compose_run
from suite.launch.plan import run_folder
from suite.launch.study import grid_runs, load_study, plan_study
from suite.metrics import METRICS, EvalInputs
from suite.noise.analytic import GaussianData, GaussianMixtureData
from suite.noise.information import gaussian_mixture_mmse
from suite.noise.sampler import build_sampler
from suite.noise.weighting import build_weight
from suite.records import NULL_FILE, NULL_SAMPLER, read_jsonl
from suite.report.rows import format_value, load_published, load_records
from suite.report.summary import summary_blocks
from suite.report.table import comparison_table
from suite.run.assembly import build_loss_weight, build_noise_sampler, build_task
from suite.run.evaluation import Generation, latent_generator, null_network, open_run, score_null
from suite.run.spec import SpecError, run_spec
from suite.run.training import Trainer

CPU = torch.device("cpu")


class Scaled(nn.Module):
    """D(x; σ) = a·x, whatever σ."""

    def __init__(self, a: float) -> None:
        super().__init__()
        self.a = a

    def forward(self, x: Tensor, sigma: Tensor) -> Tensor:
        return self.a * x


def closed_form_bound(a: float, v: float, d: int, sigma_min: float, sigma_max: float) -> float:
    """∫ E‖a·x − v/(v+σ²)·x‖²/σ³ dσ for x₀ ~ N(0, v·I_d): with t = σ² and b = (a − 1)v the integrand is
    d/2·(at + b)²/((t + v)t²) dt = d/2·((a² − 1)/t + b²/(v t²) + 1/(t + v)) dt (partial fractions)."""
    b = (a - 1) * v

    def antiderivative(t: float) -> float:
        return 0.5 * d * ((a * a - 1) * math.log(t) - b * b / (v * t) + math.log(t + v))

    return antiderivative(sigma_max**2) - antiderivative(sigma_min**2)


def test_the_kl_bound_of_a_mis_scaled_linear_denoiser_on_gaussian_data_matches_its_closed_form(tmp_path):
    """Here e = (a − k)²‖x‖² exactly (k = v/(v + σ²)), and ‖x − μ‖² = ‖x‖² is a control of known mean, so the
    control variates leave no Monte Carlo error: what remains is float32's rounding of a·x, a few parts in
    10⁸."""
    v, d, a, lo, hi = 0.5, 16, 0.7, 0.002, 80.0
    assert METRICS.get("kl-bound") is point_metrics.KLBound  # registered by the point modality's import
    metric = METRICS.get("kl-bound")({"nodes": 16, "samples": 32768, "seed": 3}, CPU, tmp_path)
    result = metric.bind(GaussianData(v, d), lo, hi)(EvalInputs(None, None, model=Scaled(a)))
    exact = closed_form_bound(a, v, d, lo, hi)
    assert abs(result["value"] - exact) <= 1e-6 * exact
    assert result["quadrature_error"] <= 1e-7 * exact  # a smooth integrand: the rule has converged
    curve = result["curve"]
    assert len(curve["sigma"]) == len(curve["excess"]) == len(curve["excess_se"]) == len(curve["beta"]) == 33
    sigma = torch.tensor(curve["sigma"], dtype=torch.float64)
    expected = d * (a - v / (v + sigma**2)) ** 2 * (v + sigma**2)
    excess = torch.tensor(curve["excess"], dtype=torch.float64)
    assert ((excess - expected).abs() <= 1e-6 * expected).all()
    # the second stage spends 7/8 of the draws, up to one chunk per node of rounding
    assert abs(sum(curve["draws"]) - 33 * 32768 * 7 // 8) <= 33 * 1024


def test_the_recorded_error_of_the_kl_bound_is_the_spread_of_its_value_over_draw_seeds(tmp_path):
    """A denoiser the controls explain only in part (a·x + b·sin 3x on the ring): over 200 draw seeds, the
    standard deviation of the value matches the recorded error within ±15 % (the spread of a standard
    deviation of 200 heavy-tailed values; 1.05 measured), and the mean value lies within 4 errors of a 16×
    larger estimate."""
    data = build_distribution({"kind": "ring", "components": 8, "radius": 1.5, "spread": 0.05})

    def denoiser(x: Tensor, sigma: Tensor) -> Tensor:
        return 0.9 * x + 0.1 * torch.sin(3 * x)

    def run(seed: int, samples: int) -> dict:
        options = {"nodes": 2, "samples": samples, "seed": seed, "control_samples": 2048}
        metric = METRICS.get("kl-bound")(options, CPU, tmp_path).bind(data, 0.002, 80.0)
        return metric(EvalInputs(None, None, model=denoiser))

    rows = [run(seed, 8192) for seed in range(200)]
    values = torch.tensor([r["value"] for r in rows], dtype=torch.float64)
    recorded = float(torch.tensor([r["mc_se"] for r in rows]).square().mean().sqrt())
    assert 0.85 <= float(values.std()) / recorded <= 1.15, (float(values.std()), recorded)
    precise = run(1000, 16 * 8192)
    assert abs(float(values.mean()) - precise["value"]) <= 4 * math.hypot(
        recorded / math.sqrt(200), precise["mc_se"]
    )


def test_the_kl_bound_of_the_optimal_denoiser_is_zero(tmp_path):
    data = build_distribution({"kind": "ring", "components": 8, "radius": 1.5, "spread": 0.05})

    def optimal(x: Tensor, sigma: Tensor) -> Tensor:
        return data.posterior_mean(x.double(), sigma.double())

    metric = METRICS.get("kl-bound")({"nodes": 8, "samples": 8192}, CPU, tmp_path).bind(data, 0.002, 80.0)
    assert metric(EvalInputs(None, None, model=optimal))["value"] < 1e-8


def zero_values(path: Path) -> None:
    saved = torch.load(path, weights_only=True)
    torch.save(saved | {"value": torch.zeros_like(saved["value"])}, path)


def nan_values(path: Path) -> None:
    saved = torch.load(path, weights_only=True)
    torch.save(saved | {"value": torch.full_like(saved["value"], math.nan)}, path)


def zero_bytes(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def bare_tensor_of_another_shape(path: Path) -> None:
    torch.save(torch.zeros(3), path)


@pytest.mark.parametrize(
    "damage", [zero_values, nan_values, zero_bytes, truncate, bare_tensor_of_another_shape]
)
def test_a_damaged_kl_bound_cache_is_detected_named_and_recomputed_to_the_same_value(
    tmp_path, capsys, damage
):
    """The kl-bound controls (the exact MMSE among them) kept in the cache: zeroed, NaN, zero bytes, cut in
    half, or a bare tensor without its proof; the next process names the file, recomputes it and scores the
    value of the undamaged cache (a zeroed cache once gave kl-bound 0.019 instead of 159, silently)."""
    data = build_distribution({"kind": "ring", "components": 8, "radius": 1.5, "spread": 0.05})
    options = {"nodes": 2, "samples": 8192, "control_samples": 2048}

    def score() -> float:
        metric = METRICS.get("kl-bound")(options, CPU, tmp_path).bind(data, 0.002, 80.0)
        return metric(EvalInputs(None, None, model=Scaled(0.9)))["value"]

    value = score()
    (cache,) = (tmp_path / "kl-bound-controls").glob("*.pt")
    assert score() == value and capsys.readouterr().err == ""
    damage(cache)
    assert score() == value
    err = capsys.readouterr().err
    assert err.startswith(f"warning: cache {cache}: ") and err.rstrip().endswith("; recomputing it")
    assert score() == value and capsys.readouterr().err == ""


def test_the_isotropic_mixture_has_the_general_mixtures_posterior_mean_and_mmse():
    gen = torch.Generator().manual_seed(0)
    means, stds = (
        torch.randn(5, 4, generator=gen, dtype=torch.float64),
        torch.rand(5, dtype=torch.float64) + 0.1,
    )
    weights = torch.rand(5, dtype=torch.float64) + 0.5
    fast, general = IsotropicMixture(means, stds, weights), GaussianMixtureData(means, stds, weights)
    x, sigma = (
        2 * torch.randn(100, 4, generator=gen, dtype=torch.float64),
        torch.rand(100, dtype=torch.float64),
    )
    assert torch.allclose(fast.posterior_mean(x, sigma), general.posterior_mean(x, sigma), atol=1e-12)
    levels = torch.tensor([0.05, 0.5, 3.0], dtype=torch.float64)
    mine = exact_mmse(fast, levels, n_mc=20000)
    theirs = gaussian_mixture_mmse(levels, means, stds**2, weights, n_mc=4000, generator=gen)
    assert torch.allclose(mine, theirs, rtol=0.03)


def test_the_exact_frechet_distance_of_exact_draws_is_near_zero_and_a_shift_adds_its_square(tmp_path):
    data = build_distribution(
        {
            "kind": "two-scale",
            "dim": 8,
            "clusters": 3,
            "subclusters": 2,
            "sub_scale": 0.1,
            "spread": 0.01,
            "structure_seed": 0,
        }
    )
    metric = METRICS.get("fd-exact")({}, CPU, tmp_path).bind(data, 0.002, 80.0)
    draws = data.sample(200000, torch.Generator().manual_seed(1))
    mean, _ = moments(data)
    shift = torch.full((8,), 0.5, dtype=torch.float64)
    exact = metric(EvalInputs(draws, None))["value"]
    shifted = metric(EvalInputs(draws - draws.mean(0) + mean + shift, None))["value"]
    assert exact < 0.01
    assert abs(shifted - shift.square().sum().item()) < 0.02


def test_the_sliced_w2_of_exact_draws_sits_at_its_floor_and_a_shift_raises_it():
    data = build_distribution({"kind": "ring", "components": 8, "radius": 1.5, "spread": 0.05})
    metric = METRICS.get("sliced-w2")({"projections": 128}, CPU, Path(".")).bind(data, 0.002, 80.0)
    draws = data.sample(4096, torch.Generator().manual_seed(7))
    same = metric(EvalInputs(draws, None))
    moved = metric(EvalInputs(draws + torch.tensor([0.3, 0.0], dtype=torch.float64), None))
    assert same["value"] < 2 * same["floor"]
    assert moved["value"] > 0.15  # a shift s moves every projection by s·cos θ: SW₂ ≥ s/√2 minus the noise


def test_an_infonoise_sampler_fed_the_exact_mmse_reaches_its_exact_target_and_a_log_normal_does_not(tmp_path):
    data = build_distribution({"kind": "ring", "components": 8, "radius": 1.5, "spread": 0.05})
    weight = build_weight("edm", 1.06)
    metric = METRICS.get("pi-tv")({"gate_c": 0.05}, CPU, tmp_path).bind(data, 0.002, 80.0)
    sampler = build_sampler("infonoise", 0.002, 80.0, weight, gate_c=0.05, warmup_steps=1, refresh_every=1)
    before = metric(EvalInputs(None, None, sampler=sampler))
    sigma = sampler.sample(100000, torch.Generator().manual_seed(0), dtype=torch.float64)
    grid = torch.linspace(math.log(0.002), math.log(80.0), 97, dtype=torch.float64)
    curve = exact_mmse(data, grid.exp()).log()
    position = (sigma.log() - grid[0]) / (grid[1] - grid[0])
    low = position.floor().long().clamp(0, 95)
    loss = (curve[low] + (position - low) * (curve[low + 1] - curve[low])).exp()  # MMSE, log-interpolated
    sampler.observe(sigma, loss)  # noiseless losses: the estimator's bin means are the exact MMSE
    after = metric(EvalInputs(None, None, sampler=sampler))
    edm = metric(EvalInputs(None, None, sampler=build_sampler("edm", 0.002, 80.0, weight)))
    assert not before["learned"] and after["learned"]
    assert after["value"] < 0.03 < 0.2 < before["value"]
    assert edm["value"] > 0.2 and edm["target"].startswith("infonoise estimator")


def test_a_ground_truth_run_records_the_exact_metrics_at_each_evaluation(tmp_path):
    cfg = compose_run(
        "twoscale",
        "infonoise",
        "smoke",
        [
            "device=cpu",
            "budget.kimg=0.512",
            "budget.batch=64",
            "budget.eval_points=2",
            "budget.adaptive.warmup_steps=2",
            "budget.adaptive.refresh_every=2",
            "budget.eval.samples=64",
            "budget.tick_kimg=0.256",
            "task.train_size=1024",
            "task.metrics.kl-bound.samples=8192",
            "task.metrics.pi-tv.mmse_samples=64",
        ],
    )
    trainer = Trainer(run_spec(cfg), tmp_path / "run")
    trainer.run()
    rows = trainer.dir.rows()
    assert {row["metric"] for row in rows} == {"kl-bound", "fd-exact", "sliced-w2", "pi-tv"}
    for row in rows:
        assert "exact" in row["metric_label"] or "TV" in row["metric_label"]
        assert not row["paper_metric"] and not row["substitute_metric"] and not row["stand_in_data"]
    bounds = [row for row in rows if row["metric"] == "kl-bound"]
    assert [row["nimg"] for row in bounds] == [256, 512]
    assert all(row["extra"]["mc_se"] > 0 and len(row["extra"]["curve"]["sigma"]) == 33 for row in bounds)
    assert all(row["extra"]["quadrature_error"] >= 0 for row in bounds)
    tv = [row for row in rows if row["metric"] == "pi-tv"]
    assert [row["extra"]["learned"] for row in tv] == [True, True]


class Identity(nn.Module):
    """D(x; σ) = x: the probability-flow ODE dx/dσ = (x − D)/σ stands still, so a sample is its latent."""

    def forward(self, x: Tensor, sigma: Tensor) -> Tensor:
        return x


def test_no_two_seeds_of_the_ground_truth_study_share_their_sample_latents(tmp_path):
    """Every run of ``studies/ground-truth.yaml`` generates from latents of its own seed: two seeds share no
    latent, and the samplers of one seed share theirs (common random numbers within a seed pair)."""
    study = load_study(Path(__file__).resolve().parents[2] / "studies" / "ground-truth.yaml")
    specs = [run_spec(run.cfg) for run in grid_runs(plan_study(study, tmp_path))]
    assert {spec.budget.eval.latents for spec in specs} == {"per_seed"}
    first = {}
    for spec in specs:
        ev = spec.budget.eval
        latent = latent_generator(ev.seed, spec.seed, ev.latents)
        first.setdefault(spec.seed, set()).add(float(torch.randn(1, generator=latent)))
    assert all(len(values) == 1 for values in first.values())  # one latent set per seed, whatever the sampler
    assert len({values.pop() for values in first.values()}) == len(study.seeds)
    one, two = (next(s for s in specs if s.seed == seed) for seed in (0, 1))
    task = build_task(one)
    data = task.load()
    sigmas = torch.tensor([80.0, 1.0, 0.0], dtype=torch.float64)
    drawn = [
        Generation(spec, task, data, CPU).generate(Identity(), 64, sigmas, 1.0)[0] for spec in (one, two)
    ]
    again = Generation(one, task, data, CPU).generate(Identity(), 64, sigmas, 1.0)[0]
    assert torch.equal(drawn[0], again)  # the same latents at every evaluation of a run
    assert not torch.isin(drawn[0], drawn[1]).any()


def test_a_task_without_eval_latents_shares_one_latent_set_across_seeds_and_a_bad_value_is_refused():
    shared = [
        run_spec(compose_run("ring2d", "edm", "smoke", ["task.eval_latents=shared", f"seed={s}"]))
        for s in (0, 1)
    ]
    draws = [torch.randn(4, generator=latent_generator(0, s.seed, s.budget.eval.latents)) for s in shared]
    assert torch.equal(*draws)
    with pytest.raises(SpecError, match=r"task.eval_latents='each': valid: shared, per_seed"):
        run_spec(compose_run("ring2d", "edm", "smoke", ["task.eval_latents=each"]))


@pytest.mark.parametrize(("d", "n", "variance"), [(4, 512, 0.5), (8, 256, 2.0)])
def test_the_floor_of_the_exact_frechet_distance_is_its_second_order_bias_on_gaussian_data(
    tmp_path, d, n, variance
):
    """For n draws of N(0, λI_d) the FD to the exact moments is E‖μ_g‖² + E‖Σ_g − λI‖²_F/(4λ) to second order,
    dλ/n + d(d + 1)λ/(4(n − 1)): the floor (400 draws) matches it within 3 standard errors and 2 % (the
    third-order term); a row records its raw value, the floor, and the difference as ``above_floor``."""
    data = IsotropicMixture(
        torch.zeros(1, d, dtype=torch.float64),
        torch.tensor([math.sqrt(variance)], dtype=torch.float64),
        torch.ones(1, dtype=torch.float64),
    )
    metric = METRICS.get("fd-exact")({"floor_draws": 400}, CPU, tmp_path).bind(data, 0.002, 80.0)
    row = metric(EvalInputs(data.sample(n, torch.Generator().manual_seed(5)), None))
    expected = d * variance / n + d * (d + 1) * variance / (4 * (n - 1))
    assert abs(row["floor"] - expected) <= 3 * row["floor_se"] + 0.02 * expected
    assert row["above_floor"] == row["value"] - row["floor"] and row["n"] == n and row["floor_draws"] == 400


def test_the_gauss_kronrod_rule_embeds_gauss_legendre_and_integrates_polynomials_to_degree_3n_plus_1():
    """∫_{−1}^{1} t^p dt = 2/(p + 1) for even p, 0 for odd: exact for p ≤ 3n + 1 (Kronrod) and p ≤ 2n − 1
    (the embedded Gauss rule); the 15-point rule has QUADPACK's tabulated nodes and weights (dqk15)."""
    for n in (1, 2, 5, 7, 8, 16):
        t, kronrod, gauss = point_metrics.gauss_kronrod(n)
        assert np.allclose(t[1::2], np.polynomial.legendre.leggauss(n)[0], atol=1e-14)
        for p in range(3 * n + 2):
            exact = 2 / (p + 1) if p % 2 == 0 else 0.0
            assert abs((kronrod * t**p).sum() - exact) < 1e-13
            if p < 2 * n:
                assert abs((gauss * t**p).sum() - exact) < 1e-13
    t, kronrod, _ = point_metrics.gauss_kronrod(7)
    assert np.allclose(
        t[7:],
        [
            0,
            0.207784955007898,
            0.405845151377397,
            0.586087235467691,
            0.741531185599394,
            0.864864423359769,
            0.949107912342759,
            0.991455371120813,
        ],
        atol=1e-14,
    )
    assert np.allclose(
        kronrod[7:],
        [
            0.209482141084728,
            0.204432940075298,
            0.190350578064785,
            0.169004726639267,
            0.140653259715525,
            0.104790010322250,
            0.063092092629979,
            0.022935322010529,
        ],
        atol=1e-14,
    )


class Band(nn.Module):
    """D = D* + h(σ)·e₁ on N(0, v·I): e = h² exactly (no Monte Carlo error), with
    h² = A σ² exp(−(ln σ − c)²/2w²), so the integrand in ln σ is a Gaussian bump of width w, a band as narrow
    as twoscale's sub-cluster band."""

    def __init__(self, v: float, a: float, c: float, w: float) -> None:
        super().__init__()
        self.v, self.a, self.c, self.w = v, a, c, w

    def forward(self, x: Tensor, sigma: Tensor) -> Tensor:
        s = sigma.double()[:, None]
        h = (self.a * s**2 * torch.exp(-((s.log() - self.c) ** 2) / (2 * self.w**2))).sqrt()
        best = x.double() * self.v / (self.v + s**2)
        return torch.cat([best[:, :1] + h, best[:, 1:]], dim=1)


@pytest.mark.parametrize("nodes", [8, 12, 16, 24])
def test_the_kl_bounds_quadrature_error_bounds_its_true_error_on_a_narrow_band(tmp_path, nodes):
    """B = A w √(π/2) [erf((ln σ_max − c)/√2w) − erf((ln σ_min − c)/√2w)] for the band at σ = 0.2 of width 0.3
    in ln σ; the recorded estimate bounds |B̂ − B| once the Gauss rule resolves the band (n ≥ 8), while the
    16-point Gauss–Legendre value alone is off by about 1 nat of 7.5."""
    v, d, lo, hi, c, w, a = 0.5, 4, 0.002, 80.0, math.log(0.2), 0.3, 10.0
    exact = (
        a
        * w
        * math.sqrt(math.pi / 2)
        * (
            math.erf((math.log(hi) - c) / (math.sqrt(2) * w))
            - math.erf((math.log(lo) - c) / (math.sqrt(2) * w))
        )
    )
    options = {"nodes": nodes, "samples": 8192, "control_samples": 8192}
    metric = METRICS.get("kl-bound")(options, CPU, tmp_path).bind(GaussianData(v, d), lo, hi)
    row = metric(EvalInputs(None, None, model=Band(v, a, c, w)))
    assert abs(row["value"] - exact) <= row["quadrature_error"]
    assert row["quadrature_error_mc_se"] < 1e-6 < row["quadrature_error"]
    if nodes == 16:
        assert 0.5 < abs(row["gauss_value"] - exact) < 1.5


def test_pi_tv_of_every_sampler_of_the_ground_truth_study_uses_one_target(tmp_path):
    """Every sampler's row names one target, and its value is the TV to that one density; KG and InfoNoise
    before they learn (π is the EDM prior) score exactly what EDM scores; an adaptive sampler's distance to
    its own estimator's target is recorded apart, as ``own_target_tv``."""
    study = load_study(Path(__file__).resolve().parents[2] / "studies" / "ground-truth.yaml")
    specs = [run_spec(run.cfg) for run in grid_runs(plan_study(study, tmp_path)) if run.cfg.seed == 0]
    task = build_task(specs[0])
    (metric,) = [m for m in task.metrics(CPU, tmp_path) if m.spec.name == "pi-tv"]
    rows, densities = {}, []
    u = torch.linspace(math.log(0.002), math.log(80.0), 401, dtype=torch.float64)
    for spec in specs:
        sampler = build_noise_sampler(spec, build_loss_weight(spec))
        rows[spec.sampler.name] = metric(EvalInputs(None, None, sampler=sampler))
        densities.append(metric.target(sampler)[0].prob(u))
    assert set(rows) == set(study.samplers) and len({row["target"] for row in rows.values()}) == 1
    assert all(torch.equal(density, densities[0]) for density in densities)
    assert (
        rows["kg"]["value"]
        == rows["kg-uncorrected"]["value"]
        == rows["edm"]["value"]
        == rows["infonoise"]["value"]
    )
    assert all(
        ("own_target_tv" in row) == (name in ("kg", "kg-uncorrected", "infonoise"))
        for name, row in rows.items()
    )


def test_the_null_network_is_c_skip_times_x_and_stands_beside_every_sampler_in_the_tables(tmp_path):
    """``suite eval --null`` zeroes a run's network (F ≡ 0, so D = σ_d²/(σ² + σ_d²)·x exactly), scores the
    metrics that score a network or its samples once, writes them beside the runs, and the comparison table
    and the summary blocks show that value in a column and a line of their own; no statistic counts it."""
    cfg = compose_run(
        "twoscale",
        "edm",
        "smoke",
        [
            "device=cpu",
            "budget.kimg=0.256",
            "budget.batch=64",
            "budget.eval_points=1",
            "budget.eval.samples=64",
            "budget.tick_kimg=0.256",
            "task.train_size=1024",
            "task.metrics.kl-bound.samples=8192",
            "task.metrics.kl-bound.nodes=4",
            "+task.metrics.kl-bound.control_samples=8192",
            "task.metrics.pi-tv.mmse_samples=64",
        ],
    )
    spec = run_spec(cfg)
    folder = run_folder(tmp_path, spec)
    Trainer(spec, folder).run()
    model, _ = open_run(folder, None, "cpu").network(build_task(spec), CPU)
    x, sigma = torch.randn(8, 32), torch.tensor([0.01, 0.1, 1.0, 10.0] * 2)
    c_skip = (spec.diffusion.sigma_data**2 / (sigma**2 + spec.diffusion.sigma_data**2))[:, None]
    assert torch.allclose(null_network(model)(x, sigma), c_skip * x, rtol=1e-6, atol=0)
    path = score_null(folder, "cpu")
    rows = read_jsonl(path)
    assert path == folder.resolve().parent.parent / NULL_FILE
    assert {r["metric"] for r in rows} == {"kl-bound", "fd-exact", "sliced-w2"}
    assert {(r["sampler"], r["kimg"]) for r in rows} == {(NULL_SAMPLER, 0.0)}
    df = load_records(tmp_path)
    assert NULL_SAMPLER not in set(df["sampler"])  # no statistic sees it
    table = comparison_table(df).set_index("metric")
    value = {r["metric"]: r["value"] for r in rows}
    assert table.loc["kl-bound ↓", NULL_SAMPLER] == format_value(value["kl-bound"])
    assert table.loc["pi-tv ↓", NULL_SAMPLER] == "–"
    blocks, _, _ = summary_blocks(df, None, ("edm",), load_published())
    null_lines = [b.rows for b in blocks if NULL_SAMPLER in set(b.rows["sampler"])]
    assert len(null_lines) == 3


def test_suite_eval_null_refuses_the_options_of_another_protocol_naming_them():
    """The null network is scored on the run's own protocol with every metric: a metric, point, grid, step
    count or guidance given beside --null is refused before the run folder is read."""
    parser = argparse.ArgumentParser()
    eval_command.add_arguments(parser)
    args = parser.parse_args(["no-such-run", "--null", "--kimg", "1"])
    with pytest.raises(
        ValueError, match=r"--null scores the run's own protocol with every metric; drop --metric"
    ):
        eval_command.run(args)


# -- the mixture fitted to real data ---------------------------------------------------------------------
def test_the_fitted_fashion_mixtures_optimal_denoiser_is_the_closed_form_posterior_mean():
    """D*(x; σ) = Σ_k r_k(μ_k + s_k²/(s_k² + σ²)(x − μ_k)), r_k ∝ w_k N(x; μ_k, (s_k² + σ²)I), computed
    here in numpy from the shipped file, equals the task's distribution's at points across the σ range; the
    mixture has the 32 dimensions and 64 components its provenance states, and coordinates of root mean
    square 1."""
    import json

    spec = run_spec(compose_run("fashion_gmm", "edm", "demo", ["device=cpu"]))
    data = build_task(spec).distribution
    stored = json.loads((Path(point_metrics.__file__).parent / "fashion_mixture.json").read_text())
    w, mu, s = (np.array(stored[key]) for key in ("weights", "means", "stds"))
    assert mu.shape == (64, 32) and stored["provenance"]["converged"]
    x = data.sample(6, torch.Generator().manual_seed(3))
    sigma = torch.tensor([0.01, 0.1, 0.5, 1.0, 3.0, 20.0], dtype=torch.float64)
    noisy = x + sigma[:, None] * torch.randn(
        x.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64
    )
    for point, level, got in zip(
        noisy.numpy(), sigma.numpy(), data.posterior_mean(noisy, sigma).numpy(), strict=True
    ):
        var = s**2 + level**2
        logits = np.log(w / w.sum()) - 0.5 * ((point - mu) ** 2).sum(1) / var - 0.5 * 32 * np.log(var)
        r = np.exp(logits - logits.max())
        r /= r.sum()
        expected = (r[:, None] * (mu + (s**2 / var)[:, None] * (point - mu))).sum(0)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    mean, cov = moments(data)
    assert float(torch.diagonal(cov).mean() + mean.square().mean()) == pytest.approx(1.0, rel=1e-5)


def test_a_fitted_mixture_whose_file_changed_is_refused_naming_the_digest():
    with pytest.raises(ValueError, match="sha256 04e1417e.* is not the configured 00: the file changed"):
        build_distribution({"kind": "fitted", "file": "fashion_mixture.json", "sha256": "00"})
    with pytest.raises(ValueError, match="distribution.file='../x.json' is not a fitted mixture"):
        build_distribution({"kind": "fitted", "file": "../x.json", "sha256": "00"})
