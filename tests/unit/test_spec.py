"""The run spec is read once from a config, names every invalid value, and builds the parts callers use."""

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from suite.cli import main
from suite.config import compose_run, group_options
from suite.records import read_json
from suite.run.assembly import build_parts
from suite.run.spec import SpecError, run_spec

RESULTS = Path(__file__).resolve().parents[2] / "results"


@pytest.mark.parametrize("budget", group_options("budget"))
def test_every_task_composes_to_a_spec_under_every_budget(budget):
    for task in group_options("task"):
        spec = run_spec(compose_run(task, "edm", budget))
        assert spec.task == task and spec.budget.name == budget
        assert spec.budget.total_nimg == round(spec.budget.kimg * 1000)
        assert spec.budget.eval.final_samples >= 1


def test_every_invalid_value_is_named_once_with_its_rule():
    cfg = compose_run(
        "bfashion",
        "edm",
        "smoke",
        [
            "budget.batch=0",
            "budget.precision=fp8",
            "task.solver=rk4",
            "task.sigma_min=100",
            "budget.tick_kimg=0.0001",
        ],
    )
    with pytest.raises(SpecError) as err:
        run_spec(cfg)
    assert err.value.problems == [
        "budget.batch=0: must be an integer >= 1",
        "budget.precision='fp8': valid: fp32, bf16",
        "budget.tick_kimg=0.0001: must be at least 0.001 (one example)",
        "task.solver='rk4': valid: heun, euler",
        "task.sigma_min=100.0, task.sigma_max=80.0: must be min < max",
    ]


def test_committed_run_configs_read_as_specs_of_the_runs_they_record():
    configs = sorted(RESULTS.glob("**/runs/*/*/seed*/config.yaml"))
    assert configs, "no committed runs found under results/"
    for path in configs:
        spec, info = run_spec(OmegaConf.load(path)), read_json(path.parent / "run.json")
        assert (spec.task, spec.budget.name, spec.sampler.label, spec.seed) == (
            info["task"],
            info["budget"],
            info["sampler"],
            info["seed"],
        )


def test_parts_are_seeded_and_the_meta_network_allocates_nothing():
    spec = run_spec(compose_run("bfashion", "infonoise", "smoke", ["seed=3"]))
    a, b = build_parts(spec), build_parts(spec)
    for p, q in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(p, q)
    meta = build_parts(spec, meta=True)
    assert all(p.is_meta for p in meta.model.parameters())
    assert [p.shape for p in meta.model.parameters()] == [p.shape for p in a.model.parameters()]
    assert meta.sampler.name == "infonoise" and a.weight.describe() == meta.weight.describe()


def test_an_unknown_logger_in_watch_is_named_with_the_valid_ones_and_watch_enters_no_hash():
    with pytest.raises(SpecError) as err:
        run_spec(compose_run("bfashion", "edm", "smoke", ["watch=[tensorboard,mlflow]"]))
    assert err.value.problems == [
        "watch=['tensorboard', 'mlflow']: 'mlflow' is not a logger; valid: tensorboard, wandb"
    ]
    plain = run_spec(compose_run("bfashion", "edm", "smoke"))
    watched = run_spec(compose_run("bfashion", "edm", "smoke", ["watch=[tensorboard,wandb]"]))
    assert (plain.watch, watched.watch) == ((), ("tensorboard", "wandb"))
    assert (watched.config_hash, watched.comparison_hash) == (plain.config_hash, plain.comparison_hash)


def test_a_guidance_scale_without_a_trained_null_condition_is_refused():
    untrained = compose_run(
        "cifar10_cond", "edm", "smoke", ["task.cond_dropout=0", "budget.eval.guidance=1.5"]
    )
    with pytest.raises(SpecError, match=r"budget.eval.guidance=1.5 with task.cond_dropout=0: the null"):
        run_spec(untrained)
    trained = compose_run(
        "cifar10_cond", "edm", "smoke", ["task.cond_dropout=0.1", "budget.eval.guidance=1.5"]
    )
    assert run_spec(trained).budget.eval.guidance == 1.5


@pytest.mark.parametrize("guidance", [0.0, -1.0, float("nan"), float("inf"), float("-inf")])
def test_a_guidance_scale_outside_zero_to_infinity_is_refused_naming_it(guidance):
    cfg = compose_run(
        "cifar10_cond", "edm", "smoke", ["task.cond_dropout=0.1", f"budget.eval.guidance={guidance}"]
    )
    with pytest.raises(SpecError) as err:
        run_spec(cfg)
    (line,) = [problem for problem in err.value.problems if "guidance" in problem]
    assert f"guidance {guidance!r}: must be a number in (0, inf)" in line or line == (
        f"budget.eval.guidance={guidance!r}: must be a finite number >= 0"  # the reader's own range check
    )


def test_a_guidance_scale_on_an_unconditional_task_is_refused_as_unconditional_before_a_run():
    from suite.launch.plan import run_problems

    cfg = compose_run("bfashion", "edm", "smoke", ["budget.eval.guidance=3"])  # trains a null condition
    assert run_spec(cfg).budget.eval.guidance == 3  # the spec alone cannot tell: the task decides
    assert run_problems(cfg) == [
        "budget.eval.guidance 3.0: the task is unconditional (it has no condition, so no null condition to "
        "guide away from); only guidance 1 applies"
    ]
    conditional = compose_run(
        "cifar10_cond", "edm", "smoke", ["task.cond_dropout=0.1", "budget.eval.guidance=3"]
    )
    assert run_problems(conditional) == []


@pytest.mark.parametrize(
    "override",
    [
        "budget.lr=nan",
        "budget.ema_halflife_kimg=inf",
        "budget.grad_clip=nan",
        "budget.tick_kimg=inf",
        "budget.kimg=inf",
        "budget.kimg=nan",
        "task.sigma_data=nan",
        "sampler.p_mean=nan",
        "task.metrics.kl-bound.samples=inf",
    ],
)
def test_a_non_finite_config_value_is_refused_by_a_dry_run_naming_its_key(tmp_path, capsys, override):
    argv = ["run", "--task", "ring2d", "--sampler", "edm", "--dry-run", "--results", str(tmp_path), override]
    assert main(argv) == 2
    err = capsys.readouterr().err
    key, value = override.split("=")
    assert f"  {key}={value}: must be a finite" in err and "nothing was run" in err
