"""OpenWebText: prefix-conditioned diffusion in token-embedding space, scored by MAUVE.

Data (``infonoise_modalities.text.data``): OpenWebText saved with ``datasets`` in ``task.root``
(``suite data owt DEST``), the last 100 000 documents as the reference (validation) split as in MDLM; GPT-2's
tokenizer; training documents joined by ``<|endoftext|>`` and cut into blocks of ``seq_len`` tokens (1024
under the paper budget), tokenised once into a locked memory-mapped cache shared by every run. Each block's
first ``prefix_len`` tokens are the condition and the remaining L = seq_len − prefix_len tokens are diffused.
The evaluation units are validation *documents*, as in MAUVE's experiments (Pillutla et al. 2021,
krishnap25/mauve-experiments: the prompt is each test document's opening, the generation runs to EOS or the
model's length, and the human text is the same document truncated to that length): each document's first
``seq_len`` tokens, its first ``prefix_len`` the prompt (32 under the paper budget where MAUVE's
experiments take 35 GPT-2 tokens: the prefix length is a network preset the model is trained with, and the
three tokens leave the protocol as it is), documents of at most ``prefix_len`` tokens left out. The
evaluator's fixed seeded choice of them (``condition_seed`` in each row) is what MAUVE compares. Where
OpenWebText or the GPT-2 tokenizer is absent and the stand-in permission (``budget.allow_stand_in``) is on
(the smoke budget), Debian's fortunes corpus and the WordPiece tokenizer of the MiniLM package stand in, with
the embedding table restricted to a corpus sub-vocabulary, and the records say so.

Model (``infonoise_modalities.text.network``): tokens map to learned embeddings normalised to length √D
(σ_data = 1); the noisy sequence follows the suite's Gaussian path x = x₀ + σε with EDM's preconditioning, and
a transformer with adaLN noise conditioning gives token logits; D(x; σ) = softmax(logits)·Ê exactly.

Objective: w(σ)·‖D(x; σ) − x₀‖² summed over the L×D embedding coordinates — the x₀-space error that
adaptive samplers observe (unweighted) — plus ``ce_weight`` times the token cross-entropy of the same
forward pass summed over positions (Li et al. 2022, Diffusion-LM's rounding term, arXiv 2205.14217),
which keeps the jointly learned embeddings apart; an adaptive sampler's importance factor multiplies both.
Decoding: the nearest normalised embedding at each position. ``docs/text.md`` records these choices.

Metrics (``infonoise_modalities.text.mauve``): MAUVE in mauve-text's own protocol, each generated text whole
(its prompt followed by its generated continuation up to its first end-of-text token, ``decode_generated``)
against the document whose opening was the prompt (``decode_reference``: the document truncated to
``seq_len`` tokens), the two sides row-aligned and of equal size; generative perplexity of the generated
texts.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from infonoise_modalities.text.data import (
    MINILM_TOKENIZER,
    Corpus,
    Vocabulary,
    decode_texts,
    download_openwebtext,
    fortunes_corpus,
    load_tokenizer,
    minilm_path,
    missing_openwebtext,
    openwebtext_corpus,
    save_documents,
    separator_id,
    token_cache,
)
from infonoise_modalities.text.mauve import model_available
from infonoise_modalities.text.network import LogitsSink, TextTransformer
from suite.noise.weighting import LossWeight
from suite.objectives import GaussianX0Objective, Objective
from suite.paths import tokens_dir
from suite.task import TASKS, Batch, Split, Task, TaskData, content_fingerprint

OPENWEBTEXT_DOCUMENTS = 8_013_769
REAL_TOKENIZER = "gpt2"


def _text_net(model: nn.Module) -> TextTransformer:
    """The TextTransformer inside an EDMDenoiser, possibly wrapped by DDP or torch.compile."""
    for attribute in ("_orig_mod", "module", "net"):
        model = getattr(model, attribute, model)
    if not isinstance(model, TextTransformer):
        raise TypeError(f"expected a TextTransformer inside the model, got {type(model).__name__}")
    return model


class EmbeddingObjective(GaussianX0Objective):
    """w(σ)·importance·‖D(x₀ + σε; σ) − x₀‖² + importance·ce_weight·CE, with x₀ the normalised embeddings.

    Observed (for adaptive samplers): the unweighted squared error alone. The cross-entropy targets are
    the tokens whose embeddings x₀ holds, recovered exactly as argmax_v ⟨x₀, ê_v⟩ (x₀'s rows are rows of Ê).
    """

    def __init__(self, weight: LossWeight, ce_weight: float) -> None:
        if ce_weight < 0:
            raise ValueError(f"ce_weight must be ≥ 0, got {ce_weight}")
        super().__init__(weight)
        self.ce_weight = float(ce_weight)

    def encode(self, model: nn.Module, x0: Tensor) -> Tensor:
        if x0.is_floating_point():
            raise ValueError(f"the text objective encodes token indices, got {x0.dtype}")
        return _text_net(model).embed(x0)

    def denoise(
        self, model: nn.Module, x: Tensor, sigma: Tensor, cond: dict[str, Tensor], x0: Tensor
    ) -> tuple[Tensor, Tensor | None]:
        """D(x; σ) and ce_weight·CE of the denoiser's logits against the tokens of x₀ (none at weight 0)."""
        sink = LogitsSink() if self.ce_weight else None
        denoised = model(x, sigma, **cond, logits_out=sink)
        if sink is None or sink.logits is None:
            return denoised, None
        with torch.no_grad():
            targets = _text_net(model).nearest_tokens(x0)
        ce = F.cross_entropy(sink.logits.float().transpose(1, 2), targets, reduction="none").sum(dim=1)
        return denoised, self.ce_weight * ce


class TokenBlocks(Split):
    """Blocks of a memory-mapped token stream in model indices: x0 = the last L tokens of each block,
    cond = {"prefix": its first P tokens, "prefix_mask": ones} (empty when P = 0)."""

    def __init__(self, blocks: np.ndarray, vocabulary: Vocabulary, prefix_len: int) -> None:
        self.blocks = blocks
        self.vocabulary = vocabulary
        self.prefix_len = prefix_len

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def batch(self, indices: Tensor, device: torch.device) -> Batch:
        rows = self.vocabulary.encode(self.blocks[indices.cpu().numpy()].astype(np.int64))
        tokens = torch.from_numpy(rows).to(device)
        p = self.prefix_len
        if not p:
            return Batch(tokens, {})
        mask = torch.ones((len(tokens), p), dtype=torch.float32, device=device)
        return Batch(tokens[:, p:], {"prefix": tokens[:, :p], "prefix_mask": mask})


def _example_documents(n: int, words_per_document: int) -> list[str]:
    """n real English documents of at least ``words_per_document`` words, from Python's stdlib docstrings."""
    import argparse
    import collections
    import inspect
    import json
    import pathlib
    import subprocess
    import threading

    paragraphs = []
    for module in (argparse, collections, inspect, json, pathlib, subprocess, threading, random):
        for obj in (module, *vars(module).values()):
            doc = inspect.getdoc(obj) if callable(obj) or inspect.ismodule(obj) else None
            if doc and len(doc) > 200:
                paragraphs.append(doc)
    paragraphs = list(dict.fromkeys(paragraphs))
    if not paragraphs:
        raise RuntimeError("no stdlib docstrings to write example documents from (Python run with -OO?)")
    documents, current, words = [], [], 0
    for paragraph in itertools.cycle(paragraphs):
        current.append(paragraph)
        words += len(paragraph.split())
        if words >= words_per_document:
            documents.append("\n\n".join(current))
            current, words = [], 0
            if len(documents) == n:
                return documents
    raise AssertionError("unreachable")


@TASKS.register("owt")
class OpenWebText(Task):
    """OpenWebText (or the fortunes stand-in) as prefix-conditioned embedding diffusion."""

    guidance_source = (
        "provisional: 2.0 is not measured; each sampler's own scale: suite guidance --rescore, docs/text.md"
    )

    modality = "text"
    model_space = "learned"

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self._tokenizer: Any = None
        self._vocabulary: Vocabulary | None = None

    # -- data --------------------------------------------------------------------------------------
    @property
    def prefix_len(self) -> int:
        return int(self.network["prefix_len"])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        seq_len, prefix_len = int(self.network["seq_len"]), self.prefix_len
        if not 0 <= prefix_len < seq_len:
            raise ValueError(f"need 0 ≤ prefix_len < seq_len, got prefix_len={prefix_len}, seq_len={seq_len}")
        return (seq_len - prefix_len, int(self.network["embed_dim"]))

    @property
    def conditional(self) -> bool:  # type: ignore[override]
        """Conditioned on a prefix exactly when the preset's ``prefix_len`` is positive."""
        return self.prefix_len > 0

    def _corpus(self) -> tuple[Corpus, bool]:
        corpus, root = str(self.cfg.get("corpus", "openwebtext")), self.cfg.get("root")
        validation = self.cfg.get("validation_docs")
        if corpus == "fortunes":
            folder = root or "/usr/share/games/fortunes"
            return fortunes_corpus(folder, int(validation or 1000)), True
        if corpus != "openwebtext":
            raise ValueError(f"unknown corpus {corpus!r}; valid corpora: openwebtext, fortunes")
        if not root:
            if self.allow_stand_in:
                return fortunes_corpus(validation_docs=1000), True
            raise missing_openwebtext(None, "task.root is not set")
        loaded = openwebtext_corpus(root, int(validation or 100_000))
        return loaded, loaded.num_documents != OPENWEBTEXT_DOCUMENTS

    def data_problems(self) -> list[str]:
        """OpenWebText's folder and the tokenizer, each where no stand-in may take its place (without the
        stand-in permission); the metrics' text models are theirs to report (``Metric.problems``)."""
        problems = []
        corpus, root = str(self.cfg.get("corpus", "openwebtext")), self.cfg.get("root")
        if corpus == "openwebtext" and root and not Path(str(root)).expanduser().is_dir():
            problems.append(str(missing_openwebtext(str(root), "no such folder")))
        if self.allow_stand_in:
            return problems
        if corpus == "openwebtext" and not root:
            problems.append(str(missing_openwebtext(None, "task.root is not set")))
        spec = str(self.cfg.get("tokenizer", REAL_TOKENIZER))
        local = Path(spec).expanduser().is_dir() or model_available(spec)
        if spec != MINILM_TOKENIZER and not self.cfg.get("download") and not local:
            problems.append(
                f"tokenizer {spec!r} is neither a folder nor in the local Hugging Face cache; save it with "
                "save_pretrained on a machine with internet and pass task.tokenizer=<that folder>, set "
                "task.download=true, or budget.allow_stand_in=true for the MiniLM stand-in"
            )
        return problems

    def _tokenizer_for(self) -> tuple[Any, bool]:
        spec = str(self.cfg.get("tokenizer", REAL_TOKENIZER))
        try:
            return load_tokenizer(spec, bool(self.cfg.get("download", False))), spec != REAL_TOKENIZER
        except FileNotFoundError:
            if not self.allow_stand_in or spec == MINILM_TOKENIZER:
                raise
        return load_tokenizer(MINILM_TOKENIZER), True

    @staticmethod
    def _tokenizer_label(tokenizer: Any) -> str:
        if tokenizer.name_or_path == str(minilm_path()):
            return "all-MiniLM-L6-v2 WordPiece (stand-in for GPT-2's)"
        return str(tokenizer.name_or_path)

    def load(self) -> TaskData:
        corpus, corpus_stand_in = self._corpus()
        tokenizer, tokenizer_stand_in = self._tokenizer_for()
        cache_dir = self.cfg.get("cache_dir") or tokens_dir()
        caches = {
            split: token_cache(corpus, split, tokenizer, cache_dir, log=print)
            for split in ("train", "validation")
        }
        if self._full_vocabulary(tokenizer_stand_in):
            vocabulary = Vocabulary.full(tokenizer)
        else:
            max_vocab = self.cfg.get("max_vocab")
            counts = caches["train"].counts + caches["validation"].counts
            vocabulary = Vocabulary.from_counts(
                counts, tokenizer, None if max_vocab is None else int(max_vocab)
            )
        self._tokenizer, self._vocabulary = tokenizer, vocabulary
        seq_len = int(self.network["seq_len"])
        train = TokenBlocks(caches["train"].blocks(seq_len), vocabulary, self.prefix_len)
        openings, short = caches["validation"].document_openings(seq_len, self.prefix_len + 1)
        if not len(openings):
            raise ValueError(
                f"{corpus.variant}: no validation document holds more than prefix_len={self.prefix_len} "
                "tokens, so none gives a prompt and a continuation; use more validation_docs"
            )
        reference = TokenBlocks(openings, vocabulary, self.prefix_len)
        stand_in = corpus_stand_in or tokenizer_stand_in or vocabulary.size != len(tokenizer)
        variant = (
            f"{corpus.variant}; {self._tokenizer_label(tokenizer)} tokenizer; {vocabulary.description}; "
            f"{len(train)} training blocks of {seq_len} tokens; {len(reference)} validation documents, each "
            f"its first {seq_len} tokens ({short} of at most {self.prefix_len} tokens left out); the first "
            f"{self.prefix_len} tokens the prefix"
        )
        fingerprint = content_fingerprint(
            caches["train"].meta["sha256"],
            caches["validation"].meta["sha256"],
            vocabulary.ids,
            f"{seq_len}:{self.prefix_len}:documents",
        )
        info = {
            "sigma_data": float(self.cfg["sigma_data"]),
            "encoding": f"token → learned embedding normalised to length √{self.sample_shape[1]}",
            "tokenizer": self._tokenizer_label(tokenizer),
            "vocabulary": vocabulary.description,
            "vocab_size": vocabulary.size,
            "seq_len": seq_len,
            "prefix_len": self.prefix_len,
            "reference_units": "validation documents: the prompt their first prefix_len tokens, the human "
            "text the document truncated to seq_len tokens",
            "validation_documents_left_out": short,
            "train_tokens": caches["train"].meta["tokens"],
            "cache": str(caches["train"].path.parent),
        }
        return TaskData(train, reference, variant, stand_in, fingerprint, corpus.source, info)

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        """n documents of ≥ 1500 words (stdlib docstrings) saved with ``datasets`` like OpenWebText."""
        folder = Path(folder)
        save_documents(_example_documents(n, 1500), folder / "openwebtext")
        return {
            "root": str(folder / "openwebtext"),
            "tokenizer": MINILM_TOKENIZER,
            "validation_docs": max(1, n // 4),
            "cache_dir": str(folder / "token-cache"),
            "allow_stand_in": True,
        }

    @classmethod
    def prepare(cls, source: str | None, dest: str) -> None:
        download_openwebtext(source, dest)

    # -- network and objective ---------------------------------------------------------------------
    def _full_vocabulary(self, tokenizer_stand_in: bool) -> bool:
        """Whether the model keeps the tokenizer's whole vocabulary (else a corpus sub-vocabulary)."""
        mode = str(self.cfg.get("vocab", "auto"))
        if mode not in ("auto", "full", "corpus"):
            raise ValueError(f"unknown vocab {mode!r}; valid choices: auto, full, corpus")
        return mode == "full" or (mode == "auto" and not tokenizer_stand_in)

    def _planned_vocab_size(self) -> int:
        """The vocabulary size known without reading the corpus: the tokenizer's, or the sub-vocabulary's
        cap (its upper bound when uncapped)."""
        tokenizer, stand_in = self._tokenizer_for()
        max_vocab = self.cfg.get("max_vocab")
        if self._full_vocabulary(stand_in) or max_vocab is None:
            return len(tokenizer)
        return min(int(max_vocab), len(tokenizer))

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        """The transformer for the loaded vocabulary; before ``load()`` (the run planner's check and cost
        estimate, which read no corpus) for the vocabulary size the tokenizer and config imply."""
        seq_len, prefix_len = int(preset["seq_len"]), int(preset["prefix_len"])
        vocab_size = self._planned_vocab_size() if self._vocabulary is None else self._vocabulary.size
        return TextTransformer(
            vocab_size=vocab_size,
            seq_len=seq_len - prefix_len,
            prefix_len=prefix_len,
            embed_dim=int(preset["embed_dim"]),
            width=int(preset["width"]),
            depth=int(preset["depth"]),
            heads=int(preset["heads"]),
            mlp_ratio=int(preset.get("mlp_ratio", 4)),
            dropout=float(preset.get("dropout", 0.0)),
            sigma_data=float(self.cfg["sigma_data"]),
        )

    def objective(self, weight: LossWeight) -> Objective:
        return EmbeddingObjective(weight, float(self.cfg.get("ce_weight", 1.0)))

    # -- decoding and metrics ----------------------------------------------------------------------
    def _indices_to_texts(self, indices: Tensor) -> list[str]:
        if self._vocabulary is None:
            raise RuntimeError("decode needs the tokenizer and vocabulary of load()")
        ids = self._vocabulary.decode(indices.cpu().numpy())
        return decode_texts(ids, self._tokenizer)

    def _indices(self, x: Tensor, model: nn.Module | None) -> Tensor:
        """Model-space samples [N, L, D] → model token indices on the CPU (indices pass through)."""
        if not x.is_floating_point():
            return x.cpu()
        if model is None:
            raise ValueError("decoding embeddings needs the model (its embedding table)")
        with torch.no_grad():
            return _text_net(model).nearest_tokens(x.to(next(model.parameters()).device)).cpu()

    def decode(self, x: Tensor, model: nn.Module | None) -> list[str]:
        """Model-space samples [N, L, D] → texts by nearest embedding (token indices decode directly)."""
        return self._indices_to_texts(self._indices(x, model))

    def decode_generated(self, x: Tensor, model: nn.Module | None, cond: Mapping[str, Tensor]) -> list[str]:
        """Each generated continuation, up to its first end-of-text token (where MAUVE's generations stop),
        after the prompt it was generated for: the complete generation that MAUVE scores (Pillutla et al.
        2021 featurise the context with the text)."""
        tokens = self._indices(x, model)
        if self._vocabulary is not None:
            sep = int(self._vocabulary.encode(np.array([separator_id(self._tokenizer)]))[0])
            ended = (tokens == sep).cumsum(dim=1) > 0
            tokens = tokens.masked_fill(ended, sep)
        if "prefix" in cond:
            tokens = torch.cat([cond["prefix"].cpu().to(tokens.dtype), tokens], dim=1)
        return self._indices_to_texts(tokens)

    def decode_reference(self, batch: Batch) -> list[str]:
        """Each reference document as its prompt followed by its real continuation: the document truncated
        to ``seq_len`` tokens."""
        return self.decode_generated(batch.x0, None, batch.cond)
