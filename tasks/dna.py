"""DNA promoters (DDSM, Avdeyev et al. 2023, arXiv 2305.10699): 1024-bp windows centred on human TSSs, one-hot
over A, C, G, T as [4, 1024] on the Gaussian path, conditioned on the CAGE signal of the TSS's strand.

Data: ``task.root`` holds the windows prepared by ``suite data dna DEST`` from DDSM's Zenodo archive
(``infonoise_modalities/dna/data.py`` describes the windows, the chromosome split — test chr8 and chr9,
validation chr10 — and the files). Without a root and with the stand-in permission (``budget.allow_stand_in``;
the smoke budget sets it), an offline stand-in of real bacterial DNA with a synthetic signal is used and
marked as such.

Training windows are shifted by a uniform integer in [−jitter, jitter] bp within their stored flanks
(``task.jitter``: DDSM's ±100, the reference this task follows), drawn from the step's generator
(``WindowSplit.training_batch``); the reference split, which evaluation reads, is never shifted.

Model space: x₀ ∈ {0, 1}^{4×L}, an unknown base (N) as 0.25 in all four channels, as selene encodes it;
σ_data = ½, the root mean square of a one-hot entry over four bases. Generated samples decode by argmax over
the channels; reference examples decode exactly (a uniform column is N). Conditioning: ``signal`` [N, 1, L],
the CAGE track (≥ 0); the null condition of classifier-free guidance is a track of −1
(``infonoise_modalities.dna.network``).

The validation windows (chr10, never shifted) are ``TaskData.validation``: best-validation checkpoint
selection scores them (``budget.selection``, ``suite.run.selection``; the stand-in has none).

Metrics (``infonoise_modalities/dna/sei.py``): Sei-FID against the reference split and DDSM's SP-MSE
with the released Sei checkpoint (found under ``root`` after ``suite data dna``: the metrics take the
task's ``root`` as a ``task_keys`` default). The labelled ``fallback_metrics`` (a Fréchet distance on a
random-weight narrow Sei) stand in where no checkpoint is at hand and the stand-in is allowed
(``use_fallback_metrics: auto``, the core's rule in ``suite.task``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from infonoise_modalities.dna import data as dna
from infonoise_modalities.dna.network import SeqNet
from suite.task import TASKS, Batch, Cond, Split, Task, TaskData, content_fingerprint

ENCODING = "one-hot A,C,G,T as [4, L] (N = 0.25 in each), decoded by argmax"
CONDITIONING = "CAGE signal of the TSS strand, [N, 1, L]; null condition -1"


class WindowSplit(Split):
    """Windows as base codes (uint8 [N, L + 2·flank]) and signal ([N, L + 2·flank]); a batch is one-hot
    [B, 4, L] and, when conditioned, ``signal`` [B, 1, L] float32: the centre L positions. A training batch
    shifts each window's centre by a uniform integer in [−jitter, jitter] (DDSM's ±100 bp; ``jitter``
    0 for the reference split), the sequence and its signal together. Moved to a device once, one-hot
    encoded per batch there."""

    def __init__(self, codes: np.ndarray, signal: np.ndarray | None, flank: int = 0, jitter: int = 0) -> None:
        if not 0 <= jitter <= flank:
            raise ValueError(
                f"task.jitter={jitter}: the windows carry {flank} flanking bases per side, so jitter must be "
                f"an integer in 0..{flank}; prepare the data again with `suite data dna DEST` (windows now "
                f"carry {dna.FLANK}) or set task.jitter=0"
            )
        self.codes = torch.from_numpy(np.ascontiguousarray(codes, dtype=np.uint8))
        self.signal = None if signal is None else torch.from_numpy(np.ascontiguousarray(signal))
        self.flank, self.jitter = flank, jitter
        self.seq_len = self.codes.shape[1] - 2 * flank
        self._on: dict[torch.device, tuple[Tensor, Tensor | None]] = {}

    def __len__(self) -> int:
        return self.codes.shape[0]

    def _gather(self, indices: Tensor, device: torch.device, shifts: Tensor) -> Batch:
        device = torch.device(device)
        if device not in self._on:
            signal = None if self.signal is None else self.signal.to(device)
            self._on[device] = (self.codes.to(device), signal)
        codes, signal = self._on[device]
        indices = indices.to(device)
        positions = self.flank + shifts.to(device)[:, None] + torch.arange(self.seq_len, device=device)
        x0 = dna.one_hot(torch.gather(codes[indices], 1, positions))
        if signal is None:
            return Batch(x0, {})
        track = torch.gather(signal[indices], 1, positions).to(torch.float32)[:, None]
        return Batch(x0, {"signal": track})

    def batch(self, indices: Tensor, device: torch.device) -> Batch:
        return self._gather(indices, device, torch.zeros(len(indices), dtype=torch.long))

    def training_batch(
        self, indices: Tensor, device: torch.device, generator: torch.Generator, rows: slice, total: int
    ) -> Batch:
        if self.jitter == 0:
            return self.batch(indices, device)
        j = self.jitter
        shifts = torch.randint(-j, j + 1, (total,), generator=generator, device=generator.device)[rows]
        return self._gather(indices, device, shifts)


@TASKS.register("dna")
class DnaTask(Task):
    """DDSM's promoter windows; see the module docstring."""

    modality = "sequence"
    model_space = "fixed"

    @property
    def seq_len(self) -> int:
        return int(self.cfg.get("seq_len", dna.SEQ_LEN))

    @property
    def conditional(self) -> bool:  # type: ignore[override]
        """Conditioned on the CAGE track unless the config's ``conditional`` is false."""
        return bool(self.cfg.get("conditional", True))

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (4, self.seq_len)

    def _root(self) -> Path | None:
        root = self.cfg.get("root")
        return None if root is None else Path(str(root)).expanduser()

    def _windows(
        self,
    ) -> tuple[dna.Windows, np.ndarray, dna.Windows, np.ndarray, str, bool, str, np.ndarray | None]:
        """(train windows, their indices, reference windows, their indices, variant, stand_in, source, the
        indices of the validation windows (chr10) among the train windows' set: None for the stand-in)."""
        root = self._root()
        split = str(self.cfg.get("reference_split", "test"))
        if split not in ("test", "valid"):
            raise ValueError(f"task.reference_split={split!r}; valid: test, valid")
        if root is not None:
            windows, manifest = dna.load_prepared(root)
            if manifest["seq_len"] != self.seq_len:
                raise ValueError(
                    f"{root} holds {manifest['seq_len']}-bp windows; task.seq_len={self.seq_len}"
                )
            n_tsses = int(self.cfg.get("n_tsses", 40_000))
            train = windows.split_indices("train", n_tsses)
            reference = windows.split_indices(split, n_tsses)
            rows = int(windows.row.max()) + 1 if len(windows) else 0
            chroms = ", ".join(dna.TEST_CHROMS if split == "test" else dna.VALID_CHROMS)
            variant = (
                f"DDSM human promoters, first {min(n_tsses, rows)} FANTOM CAT TSSs: {len(train)} train and "
                f"{len(reference)} {split} ({chroms}) windows of {self.seq_len} bp"
            )
            valid = windows.split_indices("valid", n_tsses)
            return windows, train, windows, reference, variant, rows < n_tsses, str(root), valid
        if not self.allow_stand_in:
            raise dna.missing_data_error(
                "null", "no prepared promoter data configured (and budget.allow_stand_in is false)"
            )
        n_train = int(self.cfg.get("stand_in_train", 4096))
        n_reference = int(self.cfg.get("stand_in_reference", 512))
        train_w, reference_w, source = dna.stand_in_windows(n_train, n_reference, self.seq_len)
        variant = (
            f"{n_train} train / {n_reference} reference windows of {self.seq_len} bp of bacterial "
            f"DNA (kaptive-example; held-out assembly {reference_w.chrom_names[0]}), synthetic CAGE track"
        )
        return (train_w, np.arange(n_train), reference_w, np.arange(n_reference), variant, True, source, None)

    def data_problems(self) -> list[str]:
        """The prepared folder and its four files (``suite data dna``), or the stand-in permission (the Sei
        files that the metrics read from it are theirs to report: ``Metric.problems``)."""
        root = self._root()
        if root is None:
            detail = "no prepared promoter data configured (and budget.allow_stand_in is false)"
            return [] if self.allow_stand_in else [str(dna.missing_data_error("null", detail))]
        if not root.is_dir():
            return [str(dna.missing_data_error(root, f"{root} does not exist"))]
        absent = [name for name in dna.PREPARED_FILES if not (root / name).is_file()]
        if absent:  # not prepared: one cause, whatever else the folder lacks
            return [str(dna.missing_data_error(root, f"{root} lacks {', '.join(absent)}"))]
        return []

    def load(self) -> TaskData:
        train_w, train, reference_w, reference, variant, stand_in, source, valid = self._windows()
        if len(train) == 0 or len(reference) == 0:
            raise ValueError(
                f"{source}: {len(train)} train and {len(reference)} reference windows; need both"
            )
        parts = []
        splits = []
        jitter = int(self.cfg.get("jitter", 0))
        for windows, index, shift in ((train_w, train, jitter), (reference_w, reference, 0)):
            codes = np.asarray(windows.sequences[index])
            signal = np.asarray(windows.signal[index]) if self.conditional else None
            parts += [codes] if signal is None else [codes, signal]
            splits.append(WindowSplit(codes, signal, windows.flank, shift))
        info = {
            "sigma_data": float(self.cfg["sigma_data"]),
            "encoding": ENCODING,
            "conditioning": CONDITIONING if self.conditional else "none",
            "reference_split": str(self.cfg.get("reference_split", "test")),
            "seq_len": self.seq_len,
            "train_jitter_bp": jitter,
            "train_windows": len(train),
        }
        validation = None
        if valid is not None and len(valid):  # never shifted; the fingerprint covers the train and reference
            codes = np.asarray(train_w.sequences[valid])
            signal = np.asarray(train_w.signal[valid]) if self.conditional else None
            validation = WindowSplit(codes, signal, train_w.flank, 0)
            info["valid_windows"] = len(valid)
        fingerprint = content_fingerprint(*parts)
        return TaskData(splits[0], splits[1], variant, stand_in, fingerprint, source, info, validation)

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        return SeqNet(self.seq_len, signal_channels=1 if self.conditional else 0, **dict(preset))

    def null_condition(self, cond: Cond) -> Cond:
        """A track of −1: the network's presence flag is 0 and no signal enters."""
        return {key: torch.full_like(value, -1.0) for key, value in cond.items()}

    def decode(self, x: Tensor, model: nn.Module | None) -> list[str]:
        return dna.argmax_bases(x)

    def decode_reference(self, batch: Batch) -> list[str]:
        return dna.bases_of_one_hot(batch.x0)

    @classmethod
    def example_data(cls, folder: Path, n: int) -> dict[str, Any]:
        """n TSS windows in DDSM's raw formats, prepared as ``suite data`` would; no Sei checkpoint, so the
        fallback metrics."""
        raw = dna.write_example_raw(Path(folder) / "raw", n)
        dna.prepare(str(raw), Path(folder) / "prepared")
        return {"root": str(Path(folder) / "prepared"), "n_tsses": n, "use_fallback_metrics": True}

    @classmethod
    def prepare(cls, source: str | None, dest: str, unpinned_archive: bool = False) -> None:
        """``suite data dna [SOURCE] DEST``; ``unpinned_archive`` (``--unpinned-archive``, for a re-released
        archive) checks it against the Zenodo record instead of ``dna.DDSM_ARCHIVE``."""
        dna.prepare(source, dest, None if unpinned_archive else dna.DDSM_ARCHIVE)
