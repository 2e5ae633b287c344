"""Metrics chosen by the core: one spelling of the fallback set for every task, a metric's own report of
what it lacks before a run starts, its task-config defaults and its bench parts; no task overrides
``metrics()``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from infonoise_modalities.dna.sei import SEI_CHECKPOINT, SEI_TARGET_NAMES, WIDTHS
from infonoise_modalities.image import fid, inception
from suite.metrics import METRICS, metric_problems
from suite.task import TASKS

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")
FALLBACK = {"random-feature-fd": {"width": "narrow", "seed": 0, "layer": "spline"}}


def dna(root: Path, **cfg: object):
    """The DNA task scored by Sei-FID and SP-MSE with the random-feature FD as its fallback set."""
    config = {"root": str(root), "metrics": {"sei-fid": {}, "sp-mse": {}}, "fallback_metrics": FALLBACK}
    return TASKS.get("dna")({**config, **cfg})


def test_no_task_overrides_metrics():
    found = [
        f"{path.name}: {cls.name}.metrics"
        for path in sorted((ROOT / "tasks").glob("*.py"))
        for cls in ast.walk(ast.parse(path.read_text()))
        if isinstance(cls, ast.ClassDef)
        for member in cls.body
        if isinstance(member, ast.FunctionDef) and member.name == "metrics"
    ]
    assert not found, "tasks overriding metrics(): " + "; ".join(found)


def test_a_metric_takes_its_task_keys_as_option_defaults_and_its_own_options_win(tmp_path):
    options = dna(tmp_path, conditional=False).metric_options()
    assert options["sei-fid"] == {"root": str(tmp_path)}
    assert options["sp-mse"] == {"root": str(tmp_path), "conditional": False}
    mine = dna(tmp_path, metrics={"sei-fid": {"root": "/elsewhere"}}).metric_options()
    assert mine == {"sei-fid": {"root": "/elsewhere"}}


def test_missing_sei_files_choose_the_fallback_set_only_with_the_stand_in_permission(tmp_path):
    assert dna(tmp_path, allow_stand_in=True).metric_options() == FALLBACK
    strict = dna(tmp_path, allow_stand_in=False)
    assert set(strict.metric_options()) == {"sei-fid", "sp-mse"}
    with pytest.raises(FileNotFoundError) as err:
        strict.metrics(CPU, tmp_path)
    assert str(err.value).count(f"Sei file {tmp_path / SEI_CHECKPOINT} not found") == 1  # read by both
    assert f"Sei file {tmp_path / SEI_TARGET_NAMES} not found" in str(err.value)


def test_present_sei_files_keep_the_configured_set_and_the_choice_can_be_forced(tmp_path):
    (tmp_path / SEI_CHECKPOINT).write_bytes(b"")
    (tmp_path / SEI_TARGET_NAMES).write_text("")
    assert set(dna(tmp_path, allow_stand_in=True).metric_options()) == {"sei-fid", "sp-mse"}
    assert dna(tmp_path, use_fallback_metrics=True).metric_options() == FALLBACK
    missing = tmp_path / "absent"
    assert set(dna(missing, allow_stand_in=True, use_fallback_metrics=False).metric_options()) == {
        "sei-fid",
        "sp-mse",
    }
    with pytest.raises(ValueError, match=r"task.use_fallback_metrics='sometimes'; valid: auto, true, false"):
        dna(tmp_path, use_fallback_metrics="sometimes").metric_options()


def test_sp_mse_on_an_unconditional_task_is_refused_when_the_metrics_are_built(tmp_path):
    (tmp_path / SEI_CHECKPOINT).write_bytes(b"")
    (tmp_path / SEI_TARGET_NAMES).write_text("")
    with pytest.raises(ValueError, match="sp-mse .* needs task.conditional: true"):
        dna(tmp_path, conditional=False).metrics(CPU, tmp_path)


def test_fid_says_where_its_inception_weights_are_missing_and_nothing_for_other_extractors(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "suite"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(fid, "find_fid_helper_torchscript", lambda: None)
    monkeypatch.setattr(inception, "find_fid_helper_torchscript", lambda: None)
    [problem] = metric_problems({"fid": {}})
    assert problem.startswith("No FID Inception-v3 weights found.")
    assert str(tmp_path / "suite" / inception.CONVERTED_WEIGHTS_NAME) in problem
    assert metric_problems({"fid": {"feature_extractor": "vgg16"}}) == []
    assert metric_problems({"fid": {"weights_path": str(tmp_path / "mine.pth")}}) == []  # the file check's
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / inception.CONVERTED_WEIGHTS_NAME).write_bytes(b"")
    assert metric_problems({"fid": {}}) == []


def test_the_sei_metrics_report_the_frechet_core_at_seis_output_size_as_their_bench_part():
    metric = METRICS.get("random-feature-fd")(FALLBACK["random-feature-fd"], CPU, Path("/tmp"))
    assert list(metric.bench_parts()) == [f"Fréchet core (d={WIDTHS['full'].targets}, n=2000)"]
    identity = METRICS.get("frechet")({"featurizer": "identity"}, CPU, Path("/tmp"))
    assert identity.bench_parts() == {}
