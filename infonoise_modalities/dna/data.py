"""DDSM's human promoter data: TSS-centred windows of hg38 with their CAGE signal, prepared for the DNA task.

Source (Avdeyev et al. 2023, "Dirichlet Diffusion Score Model for Biological Sequence Generation", arXiv
2305.10699; Zenodo record 7943307, ``data.tar.gz``, as Dirichlet flow matching also uses it): the
GRCh38 primary assembly (FASTA), the FANTOM CAT robust TSS table sorted by CAGE support
(``FANTOM_CAT.lv3_robust.tss.sortedby_fantomcage.hg38.v4.tsv``, columns ``chr``, ``TSS``, ``strand``), the
aggregated FANTOM CAGE signal per strand (bigWig ``agg.{plus,minus}.bw.bedgraph.bw``), FANTOM blacklists
(``fantom.blacklist8.{plus,minus}.bed.gz``), and Sei's checkpoint and target names.

Windows, as DDSM's ``TSSDatasetS`` reads them. For a TSS at 0-based position p on strand s, the window is
[p − L/2 + o, p + L/2 + o) with o = 1 on the minus strand and 0 on the plus strand (L = 1024); a minus-strand
window is reverse-complemented, and its signal is the minus-strand track reversed, so every window reads
5′→3′ in the direction of transcription. The conditioning signal is the track of the TSS's own strand (the
fifth channel that DDSM's score network takes); positions without data are 0, and any position inside
an interval of either blacklist is set to 0 (DDSM zeroes both tracks there). Windows that leave their
chromosome are skipped (DDSM's genome reader would reject them) and counted.

Split by chromosome, as DDSM and Dirichlet FM: test = chr8 and chr9, validation = chr10, train = the rest,
applied after truncating the table to its first ``n_tsses`` rows (DDSM's training script: 40,000;
Dirichlet FM: 100,000). Each window is stored with ``FLANK`` = 100 further bases (and signal) on each side, so
that training can shift a window's centre by up to ±100 bp, as DDSM's training windows are shifted
(``rand_offset=100``; Dirichlet FM shifts by ±10, which the same flanks allow), none at validation or test;
``Windows.centre`` is the unshifted window.

Prepared format (``suite data dna DEST``): ``sequences.npy`` uint8 [N, L + 2·flank] base codes (A, C, G,
T = 0..3, anything else 4), ``signal.npy`` float16 [N, L + 2·flank] (float32 when a value exceeds float16's
range),
``windows.npz`` (``row`` of the TSS table, ``chrom`` index, ``tss``, ``strand`` ±1) and ``promoters.json``
(format, length, chromosome names, counts, source files and their SHA-256). ``load_prepared`` memory-maps
them.

Integrity. The archive is pinned (``DDSM_ARCHIVE``: md5 and size, as a third-party preparer of the same
record records them; not re-checked against Zenodo from this project's offline machine) and checked before
anything is unpacked, offline, whether it was downloaded or given. A download goes through torchvision's
``download_url`` (a progress bar, the md5 checked) to a temporary name, and a failed or corrupted attempt is
retried (``DOWNLOAD_ATTEMPTS`` in all, waiting 5 s, then 10 s); ``--unpinned-archive`` (a re-released
archive) checks it against the Zenodo record instead, or only warns when Zenodo is unreachable. Members are
extracted to temporary names, compared with the size their tar header gives, and renamed into place only
when whole, so a truncated archive leaves no partial file. A genome without a chromosome that the TSS table
names, or a preparation that yields 0 windows, is refused before any prepared file is written; the files
are written to temporary names and renamed, the manifest last (removed first), so a set exists exactly
when its manifest does, and ``load_prepared`` refuses a set of 0 windows or one whose arrays disagree with
its manifest.

Offline stand-in (CPU smoke runs): real but bacterial DNA from Debian's ``kaptive-example`` assemblies,
windows at fixed random positions and strands, with a synthetic CAGE-like peak at the window centre; the
last assembly is held out as the reference split. It is marked as a stand-in wherever it is recorded.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch import Tensor
from tqdm import tqdm

from suite.digest import file_digest
from suite.watch import progress_enabled

BASES = "ACGT"
UNKNOWN = 4
SEQ_LEN = 1024
FLANK = 100  # bases kept on each side of a window, so that training can shift it by up to ±FLANK
VALID_CHROMS = ("chr10",)
TEST_CHROMS = ("chr8", "chr9")
SPLITS = ("train", "valid", "test")
FORMAT = "infonoise-suite dna promoter windows v1"

DDSM_RECORD = "https://zenodo.org/records/7943307"
DDSM_ARCHIVE_URL = f"{DDSM_RECORD}/files/data.tar.gz"
DDSM_API_URL = "https://zenodo.org/api/records/7943307"


@dataclass(frozen=True)
class ArchivePin:
    """The md5 and size in bytes an archive must have."""

    md5: str
    size: int


DDSM_ARCHIVE = ArchivePin(md5="aa53f13ddcf1474962548bc02cbb9b93", size=10_162_295_808)
UNPINNED_FLAG = "--unpinned-archive"
GENOME = "Homo_sapiens.GRCh38.dna.primary_assembly.fa"
TSS_TABLE = "FANTOM_CAT.lv3_robust.tss.sortedby_fantomcage.hg38.v4.tsv"
SIGNAL_TRACKS = ("agg.plus.bw.bedgraph.bw", "agg.minus.bw.bedgraph.bw")
BLACKLISTS = ("fantom.blacklist8.plus.bed.gz", "fantom.blacklist8.minus.bed.gz")
SEI_FILES = ("best.sei.model.pth.tar", "target.sei.names")
RAW_FILES = (GENOME, TSS_TABLE, *SIGNAL_TRACKS, *BLACKLISTS)
PREPARED_FILES = ("promoters.json", "sequences.npy", "signal.npy", "windows.npz")

KAPTIVE_DIR = Path("/usr/share/doc/kaptive/examples")
FLOAT16_MAX = float(np.finfo(np.float16).max)

_CODE_TABLE = np.full(256, UNKNOWN, dtype=np.uint8)
for _i, _base in enumerate(BASES):
    _CODE_TABLE[ord(_base)] = _CODE_TABLE[ord(_base.lower())] = _i
_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)


# -- bases -------------------------------------------------------------------------------------------
def encode_bases(text: bytes | str) -> np.ndarray:
    """Bases → uint8 codes (A, C, G, T → 0..3 in either case; any other letter → 4)."""
    raw = text.encode("ascii", "replace") if isinstance(text, str) else text
    return _CODE_TABLE[np.frombuffer(raw, dtype=np.uint8)]


def decode_bases(codes: np.ndarray) -> str:
    """uint8 codes → a base string (4 → N)."""
    return _LETTERS[np.asarray(codes, dtype=np.uint8)].tobytes().decode("ascii")


def reverse_complement(codes: np.ndarray) -> np.ndarray:
    """Reverse complement of codes along the last axis (A↔T, C↔G, N stays N)."""
    flipped = np.asarray(codes)[..., ::-1]
    return np.where(flipped < UNKNOWN, 3 - flipped, UNKNOWN).astype(np.uint8)


def one_hot(codes: Tensor) -> Tensor:
    """uint8/long codes [N, L] → float32 one-hot [N, 4, L]; code 4 (unknown) gives 0.25 in all four rows,
    as selene's genome encoding does."""
    table = torch.cat([torch.eye(4), torch.full((1, 4), 0.25)]).to(codes.device)
    return table[codes.long()].transpose(1, 2).contiguous()


def argmax_bases(x: Tensor) -> list[str]:
    """Model-space [N, 4, L] → base strings by the largest channel (A, C, G, T)."""
    codes = x.argmax(dim=1).to(torch.uint8).cpu().numpy()
    return [decode_bases(row) for row in codes]


def bases_of_one_hot(x: Tensor) -> list[str]:
    """Exact inverse of `one_hot`: a column with a single maximum is its base, a uniform column is N."""
    top = x.max(dim=1)
    tied = (x == top.values[:, None]).sum(dim=1) > 1
    codes = torch.where(tied, UNKNOWN, top.indices).to(torch.uint8).cpu().numpy()
    return [decode_bases(row) for row in codes]


# -- raw DDSM files ----------------------------------------------------------------------------------
def read_fasta(path: str | Path, wanted: set[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """(name, sequence bytes) of each record of a FASTA file (plain or .gz); the name is the first word of
    the header. Records not in ``wanted`` (when given) are skipped without being kept in memory."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    name: str | None = None
    lines: list[bytes] = []
    with opener(path, "rb") as handle:
        for line in handle:
            if line.startswith(b">"):
                if name is not None and (wanted is None or name in wanted):
                    yield name, b"".join(lines)
                name = line[1:].split(maxsplit=1)[0].decode() if line[1:].strip() else ""
                lines = []
            elif name is not None and (wanted is None or name in wanted):
                lines.append(line.rstrip())
    if name is not None and (wanted is None or name in wanted):
        yield name, b"".join(lines)


@dataclass(frozen=True)
class TSSTable:
    """TSSs in table order: chromosome names, 0-based positions and strands (+1 / −1)."""

    chrom: np.ndarray
    tss: np.ndarray
    strand: np.ndarray


def read_tss_table(path: str | Path) -> TSSTable:
    """The FANTOM TSS table as DDSM reads it: tab-separated, a header with ``chr``, ``TSS``, ``strand``."""
    import pandas as pd

    table = pd.read_table(path, sep="\t")
    missing = [c for c in ("chr", "TSS", "strand") if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: TSS table lacks column(s) {missing}; it has {list(table.columns)}")
    strand = table["strand"].astype(str).to_numpy()
    bad = sorted(set(strand) - {"+", "-"})
    if bad:
        raise ValueError(f"{path}: strand must be '+' or '-', found {bad[:5]}")
    return TSSTable(
        table["chr"].astype(str).to_numpy(),
        table["TSS"].to_numpy(dtype=np.int64),
        np.where(strand == "-", -1, 1).astype(np.int8),
    )


def split_of(chroms: Sequence[str] | np.ndarray) -> np.ndarray:
    """Split name per chromosome: test for chr8/chr9, valid for chr10, train otherwise."""
    chroms = np.asarray(chroms, dtype=str)
    out = np.full(chroms.shape, "train", dtype=object)
    out[np.isin(chroms, VALID_CHROMS)] = "valid"
    out[np.isin(chroms, TEST_CHROMS)] = "test"
    return out


def read_blacklist(paths: Sequence[str | Path]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Union of BED intervals (plain or .gz) per chromosome: (starts, ends), sorted by start."""
    intervals: dict[str, list[tuple[int, int]]] = {}
    for path in paths:
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            for line in handle:
                fields = line.split("\t")
                if len(fields) < 3 or line.startswith(("#", "track", "browser")):
                    continue
                intervals.setdefault(fields[0], []).append((int(fields[1]), int(fields[2])))
    out = {}
    for chrom, pairs in intervals.items():
        pairs.sort()
        out[chrom] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    return out


def blacklist_mask(
    blacklist: dict[str, tuple[np.ndarray, np.ndarray]], chrom: str, start: int, end: int
) -> np.ndarray:
    """Boolean [end − start]: positions inside a blacklisted interval of ``chrom``."""
    mask = np.zeros(end - start, dtype=bool)
    if chrom not in blacklist:
        return mask
    starts, ends = blacklist[chrom]
    before = np.searchsorted(starts, end)
    overlapping = ends[:before] > start
    for s, e in zip(starts[:before][overlapping], ends[:before][overlapping], strict=True):
        mask[max(s - start, 0) : e - start] = True
    return mask


def ensembl_name(chrom: str) -> str:
    """Ensembl's name of a UCSC-style chromosome name (chr1 → 1, chrM → MT), as in Ensembl's FASTA."""
    bare = chrom.removeprefix("chr")
    return "MT" if bare == "M" else bare


def resolve_name(chrom: str, available: set[str] | dict[str, int]) -> str | None:
    """The name under which ``chrom`` (UCSC style, e.g. chr1) appears in a file: itself or its Ensembl
    name; None if absent."""
    if chrom in available:
        return chrom
    return ensembl_name(chrom) if ensembl_name(chrom) in available else None


# -- windows -----------------------------------------------------------------------------------------
@dataclass
class Windows:
    """Prepared windows: base codes [N, L + 2·flank] uint8, signal [N, L + 2·flank], and where each came
    from; the window proper is the centre L positions, and ``flank`` bases on each side let training shift
    it (a set prepared before flanks were kept has ``flank`` 0)."""

    sequences: np.ndarray
    signal: np.ndarray
    row: np.ndarray
    chrom: np.ndarray
    tss: np.ndarray
    strand: np.ndarray
    chrom_names: list[str]
    flank: int = 0

    def __len__(self) -> int:
        return int(self.sequences.shape[0])

    @property
    def seq_len(self) -> int:
        """The window length L, without the flanks."""
        return int(self.sequences.shape[1]) - 2 * self.flank

    def split_indices(self, split: str, n_tsses: int | None = None) -> np.ndarray:
        """Indices of the windows of ``split`` among the first ``n_tsses`` table rows (all when None)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
        names = np.asarray(self.chrom_names, dtype=str)[self.chrom]
        keep = split_of(names) == split
        if n_tsses is not None:
            keep &= self.row < int(n_tsses)
        return np.flatnonzero(keep)


class MissingChromosomes(ValueError):
    """A genome file without records of chromosomes that the TSS table names."""

    def __init__(self, genome: str | Path, missing: Sequence[str]) -> None:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        super().__init__(
            f"{genome} ({Path(genome).stat().st_size} bytes) has no record of {len(missing)} "
            f"chromosome(s) that the TSS table names: {shown}; the genome file is incomplete or not GRCh38's "
            "primary assembly"
        )


def extract_windows(
    genome: str | Path,
    table: TSSTable,
    tracks: Sequence[str | Path],
    blacklists: Sequence[str | Path],
    seq_len: int = SEQ_LEN,
    flank: int = FLANK,
) -> tuple[Windows, int]:
    """Windows of every TSS of ``table`` with ``flank`` bases on each side (see the module docstring);
    returns them and the number skipped.

    ``tracks`` are the plus- and minus-strand bigWig files (read with pyBigWig). The genome is read once,
    one chromosome at a time. Raises `MissingChromosomes` when the genome has no record (under its UCSC or
    Ensembl name) of a chromosome the table names: an empty or cut genome file, not a property of the data.
    """
    import pyBigWig

    if seq_len % 2:
        raise ValueError(f"window length must be even, got {seq_len}")
    half, width = seq_len // 2, seq_len + 2 * flank
    signal_files = [pyBigWig.open(str(t)) for t in tracks]
    try:
        masked = read_blacklist(blacklists)
        n = len(table.tss)
        sequences = np.full((n, width), UNKNOWN, dtype=np.uint8)
        signal = np.zeros((n, width), dtype=np.float32)
        ok = np.zeros(n, dtype=bool)
        wanted = {}
        for chrom in sorted(set(table.chrom)):
            wanted[chrom] = wanted[ensembl_name(chrom)] = chrom
        found = set()
        for fasta_name, raw in read_fasta(genome, set(wanted)):
            chrom = wanted[fasta_name]
            found.add(chrom)
            codes = encode_bases(raw)
            for i in np.flatnonzero(table.chrom == chrom):
                minus = table.strand[i] < 0
                start = int(table.tss[i]) - half + int(minus) - flank
                end = start + width
                if start < 0 or end > len(codes):
                    continue
                track = signal_files[1 if minus else 0]
                track_name = resolve_name(chrom, track.chroms())
                values = (
                    np.nan_to_num(np.asarray(track.values(track_name, start, end, numpy=True), np.float32))
                    if track_name is not None
                    else np.zeros(width, np.float32)
                )
                values[blacklist_mask(masked, chrom, start, end)] = 0
                window = codes[start:end]
                sequences[i] = reverse_complement(window) if minus else window
                signal[i] = values[::-1] if minus else values
                ok[i] = True
    finally:
        for f in signal_files:
            f.close()
    missing = sorted(set(table.chrom) - found)
    if missing:
        raise MissingChromosomes(genome, missing)
    names = sorted(set(table.chrom[ok]))
    index = {c: k for k, c in enumerate(names)}
    windows = Windows(
        sequences=sequences[ok],
        signal=signal[ok],
        row=np.flatnonzero(ok).astype(np.int64),
        chrom=np.array([index[c] for c in table.chrom[ok]], dtype=np.int16),
        tss=table.tss[ok],
        strand=table.strand[ok],
        chrom_names=names,
        flank=flank,
    )
    return windows, int((~ok).sum())


DOWNLOAD_ATTEMPTS = 3


def _temporary(path: Path) -> Path:
    """The name ``path`` is written under until it is whole: hidden, and never a name a reader looks for."""
    return path.with_name(f".{path.name}.partial")


def _publish(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` through its temporary name, flushed to disk, then rename it into place; on any error the
    temporary file is removed and ``path`` is left as it was."""
    partial = _temporary(path)
    try:
        with open(partial, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_prepared(dest: str | Path, windows: Windows, sources: dict[str, str], skipped: int) -> None:
    """Write ``windows`` in the prepared format into ``dest``: the manifest is removed first and written last,
    every file through a temporary name, so a torn write leaves no manifest and is not read."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "promoters.json").unlink(missing_ok=True)
    peak = float(np.abs(windows.signal).max()) if windows.signal.size else 0.0
    dtype = np.float16 if peak <= FLOAT16_MAX else np.float32
    sequences = np.ascontiguousarray(windows.sequences, dtype=np.uint8)
    signal = np.ascontiguousarray(windows.signal, dtype=dtype)
    _publish(dest / "sequences.npy", lambda handle: np.save(handle, sequences))
    _publish(dest / "signal.npy", lambda handle: np.save(handle, signal))
    _publish(
        dest / "windows.npz",
        lambda handle: np.savez(
            handle, row=windows.row, chrom=windows.chrom, tss=windows.tss, strand=windows.strand
        ),
    )
    names = np.asarray(windows.chrom_names, dtype=str)[windows.chrom] if len(windows) else np.array([])
    counts = {s: int((split_of(names) == s).sum()) for s in SPLITS}
    manifest = {
        "format": FORMAT,
        "seq_len": windows.seq_len,
        "flank": windows.flank,
        "windows": len(windows),
        "skipped_out_of_bounds": skipped,
        "split_counts": counts,
        "valid_chroms": list(VALID_CHROMS),
        "test_chroms": list(TEST_CHROMS),
        "chrom_names": windows.chrom_names,
        "signal": "CAGE signal of the TSS strand, 5'->3' in the transcription direction; blacklisted = 0",
        "signal_dtype": np.dtype(dtype).name,
        "sources": sources,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = (json.dumps(manifest, indent=2) + "\n").encode()
    _publish(dest / "promoters.json", lambda handle: handle.write(text))


def missing_data_error(root: str | Path, detail: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"task.root={root}: {detail}. Fix: on a machine with internet run `suite data dna DEST` (downloads "
        f"data.tar.gz of DDSM's promoter data, {DDSM_RECORD}, verifies its checksum and writes "
        f"{', '.join(PREPARED_FILES)} plus {', '.join(SEI_FILES)} into DEST), or `suite data dna "
        "data.tar.gz DEST` with the archive already downloaded; then pass task.root=DEST"
    )


def load_prepared(root: str | Path) -> tuple[Windows, dict]:
    """The prepared windows of ``root`` (arrays memory-mapped) and its manifest; a set of 0 windows, or one
    whose arrays disagree with its manifest, is refused."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise missing_data_error(root, f"{root} does not exist")
    absent = [name for name in PREPARED_FILES if not (root / name).is_file()]
    if absent:
        raise missing_data_error(root, f"{root} lacks {', '.join(absent)}")
    manifest = json.loads((root / "promoters.json").read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{root / 'promoters.json'}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    index = np.load(root / "windows.npz")
    windows = Windows(
        sequences=np.load(root / "sequences.npy", mmap_mode="r"),
        signal=np.load(root / "signal.npy", mmap_mode="r"),
        row=index["row"],
        chrom=index["chrom"],
        tss=index["tss"],
        strand=index["strand"],
        chrom_names=list(manifest["chrom_names"]),
        flank=int(manifest.get("flank", 0)),
    )
    if manifest["windows"] == 0:
        raise missing_data_error(
            root, f"{root / 'promoters.json'} records 0 windows (prepared from incomplete files)"
        )
    lengths = {
        "sequences.npy": windows.sequences.shape[0],
        "signal.npy": windows.signal.shape[0],
        "windows.npz": len(windows.row),
    }
    torn = {name: n for name, n in lengths.items() if n != manifest["windows"]}
    if torn:
        found = ", ".join(f"{name} {n}" for name, n in torn.items())
        raise missing_data_error(root, f"its manifest records {manifest['windows']} windows but {found}")
    return windows, manifest


# -- preparation -------------------------------------------------------------------------------------
def find_raw_files(folder: Path) -> dict[str, Path]:
    """The DDSM files under ``folder`` (any depth), by name; raises naming those that are missing."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("*")):
        if path.name in (*RAW_FILES, *SEI_FILES) and path.is_file():
            found.setdefault(path.name, path)
    missing = [name for name in RAW_FILES if name not in found]
    if missing:
        raise FileNotFoundError(
            f"{folder} lacks {', '.join(missing)}; it should hold the files of data.tar.gz from {DDSM_RECORD}"
        )
    return found


def zenodo_checksum(name: str = "data.tar.gz") -> ArchivePin | None:
    """md5 and size of ``name`` in DDSM's Zenodo record, or None when the API is unreachable."""
    try:
        with urllib.request.urlopen(DDSM_API_URL, timeout=30) as response:
            record = json.load(response)
    except OSError:
        return None
    for entry in record.get("files", []):
        if entry.get("key") == name:
            algorithm, _, value = str(entry.get("checksum", "")).partition(":")
            if algorithm == "md5":
                return ArchivePin(md5=value, size=int(entry.get("size", 0)))
    return None


def md5_file(path: Path) -> str:
    """The md5 of ``path``, with a progress bar (an archive is gigabytes)."""
    size = path.stat().st_size
    desc = f"md5 {path.name}"
    with tqdm(total=size, unit="B", unit_scale=True, desc=desc, disable=not progress_enabled()) as bar:
        return file_digest(path, "md5", progress=bar.update)


def verify_archive(path: Path, expected: ArchivePin, origin: str, fix: str) -> None:
    """Refuse ``path`` unless its size and md5 are ``expected``'s (the size first: it costs nothing)."""
    size = path.stat().st_size
    if size != expected.size:
        raise ValueError(f"{path}: size {size} bytes, expected {expected.size} bytes ({origin}). Fix: {fix}")
    actual = md5_file(path)
    if actual != expected.md5:
        raise ValueError(f"{path}: md5 {actual}, expected {expected.md5} ({origin}). Fix: {fix}")
    print(f"{path}: size {size} bytes and md5 {actual} match ({origin})", flush=True)


def expected_archive(pin: ArchivePin | None) -> tuple[ArchivePin, str, str] | None:
    """(md5 and size, where they come from, what to do on a mismatch) for DDSM's archive: ``pin``, or, when
    unpinned, the Zenodo record's (None when it is unreachable)."""
    again = (
        f"delete it and download {DDSM_ARCHIVE_URL} again (or run `suite data dna DEST`, which downloads it)"
    )
    if pin is not None:
        unpin = f"; if Zenodo has re-released the archive, add {UNPINNED_FLAG} to check it against the record"
        return pin, "pinned as DDSM_ARCHIVE in infonoise_modalities/dna/data.py", again + unpin
    record = zenodo_checksum()
    return None if record is None else (record, f"Zenodo record {DDSM_API_URL}", again)


def check_archive(path: Path, pin: ArchivePin | None) -> None:
    """Check a local archive before it is unpacked (`expected_archive`); unpinned and offline, only warn."""
    expected = expected_archive(pin)
    if expected is None:
        print(
            f"warning: {UNPINNED_FLAG} and {DDSM_API_URL} unreachable: {path} is unpacked without any check",
            file=sys.stderr,
            flush=True,
        )
        return
    verify_archive(path, *expected)


def download_archive(dest: Path, pin: ArchivePin | None) -> Path:
    """Download DDSM's data.tar.gz into ``dest`` (through a temporary name; an archive of the expected size
    already there is kept) and check it as `check_archive` does."""
    expected = expected_archive(pin)
    if expected is None:
        raise FileNotFoundError(
            f"no data.tar.gz at hand and {DDSM_API_URL} is unreachable; download {DDSM_ARCHIVE_URL} on a "
            "machine with internet and run `suite data dna data.tar.gz DEST`"
        )
    size = expected[0].size
    target = dest / "data.tar.gz"
    if not (target.is_file() and target.stat().st_size == size):
        print(f"downloading {DDSM_ARCHIVE_URL} ({size / 1e9:.1f} GB) to {target}", flush=True)
        download(DDSM_ARCHIVE_URL, target, expected[0].md5)
    verify_archive(target, *expected)
    return target


def download(
    url: str, target: Path, md5: str | None = None, attempts: int = DOWNLOAD_ATTEMPTS, wait_s: float = 5.0
) -> None:
    """Download ``url`` to ``target`` with torchvision's ``download_url`` (a progress bar; the md5 checked
    when given) through the temporary name ``_temporary(target)``, renamed into place only when whole.
    A failed attempt (a network error, or a file whose md5 differs) is retried after ``wait_s``, doubling,
    ``attempts`` times in all; then OSError names the URL, the attempts and the last error."""
    from torchvision.datasets.utils import download_url

    partial = _temporary(target)
    for attempt in range(1, attempts + 1):
        partial.unlink(missing_ok=True)  # download_url keeps a file already there when md5 is None
        try:
            download_url(url, str(partial.parent), partial.name, md5=md5)
            os.replace(partial, target)
            return
        except (OSError, RuntimeError) as err:
            partial.unlink(missing_ok=True)
            last = f"{type(err).__name__}: {err}"
            if attempt == attempts:
                raise OSError(
                    f"downloading {url} failed {attempts} times; last error: {last}. Fix: check the network "
                    f"(or download it elsewhere and give the file to `suite data`)"
                ) from None
            delay = wait_s * 2 ** (attempt - 1)
            print(
                f"download of {url} failed ({last}); attempt {attempt + 1} of {attempts} in {delay:g} s",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(delay)


ARCHIVE_DAMAGE = (EOFError, tarfile.ReadError, zlib.error, gzip.BadGzipFile)


def _copy_member(archive: Path, tar: tarfile.TarFile, member: tarfile.TarInfo, out: BinaryIO) -> None:
    """Copy ``member``'s data to ``out`` and check that it is as long as its header says."""
    source = tar.extractfile(member)
    if source is None:
        raise ValueError(f"{archive}: member {member.name} has no data to extract")
    written = 0
    name = Path(member.name).name
    with (
        source,
        tqdm(
            total=member.size,
            unit="B",
            unit_scale=True,
            desc=f"extract {name}",
            disable=not progress_enabled(),
        ) as bar,
    ):
        for block in iter(lambda: source.read(1 << 22), b""):
            out.write(block)
            written += len(block)
            bar.update(len(block))
    if written != member.size:
        raise ValueError(
            f"{archive}: member {member.name} gave {written} bytes, its header says {member.size}; the "
            f"archive is damaged. Fix: download {DDSM_ARCHIVE_URL} again"
        )


def unpack(archive: Path, dest: Path) -> Path:
    """Extract the DDSM files this task reads from ``archive`` into ``dest/raw`` (flattened); returns it.

    Each member goes to a temporary name, is checked against its header's size and is renamed into place
    only when whole; a truncated or damaged archive raises naming the place, leaving no partial file.
    """
    raw = dest / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    wanted = set(RAW_FILES) | set(SEI_FILES)
    place = "at its start"
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                name = Path(member.name).name
                if member.isfile() and name in wanted:
                    place = f"in member {member.name}"
                    _publish(raw / name, lambda out, m=member: _copy_member(archive, tar, m, out))
                place = f"after member {member.name}"
    except ARCHIVE_DAMAGE as error:
        raise ValueError(
            f"{archive} is truncated or damaged {place} ({type(error).__name__}: {error}); no partial file "
            f"was kept. Fix: download {DDSM_ARCHIVE_URL} again and rerun the same command"
        ) from error
    return raw


def reprepare_hint(dest: Path) -> str:
    """What to run when the raw files cannot give a complete prepared set."""
    return (
        f"No prepared set was written to {dest}. Fix: prepare it from DDSM's whole archive, `suite data dna "
        f"data.tar.gz {dest}` ({DDSM_ARCHIVE_URL}, md5 {DDSM_ARCHIVE.md5}), or `suite data dna {dest}` to "
        "download it"
    )


def prepare(source: str | None, dest: str | Path, pin: ArchivePin | None = DDSM_ARCHIVE) -> None:
    """``suite data dna [SOURCE] DEST``: DDSM's archive (downloaded when SOURCE is absent, else a local
    data.tar.gz or a folder holding its extracted files) → the prepared windows in DEST, with Sei's
    checkpoint and target names copied beside them.

    An archive is checked against ``pin`` before it is unpacked (None: ``--unpinned-archive``, see
    `expected_archive`). Raw files whose genome lacks a chromosome of the TSS table, or that give 0 windows,
    are refused before anything is written to DEST.
    """
    start = time.perf_counter()
    dest = Path(dest).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    if source is None:
        raw = unpack(download_archive(dest, pin), dest)
    elif Path(source).is_file():
        archive = Path(source)
        check_archive(archive, pin)
        raw = unpack(archive, dest)
    elif Path(source).is_dir():
        raw = Path(source)
    else:
        raise FileNotFoundError(f"{source} is neither DDSM's data.tar.gz nor a folder of its files")
    files = find_raw_files(raw)
    print("reading the TSS table, genome and CAGE tracks", flush=True)
    table = read_tss_table(files[TSS_TABLE])
    try:
        windows, skipped = extract_windows(
            files[GENOME], table, [files[t] for t in SIGNAL_TRACKS], [files[b] for b in BLACKLISTS]
        )
    except MissingChromosomes as error:
        raise ValueError(f"{error}. {reprepare_hint(dest)}") from error
    if len(windows) == 0:
        raise ValueError(
            f"{files[GENOME]} and {files[TSS_TABLE]} give 0 windows: the table has {len(table.tss)} TSSs, "
            f"{skipped} of them within {SEQ_LEN // 2} bp of their chromosome's end. {reprepare_hint(dest)}"
        )
    for name in SEI_FILES:
        if name in files and files[name].resolve() != (dest / name).resolve():
            with open(files[name], "rb") as original:
                _publish(dest / name, lambda out, f=original: shutil.copyfileobj(f, out, 1 << 22))
    sources = {name: file_digest(files[name]) for name in RAW_FILES if name != GENOME}
    sources[GENOME] = f"{files[GENOME].stat().st_size} bytes"
    write_prepared(dest, windows, sources, skipped)
    size = sum((dest / name).stat().st_size for name in PREPARED_FILES)
    print(
        f"wrote {len(windows)} windows ({skipped} out of bounds skipped) to {dest}: {size / 1e6:.0f} MB, "
        f"{time.perf_counter() - start:.0f} s",
        flush=True,
    )


# -- example files (tests, the contract test) ---------------------------------------------------------
def write_example_raw(folder: str | Path, n: int, seed: int = 0, seq_len: int = SEQ_LEN) -> Path:
    """Write a tiny data set in DDSM's raw formats into ``folder``: a FASTA of chr1, chr2, chr8, chr9 and
    chr10 (random bases, some lowercase and N), a TSS table of ``n`` rows cycling over those chromosomes and
    both strands, plus- and minus-strand bigWig tracks, and blacklist BED files. Returns ``folder``."""
    import pyBigWig

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    chroms = ["chr1", "chr8", "chr2", "chr10", "chr9"]
    per_chrom = -(-n // len(chroms))
    length = seq_len * (per_chrom + 2)
    genome = {}
    with open(folder / GENOME, "w") as fasta:
        for chrom in sorted(chroms):
            seq = "".join(rng.choice(list("ACGTacgtN"), size=length, p=[0.22] * 4 + [0.03] * 4 + [0.0]))
            seq = seq[:10] + "NNNN" + seq[14:]
            genome[chrom] = seq
            fasta.write(f">{chrom} example\n")
            for i in range(0, length, 60):
                fasta.write(seq[i : i + 60] + "\n")
    rows = []
    for i in range(n):
        chrom = chroms[i % len(chroms)]
        tss = seq_len * (1 + i // len(chroms)) + int(rng.integers(0, seq_len // 2))
        rows.append((chrom, tss, "+" if i % 2 == 0 else "-", f"ENSG{i:08d}"))
    with open(folder / TSS_TABLE, "w") as table:
        table.write("chr\tTSS\tstrand\tgeneID\n")
        for chrom, tss, strand, gene in rows:
            table.write(f"{chrom}\t{tss}\t{strand}\t{gene}\n")
    header = [(c, length) for c in sorted(chroms)]
    for k, name in enumerate(SIGNAL_TRACKS):
        track = pyBigWig.open(str(folder / name), "w")
        track.addHeader(header)
        for chrom, _ in header:
            values = (rng.gamma(0.3, 4.0, size=length) * (rng.random(length) < 0.2)).astype(np.float64)
            values += 50.0 * k * (np.arange(length) % 97 == 0)
            track.addEntries(chrom, 0, values=values.tolist(), span=1, step=1)
        track.close()
    for name in BLACKLISTS:
        with gzip.open(folder / name, "wt") as bed:
            bed.write(f"chr1\t{seq_len + 100}\t{seq_len + 140}\n")
    return folder


# -- offline stand-in ---------------------------------------------------------------------------------
def synthetic_signal(n: int, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """CAGE-like tracks [n, L]: a peak a·exp(−|i − c|/w) at c = L/2 + jitter, with a ~ LogNormal(2, 1),
    w ~ U(2, 20) and jitter ~ U{−10..10}, rounded to tenths (synthetic; no real CAGE signal)."""
    centre = seq_len // 2 + rng.integers(-10, 11, size=(n, 1))
    height = rng.lognormal(2.0, 1.0, size=(n, 1))
    width = rng.uniform(2.0, 20.0, size=(n, 1))
    distance = np.abs(np.arange(seq_len)[None, :] - centre)
    return np.round(height * np.exp(-distance / width), 1).astype(np.float32)


def stand_in_windows(
    n_train: int,
    n_reference: int,
    seq_len: int = SEQ_LEN,
    seed: int = 0,
    folder: Path = KAPTIVE_DIR,
    flank: int = FLANK,
) -> tuple[Windows, Windows, str]:
    """(train, reference, source) windows from the kaptive-example assemblies: fixed random positions and
    strands, synthetic signal, ``flank`` bases on each side; the last assembly (sorted by name) is the
    reference."""
    files = sorted(folder.glob("*.fasta.gz"))
    if len(files) < 2:
        raise FileNotFoundError(
            f"the offline DNA stand-in reads Debian's kaptive-example assemblies from {folder} (found "
            f"{len(files)}); install them with `apt-get install kaptive-example`, or set task.root to "
            "prepared DDSM data (`suite data dna DEST`)"
        )
    rng = np.random.default_rng(seed)
    width = seq_len + 2 * flank

    def draw(paths: list[Path], n: int) -> Windows:
        contigs = [
            (p.name.removesuffix(".fasta.gz"), encode_bases(seq)) for p in paths for _, seq in read_fasta(p)
        ]
        contigs = [c for c in contigs if len(c[1]) >= width]
        lengths = np.array([len(c[1]) - width + 1 for c in contigs], dtype=np.float64)
        pick = rng.choice(len(contigs), size=n, p=lengths / lengths.sum())
        sequences = np.empty((n, width), dtype=np.uint8)
        strand = np.where(rng.random(n) < 0.5, -1, 1).astype(np.int8)
        starts = np.empty(n, dtype=np.int64)
        for i, c in enumerate(pick):
            starts[i] = rng.integers(0, int(lengths[c]))
            window = contigs[c][1][starts[i] : starts[i] + width]
            sequences[i] = reverse_complement(window) if strand[i] < 0 else window
        names = sorted({contigs[c][0] for c in pick})
        index = {name: k for k, name in enumerate(names)}
        return Windows(
            sequences=sequences,
            signal=synthetic_signal(n, width, rng),
            row=np.arange(n, dtype=np.int64),
            chrom=np.array([index[contigs[c][0]] for c in pick], dtype=np.int16),
            tss=starts + width // 2,
            strand=strand,
            chrom_names=names,
            flank=flank,
        )

    train = draw(files[:-1], n_train)
    reference = draw(files[-1:], n_reference)
    return train, reference, f"kaptive-example assemblies in {folder}"
