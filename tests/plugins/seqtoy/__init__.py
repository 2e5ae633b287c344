"""A 1-D sequence task shipped as a plugin outside the suite: one-hot DNA-like sequences (4 × L) with a
per-position conditioning track, scored by two metrics of its own. It exercises the task contract end to
end (conditioning mapping, CFG, several metrics, matched references) with no edit to the runner.

Data: sequences whose base at position i is G or C with probability s_i (the signal track, a smooth curve in
[0.1, 0.9]) and A or T otherwise, stored as a FASTA file and a ``signal.npy`` array beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.metrics import METRICS, EvalInputs, Metric, MetricSpec
from suite.task import TASKS, Task, TaskData, TensorSplit, content_fingerprint

BASES = "ACGT"


def write_fasta(path: Path, sequences: list[str]) -> None:
    path.write_text("".join(f">seq{i}\n{s}\n" for i, s in enumerate(sequences)))


def read_fasta(path: Path) -> list[str]:
    records, current = [], []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            if current:
                records.append("".join(current))
            current = []
        elif line.strip():
            current.append(line.strip())
    if current:
        records.append("".join(current))
    return records


def gc_fraction(sequences: list[str]) -> np.ndarray:
    return np.array([sum(b in "GC" for b in s) / len(s) for s in sequences])


class ToyConvNet(nn.Module):
    """Conv1d denoiser net(x, noise_labels, signal) with the signal track as an extra input channel."""

    channels_last = False
    compilable = False

    def __init__(self, channels: int, length: int) -> None:
        super().__init__()
        self.length = length
        self.inp = nn.Conv1d(5, channels, 5, padding=2)
        self.noise = nn.Linear(1, channels)
        self.mid = nn.Conv1d(channels, channels, 5, padding=2)
        self.out = nn.Conv1d(channels, 4, 5, padding=2)

    def forward(self, x: Tensor, noise_labels: Tensor, signal: Tensor | None = None) -> Tensor:
        track = torch.zeros_like(x[:, :1]) if signal is None else signal[:, None].to(x.dtype)
        h = self.inp(torch.cat([x, track], dim=1)) + self.noise(noise_labels[:, None].to(x.dtype))[..., None]
        return self.out(F.silu(self.mid(F.silu(h))))


@TASKS.register("seqtoy")
class SequenceToy(Task):
    """Toy one-hot sequences conditioned on a per-position GC-probability track (a test plugin)."""

    modality = "sequence"
    conditional = True
    model_space = "fixed"

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (4, int(self.cfg["length"]))

    def load(self) -> TaskData:
        root = Path(self.cfg["root"])
        sequences, signal = read_fasta(root / "sequences.fa"), np.load(root / "signal.npy")
        index = torch.tensor([[BASES.index(b) for b in s] for s in sequences])
        x = F.one_hot(index, 4).permute(0, 2, 1).to(torch.float32)
        split = TensorSplit(x, {"signal": torch.from_numpy(signal).to(torch.float32)})
        fingerprint = content_fingerprint("".join(sequences), signal)
        return TaskData(split, split, f"toy sequences ({len(sequences)})", True, fingerprint, str(root))

    @classmethod
    def example_data(cls, folder: Path, n: int, length: int = 32, seed: int = 0) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        phase = rng.uniform(0, 2 * np.pi, (n, 1))
        signal = 0.5 + 0.4 * np.sin(np.linspace(0, 2 * np.pi, length)[None] + phase)
        gc = rng.random((n, length)) < signal
        pick = rng.integers(0, 2, (n, length))
        sequences = [
            "".join("GC"[p] if g else "AT"[p] for g, p in zip(row_gc, row_pick, strict=True))
            for row_gc, row_pick in zip(gc, pick, strict=True)
        ]
        folder.mkdir(parents=True, exist_ok=True)
        write_fasta(folder / "sequences.fa", sequences)
        np.save(folder / "signal.npy", signal.astype(np.float32))
        return {"root": str(folder), "length": length}

    def build_network(self, preset: Mapping[str, Any]) -> nn.Module:
        return ToyConvNet(int(preset["channels"]), int(self.cfg["length"]))

    def decode(self, x: Tensor, model: nn.Module | None) -> list[str]:
        return ["".join(BASES[i] for i in row) for row in x.argmax(dim=1).tolist()]


@METRICS.register("gc-mse")
class GCMatchedMSE(Metric):
    """Mean squared difference of GC fraction between each generated sequence and the real one whose signal
    conditioned it."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec("gc-mse", higher_is_better=False, label="GC-fraction MSE (toy)")

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        if inputs.matched is None:
            raise ValueError("gc-mse compares with matched references: the task must be conditional")
        diff = gc_fraction(inputs.generated) - gc_fraction(inputs.matched)
        return {"value": float(np.mean(diff**2)), "n": len(diff)}


@METRICS.register("dimer-l1")
class DimerL1(Metric):
    """L1 distance between the dinucleotide frequencies of the generated and the reference sets."""

    @property
    def spec(self) -> MetricSpec:
        return MetricSpec("dimer-l1", higher_is_better=False, label="2-mer L1 (toy)")

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        def spectrum(sequences: list[str]) -> np.ndarray:
            counts = np.zeros(16)
            for s in sequences:
                for a, b in zip(s, s[1:], strict=False):
                    counts[BASES.index(a) * 4 + BASES.index(b)] += 1
            return counts / counts.sum()

        return {"value": float(np.abs(spectrum(inputs.generated) - spectrum(inputs.reference)).sum())}
