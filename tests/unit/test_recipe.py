"""Recipe cards (suite.report.recipe): each paper row composed against its card, at paper and short."""

import math
import re

import pytest

from suite.cli import main
from suite.config import compose_run
from suite.report.recipe import (
    CARDED_BUDGETS,
    PAPER_ROWS,
    REQUIRED,
    card_entries,
    check_card,
    entry_problems,
    load_card,
)
from suite.run.schedule import selection_points
from suite.run.spec import SelectionSpec, SpecError, run_spec


@pytest.mark.parametrize("budget", CARDED_BUDGETS)
@pytest.mark.parametrize("task", PAPER_ROWS)
def test_every_paper_row_composes_to_its_card_or_declares_the_deviation(task, budget):
    lines = check_card(task, budget)
    assert {line.setting for line in lines} >= set(REQUIRED)
    assert [line.setting for line in lines if line.drift] == []
    assert all(line.deviation for line in lines if line.differs)


def test_a_composed_setting_changed_without_its_card_is_a_drift_and_the_command_fails(capsys):
    lines = check_card("owt", "paper", ["budget.grad_clip=0.5"])
    assert [line.setting for line in lines if line.drift] == ["gradient clipping"]
    assert main(["recipe", "--task", "owt", "--budget", "paper", "budget.grad_clip=0.5"]) == 1
    out = capsys.readouterr().out
    assert "DRIFT gradient clipping" in out and "UNDECLARED differences: gradient clipping" in out
    assert main(["recipe", "--task", "owt", "--budget", "paper"]) == 0


def test_image_rows_train_fp32_at_paper_as_edm_and_bf16_is_a_drift_there():
    drifts = [
        line.setting for line in check_card("cifar10", "paper", ["budget.precision=bf16"]) if line.drift
    ]
    assert drifts == ["precision"]


def test_a_derived_setting_drifts_with_the_values_it_is_derived_from():
    # MDLM's EMA 0.9999 per step holds at batch 512 only: another batch without a new half-life drifts
    drifts = [line.setting for line in check_card("owt", "paper", ["budget.batch=256"]) if line.drift]
    assert "EMA" in drifts and "batch" in drifts


def test_owt_paper_trains_with_mdlm_optimiser_and_images_keep_edm():
    owt, cifar = compose_run("owt", "edm", "paper"), compose_run("cifar10", "edm", "paper")
    assert (owt.budget.lr, owt.budget.grad_clip, owt.budget.lr_rampup_kimg) == (3e-4, 1.0, 1280)
    assert 0.5 ** (512 / (owt.budget.ema_halflife_kimg * 1000)) == pytest.approx(0.9999, abs=1e-9)
    assert (cifar.budget.lr, cifar.budget.grad_clip, cifar.budget.precision) == (1e-3, 0.0, "fp32")


def test_dna_paper_trains_200_epochs_of_the_windows_the_run_loaded():
    budget = run_spec(compose_run("dna", "edm", "paper")).budget
    assert budget.epochs == 200 and budget.kimg == 7125  # the planning estimate
    assert budget.for_training_set(35_601).kimg == pytest.approx(200 * 35_601 / 1000)
    cifar = run_spec(compose_run("cifar10", "edm", "paper")).budget
    assert cifar.for_training_set(123) is cifar  # a budget in kimg keeps it


def test_dna_paper_selects_raw_weights_on_validation_sp_mse_40_times_as_ddsm_without_dropout_in_fp32():
    budget = run_spec(compose_run("dna", "edm", "paper")).budget
    assert budget.selection == SelectionSpec(metric="sp-mse", every_epochs=5, first_epoch=1)
    windows = 35_601
    points = selection_points(200 * windows, budget.batch, windows, 5, 1)
    assert len(points) == 40  # DDSM: epoch % 5 == 0 for epoch in range(200), after each epoch's training
    assert points[0] == math.ceil(windows / 256) * 256 and points[-1] == math.ceil(196 * windows / 256) * 256
    lines = {line.setting: line for line in check_card("dna", "paper")}
    assert lines["EMA"].composed == "raw, best validation sp-mse" and not lines["EMA"].differs
    assert (lines["dropout"].composed, lines["precision"].composed) == (0.0, "fp32")
    assert not lines["dropout"].differs and not lines["precision"].differs
    assert run_spec(compose_run("dna", "edm", "short")).budget.selection is None
    assert run_spec(compose_run("cifar10", "edm", "paper")).budget.selection is None
    drifts = [
        line.setting
        for line in check_card("dna", "paper", ["budget.selection.every_epochs=10", "budget.precision=bf16"])
        if line.drift
    ]
    assert drifts == ["precision", "checkpoint selection"]
    without = {line.setting: line for line in check_card("dna", "paper", ["budget.selection.metric=null"])}
    assert without["EMA"].drift and without["EMA"].composed == "EMA"


def test_a_selection_with_an_unknown_key_or_no_positive_interval_is_refused_naming_the_valid_keys():
    overrides = ["+budget.selection={metric: sp-mse, every: 5}"]
    with pytest.raises(SpecError) as err:
        run_spec(compose_run("dna", "edm", "smoke", overrides))
    assert "budget.selection.every: not a key; valid: metric, every_epochs, first_epoch" in str(err.value)
    interval = r"budget\.selection\.every_epochs=None: must be a (finite )?positive number"
    assert re.search(interval, str(err.value))


def test_a_card_entry_needs_exactly_one_of_source_and_own_and_a_known_derivation():
    both = {"setting": "x", "key": "budget.lr", "value": 1, "source": "a", "own": "b"}
    neither = {"setting": "x", "key": "budget.lr", "value": 1}
    unknown = {"setting": "x", "key": "derived.nonsense", "value": 1, "own": "b", "typo": 1}
    assert len(entry_problems(both)) == 1 and len(entry_problems(neither)) == 1
    assert len(entry_problems(unknown)) == 2
    assert all(
        entry_problems(e) == []
        for t in PAPER_ROWS
        for b in CARDED_BUDGETS
        for e in card_entries(load_card(t), b)
    )
