"""Sei (Chen et al. 2022, "A sequence-based global map of regulatory activity for deciphering human genetics",
Nature Genetics 54:940) as a featuriser, and the DNA metrics built on it: Sei-FID, SP-MSE and the offline
random-feature FD.

The network. A convolutional trunk on one-hot DNA [N, 4, 4096]: two 9-wide convolutions with 480 channels
plus a residual block of two more; 4× max-pooling, the same at 640 and at 960 channels; then five
dilated 5-wide convolutions (dilations 2, 4, 8, 16, 25) added residually; a cubic B-spline basis with 16
degrees of freedom over the remaining 256 positions pools each channel to 16 coefficients (960 × 16 =
15,360 spline features); Linear(15,360 → 21,907), ReLU, Linear(21,907 → 21,907), sigmoid gives the
21,907 chromatin-profile predictions. The module and parameter names follow the released checkpoint
(``lconv1.0``, ``conv1.2``, ``lconv2.2``, ``conv2.1``, ``dconv5.1``, ``classifier.2``, …) so that
``best.sei.model.pth.tar`` loads with no missing or unexpected keys; the code is written for this suite
(the reference implementation's licence is academic-only; only names and shapes were read from it).

Inputs as DDSM (Avdeyev et al. 2023, arXiv 2305.10699) feeds them: a 1024-bp one-hot sequence is padded to
4096 with columns of 0.25 (1536 each side; an unknown base is 0.25 too), and predictions are averaged
over the sequence and its reverse complement with selene-sdk's ``NonStrandSpecific`` (mode "mean").

Featurisers (``suite.metrics.features``): ``sei``, the released network, and ``random-sei``, a Sei (narrow by
default) with random He-normal weights (fixed seed, no checkpoint); both give two layers, the strand-averaged
sigmoid outputs (``predictions``, 21,907 for the released network) and the strand-averaged spline features
(``spline``, 15,360 for the released network).

Metrics.
- ``sei-fid``: the Fréchet distance of ``suite.metrics.features`` (exact, in sample space) between ``sei``
  features of generated sequences and of the reference split (test chromosomes). No canonical definition
  exists; the layer of the value is an option, ``predictions`` (the default) or ``spline``, and the label
  records it (docs/dna.md says why). Both layers' distances are recorded, each beside a real-vs-real floor:
  the distance between two disjoint halves of the reference sequences, computed once per reference set,
  which gives the value its scale.
- ``sp-mse``: DDSM's promoter metric, mean over sequences of (h(generated) − h(real))², h = mean of Sei's
  predictions over the targets whose assay (second ``|`` field of ``target.sei.names``) is H3K4me3, the
  real sequence being the one whose CAGE signal conditioned the generated one (``EvalInputs.matched``).
- ``random-feature-fd``: the same Fréchet distance in ``random-sei`` features — an offline plumbing check,
  never reported as Sei-FID.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.interpolate import BSpline
from torch import Tensor, nn

from suite.metrics import (
    INFONOISE_TABLE,
    METRICS,
    TRUST_PICKLE_ENV,
    EvalInputs,
    Metric,
    MetricSpec,
    pickle_trusted,
)
from suite.metrics.features import FEATURIZERS, Featurizer, FrechetMetric
from suite.stopping import check

SEI_CHECKPOINT = "best.sei.model.pth.tar"
SEI_TARGET_NAMES = "target.sei.names"
DDSM_RECORD = "https://zenodo.org/records/7943307"
SEI_INPUT_LENGTH = 4096
SPLINE_DF = 16
PROMOTER_ASSAY = "H3K4me3"
LAYERS = ("predictions", "spline")
BASES = "ACGT"


@dataclass(frozen=True)
class SeiWidths:
    """Channel widths of the three trunk stages and the number of predicted targets."""

    stage1: int
    stage2: int
    stage3: int
    targets: int


WIDTHS = {
    "full": SeiWidths(480, 640, 960, 21_907),
    "narrow": SeiWidths(8, 12, 16, 256),
}


def bspline_basis(n: int, df: int = SPLINE_DF, degree: int = 3) -> Tensor:
    """Cubic B-spline design matrix [n, df] over positions 0..n−1 (rows sum to 1).

    Boundary knots at 0 and n−1 with multiplicity degree+1 and df − degree − 1 interior knots at equally
    spaced quantiles of the positions, all basis functions kept (Sei's ``bs(…, df=16, intercept=True)``).
    """
    x = np.arange(n, dtype=np.float64)
    interior = np.percentile(x, 100 * np.linspace(0, 1, df - degree + 1)[1:-1])
    knots = np.concatenate([[x[0]] * (degree + 1), interior, [x[-1]] * (degree + 1)])
    return torch.from_numpy(BSpline.design_matrix(x, knots, degree).toarray()).to(torch.float32)


def _conv(c_in: int, c_out: int, width: int = 9, dilation: int = 1) -> nn.Conv1d:
    return nn.Conv1d(c_in, c_out, kernel_size=width, dilation=dilation, padding=dilation * (width - 1) // 2)


class SplinePool(nn.Module):
    """Projects [N, C, L] onto the B-spline basis over L → [N, C, df] (no learned parameters)."""

    def __init__(self, length: int, df: int = SPLINE_DF) -> None:
        super().__init__()
        self.register_buffer("basis", bspline_basis(length, df), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.basis


class Sei(nn.Module):
    """Sei with configurable widths; forward gives (spline features [N, 16·stage3], predictions [N, targets]).

    ``SeiWidths`` "full" is the published network; "narrow" keeps every module name and the layout with
    small widths (tests, offline random features).
    """

    def __init__(self, widths: SeiWidths = WIDTHS["full"], sequence_length: int = SEI_INPUT_LENGTH) -> None:
        super().__init__()
        if sequence_length % 16:
            raise ValueError(f"Sei's two 4× poolings need a length divisible by 16, got {sequence_length}")
        c1, c2, c3 = widths.stage1, widths.stage2, widths.stage3
        relu = nn.ReLU
        self.widths = widths
        self.sequence_length = sequence_length
        self.lconv1 = nn.Sequential(_conv(4, c1), _conv(c1, c1))
        self.conv1 = nn.Sequential(_conv(c1, c1), relu(), _conv(c1, c1), relu())
        self.lconv2 = nn.Sequential(nn.MaxPool1d(4), nn.Dropout(0.2), _conv(c1, c2), _conv(c2, c2))
        self.conv2 = nn.Sequential(nn.Dropout(0.2), _conv(c2, c2), relu(), _conv(c2, c2), relu())
        self.lconv3 = nn.Sequential(nn.MaxPool1d(4), nn.Dropout(0.2), _conv(c2, c3), _conv(c3, c3))
        self.conv3 = nn.Sequential(nn.Dropout(0.2), _conv(c3, c3), relu(), _conv(c3, c3), relu())
        for i, dilation in enumerate((2, 4, 8, 16, 25), start=1):
            block = nn.Sequential(nn.Dropout(0.1), _conv(c3, c3, 5, dilation), relu())
            self.add_module(f"dconv{i}", block)
        self.spline_tr = nn.Sequential(nn.Dropout(0.5), SplinePool(sequence_length // 16))
        features = c3 * SPLINE_DF
        self.classifier = nn.Sequential(
            nn.Linear(features, widths.targets),
            relu(),
            nn.Linear(widths.targets, widths.targets),
            nn.Sigmoid(),
        )

    def dilated(self) -> list[nn.Module]:
        """The five dilated blocks, in order."""
        return [getattr(self, f"dconv{i}") for i in range(1, 6)]

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if x.shape[1:] != (4, self.sequence_length):
            raise ValueError(f"Sei takes one-hot [N, 4, {self.sequence_length}], got {tuple(x.shape)}")
        skip = self.lconv1(x)
        h = self.lconv2(self.conv1(skip) + skip)
        skip = h
        h = self.lconv3(self.conv2(h) + skip)
        skip = h
        h = self.conv3(h)
        block_input = h + skip  # only the first dilated block sees the stage's skip sum
        for block in self.dilated():
            h = h + block(block_input)
            block_input = h
        spline = self.spline_tr(h).flatten(1)  # [N, C·16], channel-major
        return spline, self.classifier(spline)


def one_hot(sequences: Sequence[str]) -> Tensor:
    """Equal-length base strings → float32 one-hot [N, 4, L] over ACGT; other letters give 0.25 in all 4."""
    if not sequences:
        raise ValueError("no sequences to encode")
    length = len(sequences[0])
    if any(len(s) != length for s in sequences):
        raise ValueError(f"sequences differ in length (first is {length})")
    table = np.full(256, 4, dtype=np.uint8)
    for i, base in enumerate(BASES):
        table[ord(base)] = table[ord(base.lower())] = i
    codes = table[np.frombuffer("".join(sequences).encode("ascii", "replace"), dtype=np.uint8)]
    rows = np.concatenate([np.eye(4, dtype=np.float32), np.full((1, 4), 0.25, dtype=np.float32)])
    return torch.from_numpy(rows[codes].reshape(len(sequences), length, 4)).transpose(1, 2).contiguous()


def pad_to_sei(x: Tensor, length: int = SEI_INPUT_LENGTH) -> Tensor:
    """One-hot [N, 4, L] centred in [N, 4, length] with columns of 0.25 on both sides (DDSM's 1536 + 1536)."""
    extra = length - x.shape[-1]
    if extra < 0 or extra % 2:
        raise ValueError(f"cannot centre a length-{x.shape[-1]} sequence in Sei's {length} positions")
    return nn.functional.pad(x, (extra // 2, extra // 2), value=0.25)


def sei_state_dict(checkpoint: Mapping[str, Any]) -> dict[str, Tensor]:
    """The Sei parameters of a checkpoint: its ``state_dict`` entry (or the mapping itself) with the
    ``module.`` (DataParallel) and ``model.`` (NonStrandSpecific) prefixes removed."""
    state = checkpoint.get("state_dict", checkpoint)
    cleaned = {}
    for key, value in state.items():
        for prefix in ("module.", "model."):
            key = key.removeprefix(prefix)
        cleaned[key] = value
    return cleaned


def missing_sei_error(path: Path, what: str = SEI_CHECKPOINT) -> FileNotFoundError:
    return FileNotFoundError(
        f"Sei file {path} not found. Fix: download data.tar.gz of the DDSM promoter data ({DDSM_RECORD}), "
        f"which holds {SEI_CHECKPOINT} and {SEI_TARGET_NAMES}; `suite data dna DEST` downloads and unpacks "
        f"it into DEST (then task.root=DEST finds them), or pass the file's path as the metric option "
        f"{'checkpoint' if what == SEI_CHECKPOINT else 'target_names'}. Sei's own release (Zenodo record "
        "4906997, sei_model.tar.gz) holds the same checkpoint."
    )


def checkpoint_widths(state: Mapping[str, Tensor]) -> SeiWidths:
    """The widths of a Sei state dict, read from its first convolution of each stage and its last layer."""
    try:
        return SeiWidths(
            int(state["lconv1.0.weight"].shape[0]),
            int(state["lconv2.2.weight"].shape[0]),
            int(state["lconv3.2.weight"].shape[0]),
            int(state["classifier.2.weight"].shape[0]),
        )
    except KeyError as err:
        raise ValueError(f"not a Sei state dict: it has no parameter {err}") from None


def load_sei(path: str | Path) -> Sei:
    """Sei with the weights of ``path`` (``best.sei.model.pth.tar`` as DDSM and Sei ship it); the widths are
    read from the checkpoint, and every parameter must match a module of the same name and shape. The file
    is read with ``torch.load(weights_only=True)``, which runs no code, unless ``$SUITE_TRUST_PICKLE`` is 1
    (``suite.metrics.pickle_trusted``; no config can set it)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise missing_sei_error(path)
    trusted = pickle_trusted()
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=not trusted)
    except Exception as err:
        if trusted:
            raise ValueError(f"cannot read {path} with torch.load: {err}") from err
        raise ValueError(
            f"cannot read {path} with torch.load(weights_only=True), which builds tensors only: {err}. "
            f"If you trust the file, run the command with {TRUST_PICKLE_ENV}=1 in its environment to "
            "unpickle it (it can run code; each run records it in run.json)"
        ) from err
    state = sei_state_dict(checkpoint)
    model = Sei(checkpoint_widths(state))
    model.load_state_dict(state, strict=True)
    return model


def promoter_targets(path: str | Path) -> np.ndarray:
    """Boolean mask over Sei's targets whose assay (second ``|``-separated field) is H3K4me3."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise missing_sei_error(path, SEI_TARGET_NAMES)
    fields = [line.split("|") for line in path.read_text().splitlines() if line.strip()]
    if any(len(f) < 2 for f in fields):
        raise ValueError(f"{path}: expected lines 'cell | assay | ID:n'")
    mask = np.array([f[1].strip() == PROMOTER_ASSAY for f in fields])
    if not mask.any():
        raise ValueError(f"{path} names no {PROMOTER_ASSAY} target")
    return mask


def random_sei(widths: SeiWidths, seed: int) -> Sei:
    """Sei with random weights from ``seed``: He-normal weights (std √(2/fan_in)) and zero biases, so that
    activations keep their scale through the ReLU trunk and the features vary with the input (PyTorch's
    default initialisation shrinks them layer by layer to a near-constant output)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        sei = Sei(widths)
        for module in sei.modules():
            if isinstance(module, (nn.Conv1d, nn.Linear)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                nn.init.zeros_(module.bias)
    return sei


def _sequences_key(sequences: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for s in sequences:
        digest.update(s.encode())
        digest.update(b"\n")
    return digest.hexdigest()


class SeiFeaturizer:
    """Strand-averaged Sei outputs of base strings: {"spline": [N, 16·C], "predictions": [N, targets]}.

    ``checkpoint`` None builds the ``width`` variant with random weights from ``seed`` (offline features);
    otherwise the Sei of the file is loaded (`load_sei`). The last four results are memoised by content,
    so metrics sharing a featuriser compute each sequence set once.
    """

    def __init__(
        self,
        device: torch.device,
        checkpoint: str | Path | None = None,
        width: str = "full",
        seed: int = 0,
        batch_size: int = 64,
    ) -> None:
        with warnings.catch_warnings():  # selene_sdk imports pkg_resources, which warns of its deprecation
            warnings.simplefilter("ignore")
            from selene_sdk.utils import NonStrandSpecific
        if width not in WIDTHS:
            raise ValueError(f"unknown Sei width {width!r}; valid: {', '.join(WIDTHS)}")
        if checkpoint is not None:
            sei = load_sei(checkpoint)
        else:
            sei = random_sei(WIDTHS[width], seed)
        self.widths = sei.widths
        self.dim = {"spline": sei.widths.stage3 * SPLINE_DF, "predictions": sei.widths.targets}
        self.model = NonStrandSpecific(sei, mode="mean").to(device).eval()
        self.device = torch.device(device)
        self.batch_size = int(batch_size)
        self._memo: OrderedDict[str, dict[str, np.ndarray]] = OrderedDict()

    @torch.no_grad()
    def __call__(self, sequences: Sequence[str]) -> dict[str, np.ndarray]:
        key = _sequences_key(sequences)
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        parts: dict[str, list[np.ndarray]] = {"spline": [], "predictions": []}
        for start in range(0, len(sequences), self.batch_size):
            check("while featurising sequences")  # a stop request abandons the evaluation here
            x = pad_to_sei(one_hot(sequences[start : start + self.batch_size])).to(self.device)
            spline, predictions = self.model(x)
            parts["spline"].append(spline.float().cpu().numpy())
            parts["predictions"].append(predictions.float().cpu().numpy())
        result = {k: np.concatenate(v) for k, v in parts.items()}
        self._memo[key] = result
        while len(self._memo) > 4:
            self._memo.popitem(last=False)
        return result


_FEATURIZERS: dict[tuple[Any, ...], SeiFeaturizer] = {}


def featurizer(
    device: torch.device,
    checkpoint: str | Path | None,
    width: str = "full",
    seed: int = 0,
    batch_size: int = 64,
) -> SeiFeaturizer:
    """A process-wide shared `SeiFeaturizer` per (device, checkpoint, width, seed): the 3.6 GB network is
    loaded once for all metrics that use it."""
    path = None if checkpoint is None else str(Path(checkpoint).expanduser().resolve())
    key = (str(torch.device(device)), path, width, int(seed))
    if key not in _FEATURIZERS:
        _FEATURIZERS[key] = SeiFeaturizer(device, path, width, seed, batch_size)
    return _FEATURIZERS[key]


def _checkpoint_option(options: Mapping[str, Any], key: str, default_name: str) -> Path:
    """A metric's file option: explicit path, else ``<root>/<default_name>`` (the task passes ``root``)."""
    value = options.get(key)
    if value is None:
        root = options.get("root")
        if root is None:
            raise missing_sei_error(Path(default_name), default_name)
        value = Path(root) / default_name
    return Path(value).expanduser()


def default_file_problems(options: Mapping[str, Any], files: Mapping[str, str]) -> list[str]:
    """For each file option (``files``: option → default file name) left unset, the missing-file error of
    its default ``<root>/<name>`` when no such file exists; an option that is set is the preflight's."""
    problems = []
    for key, default_name in files.items():
        if options.get(key) is not None:
            continue
        try:
            path = _checkpoint_option(options, key, default_name)
        except FileNotFoundError as err:
            problems.append(str(err))
            continue
        if not path.is_file():
            problems.append(str(missing_sei_error(path, default_name)))
    return problems


def _check_sequences(samples: Any, what: str) -> None:
    if not isinstance(samples, (list, tuple)) or not samples or not isinstance(samples[0], str):
        raise ValueError(f"Sei metrics take base strings; {what} is {type(samples).__name__}")


@FEATURIZERS.register("sei")
class ReleasedSeiFeatures(Featurizer):
    """The released Sei's strand-averaged outputs of base strings. Options: ``checkpoint`` (default
    ``<root>/best.sei.model.pth.tar``) and ``batch_size``; a pickled checkpoint is read only under
    ``$SUITE_TRUST_PICKLE=1`` (``load_sei``)."""

    layers = LAYERS

    def __init__(self, options: Mapping[str, Any], device: torch.device) -> None:
        super().__init__(options, device)
        self.checkpoint = _checkpoint_option(self.options, "checkpoint", SEI_CHECKPOINT)
        if not self.checkpoint.is_file():
            raise missing_sei_error(self.checkpoint)

    def __call__(self, samples: Any) -> dict[str, np.ndarray]:
        _check_sequences(samples, "the input")
        sei = featurizer(
            self.device,
            self.checkpoint,
            batch_size=int(self.options.get("batch_size", 64)),
        )
        if sei.widths != WIDTHS["full"]:
            raise ValueError(
                f"{self.checkpoint} holds a Sei of widths {sei.widths}, not the released network "
                f"{WIDTHS['full']}; its distance is not Sei-FID (random-feature-fd is the substitute)"
            )
        return sei(samples)


@FEATURIZERS.register("random-sei")
class RandomSeiFeatures(Featurizer):
    """A random-weight Sei's strand-averaged outputs (offline). Options: ``width`` (narrow | full),
    ``seed``, ``batch_size``."""

    layers = LAYERS

    def __init__(self, options: Mapping[str, Any], device: torch.device) -> None:
        super().__init__(options, device)
        self.width = str(self.options.get("width", "narrow"))
        if self.width not in WIDTHS:
            raise ValueError(f"unknown Sei width {self.width!r}; valid: {', '.join(WIDTHS)}")

    def __call__(self, samples: Any) -> dict[str, np.ndarray]:
        _check_sequences(samples, "the input")
        seed, batch_size = int(self.options.get("seed", 0)), int(self.options.get("batch_size", 64))
        return featurizer(self.device, None, self.width, seed, batch_size)(samples)


@METRICS.register("sei-fid")
class SeiFID(FrechetMetric):
    """Sei-FID: the Fréchet distance in the released Sei's features (``sei``), both layers recorded beside
    their real-vs-real floors. Options: those of ``sei`` and ``layer`` (predictions | spline)."""

    featurizer_name = "sei"
    task_keys = ("root",)
    bench_dim = WIDTHS["full"].targets

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """The released checkpoint, where ``checkpoint`` is unset: under ``root``."""
        return default_file_problems(options, {"checkpoint": SEI_CHECKPOINT})

    @property
    def spec(self) -> MetricSpec:
        dim = {"predictions": WIDTHS["full"].targets, "spline": WIDTHS["full"].stage3 * SPLINE_DF}[self.layer]
        label = f"Sei-FID (Sei {self.layer}, {dim:,}-d, strand-averaged)"
        return MetricSpec(
            "sei-fid", higher_is_better=False, label=label, published=INFONOISE_TABLE, scale="log"
        )


@METRICS.register("random-feature-fd")
class RandomFeatureFD(FrechetMetric):
    """Fréchet distance on a randomly initialised Sei-shaped network (``random-sei``; offline; never
    Sei-FID). Options: those of ``random-sei`` and ``layer``."""

    featurizer_name = "random-sei"
    bench_dim = WIDTHS["full"].targets  # timed at the released network's size, where the cost lies

    @property
    def spec(self) -> MetricSpec:
        width = self.features.width  # type: ignore[attr-defined]
        label = f"FD on random-weight {width} Sei {self.layer} (not Sei-FID)"
        return MetricSpec(
            "random-feature-fd", higher_is_better=False, label=label, substitutes="sei-fid", scale="log"
        )


@METRICS.register("sp-mse")
class PromoterSeiMSE(Metric):
    """DDSM's SP-MSE. Options: ``checkpoint`` and ``target_names`` (defaults under ``root``) and
    ``batch_size``; a pickled checkpoint is read only under ``$SUITE_TRUST_PICKLE=1``. Needs
    ``EvalInputs.matched``: a conditional task (the task's ``conditional``)."""

    task_keys = ("root", "conditional")

    @classmethod
    def problems(cls, options: Mapping[str, Any]) -> list[str]:
        """The released checkpoint and its target names, where unset: under ``root``."""
        return default_file_problems(
            options, {"checkpoint": SEI_CHECKPOINT, "target_names": SEI_TARGET_NAMES}
        )

    def __init__(self, options: Mapping[str, Any], device: torch.device, cache_dir: Path) -> None:
        super().__init__(options, device, cache_dir)
        if self.options.get("conditional") is False:
            raise ValueError(
                "sp-mse compares sequences generated for the same signal; it needs task.conditional: true"
            )
        self.checkpoint = _checkpoint_option(self.options, "checkpoint", SEI_CHECKPOINT)
        if not self.checkpoint.is_file():
            raise missing_sei_error(self.checkpoint)
        self.targets = promoter_targets(_checkpoint_option(self.options, "target_names", SEI_TARGET_NAMES))

    @property
    def spec(self) -> MetricSpec:
        label = f"SP-MSE (DDSM; mean Sei {PROMOTER_ASSAY} prediction, {int(self.targets.sum())} targets)"
        return MetricSpec("sp-mse", higher_is_better=False, label=label, scale="log")

    def __call__(self, inputs: EvalInputs) -> dict[str, float]:
        _check_sequences(inputs.generated, "generated")
        _check_sequences(inputs.reference, "reference")
        if inputs.matched is None or len(inputs.matched) != len(inputs.generated):
            raise ValueError(
                "sp-mse compares each generated sequence with the real sequence whose signal conditioned it; "
                "it needs EvalInputs.matched row-aligned with generated (a conditional DNA task)"
            )
        sei = featurizer(
            self.device,
            self.checkpoint,
            batch_size=int(self.options.get("batch_size", 64)),
        )
        if sei.dim["predictions"] != self.targets.size:
            raise ValueError(
                f"{SEI_TARGET_NAMES} names {self.targets.size} targets, the checkpoint predicts "
                f"{sei.dim['predictions']}"
            )
        generated = sei(inputs.generated)["predictions"][:, self.targets].mean(axis=1, dtype=np.float64)
        real = sei(inputs.matched)["predictions"][:, self.targets].mean(axis=1, dtype=np.float64)
        return {"value": float(np.mean((generated - real) ** 2)), "n_pairs": float(len(generated))}
