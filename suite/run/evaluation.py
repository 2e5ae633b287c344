"""Evaluation of a network, apart from the training loop: generate, decode, score, and write tidy rows.

Generation integrates the probability-flow ODE with the task's solver from latents x = σ_max·ε drawn from a
generator seeded by ``LATENT_STREAM + budget.eval.seed`` (the same latents at every evaluation point, so
curves compare like with like); a task with ``eval_latents: per_seed`` seeds it by that number and the
run's seed together (``suite.stream.seeded_generator``), so each seed of a study samples its own latent set
and the spread of the latents enters the seed interval rather than an offset shared by every run. The
offset keeps the latents off the stream that initialises the network
(``torch.manual_seed(seed)``): with equal seeds the first latents would equal the first initial weights
drawn, and a parameter that lives in data space (a token embedding table) would start aligned with them. A
conditional task is sampled with the conditions of reference examples (a fixed random choice of the
reference split), combined with the task's null condition by classifier-free guidance at
``budget.eval.guidance``; those reference examples are handed to the metrics as ``matched`` (SP-MSE compares
generated and real sequences for the same signal). The reference set is a fixed random subset of the task's
reference split (``budget.eval.reference`` examples). Everything runs on the run's device, metric features
included.

The solver grid is Karras et al.'s ρ = 7 grid at the task's ``solver_steps`` unless an evaluation asks for
another grid or step count (``suite.run.grids``; InfoGrid uses the profile an InfoNoise run learned). Each row
records its protocol: the grid, the steps, the NFE, the number of generated samples, the number of real
examples its metric compared (``Metric.reads``: the reference set; the real examples of the generated
samples' conditions, whose fixed choice is recorded as ``condition_seed``; or none, 0) and the size of the
reference split they were drawn from (the reference set is the whole split when the two are equal, as in
EDM's FID against the training set). The reference set is decoded only when a metric reads it. A task
whose protocol is one sample per reference example (``final_eval: per_reference``: one sample per test
window, one of DDSM's five sample sets) is scored that way at its final point; only a metric that declares
it (FID) takes the best of several seed ranges there. Generated samples are decoded with their condition
(``Task.decode_generated``), so a text continuation is scored with its prompt. The tables and figures keep
rows of another protocol apart from the run's own (``suite.report.results``).

The null network (``score_null``, ``suite eval --null``) is a run's network with its raw output F ≡ 0, so
D = c_skip·x (EDM's preconditioning, ``suite.run.diffusion``): what a network that learned nothing scores.
It is scored once per comparison folder, by the metrics that score a network or its samples (not those that
score the run's sampler, ``Metric.scores_sampler``), on one run's evaluation protocol (its grid, steps,
samples and latents), and its rows, labelled ``NULL_SAMPLER`` at kimg 0, are written to
``<comparison folder>/NULL_FILE``, beside the runs and apart from them: the tables show it beside every
sampler (``suite.report.rows.null_values``) and no comparison, interval or time to target counts it.

A stop request (``suite.stopping``) abandons an evaluation between its generation batches, its metrics and
their feature batches: :class:`suite.stopping.Interrupted` is raised and no row is returned. A metric value
that is not a finite number (NaN, inf) raises :class:`InvalidMetricValue`: no row is returned, and the run
or ``suite eval`` fails with that one line.
"""

from __future__ import annotations

import dataclasses
import io
import math
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from suite.lease import Lease
from suite.metrics import EvalInputs, Metric
from suite.noise.sampler import NoiseSampler
from suite.paths import cache_dir
from suite.records import (
    NULL_FILE,
    NULL_SAMPLER,
    RunDirectory,
    append_jsonl,
    evaluation_row,
    read_jsonl,
    write_atomic,
    write_jsonl,
)
from suite.run.assembly import build_parts, build_task
from suite.run.distributed import init_distributed
from suite.run.grids import build_grid
from suite.run.solvers import SOLVERS, guided, nfe
from suite.run.spec import RunSpec, SpecError, guidance_problem, run_spec
from suite.stopping import check
from suite.stream import seeded_generator
from suite.task import Batch, Task, TaskData
from suite.watch import PREVIEW, progress, save_samples

REFERENCE_SEED = 0
CONDITION_SEED = 1
LATENT_STREAM = 1 << 32


def fixed_choice(n_total: int, n: int, seed: int) -> Tensor:
    """n indices of a fixed random permutation of range(n_total), cycling when n > n_total."""
    order = torch.randperm(n_total, generator=torch.Generator().manual_seed(seed))
    return order.repeat((n + n_total - 1) // n_total)[:n]


def latent_generator(seed: int, run_seed: int, latents: str = "shared") -> torch.Generator:
    """The generator of the latents of generation seed ``seed``: seeded by ``LATENT_STREAM + seed`` alone
    (``shared``: every run the same) or with ``run_seed`` too (``per_seed``, module docstring)."""
    if latents == "shared":
        return torch.Generator().manual_seed(LATENT_STREAM + seed)
    if latents == "per_seed":
        return seeded_generator(LATENT_STREAM + seed, run_seed)
    raise ValueError(f"latents={latents!r}; valid: shared, per_seed")


class Generation:
    """Samples of a run's denoiser at its evaluation settings: the solver grid, seeded latents and the
    conditions of a fixed choice of reference examples (what the benches and ``suite guidance`` use too)."""

    def __init__(self, spec: RunSpec, task: Task, data: TaskData, device: torch.device) -> None:
        self.spec = spec
        self.task = task
        self.data = data
        self.device = device
        self.conditional = bool(task.conditional)

    def grid(self, name: str, steps: int, profile: tuple[Tensor, Tensor] | None) -> Tensor:
        d = self.spec.diffusion
        return build_grid(name, steps, d.sigma_min, d.sigma_max, profile)

    def generate(
        self,
        model: nn.Module,
        n: int,
        sigmas: Tensor,
        guidance: float,
        seed: int | None = None,
        conditions: Tensor | None = None,
        precision: str | None = None,
    ) -> tuple[Tensor, Batch | None]:
        """n model-space samples on the run's device, and the reference batch that conditioned them; the
        latents come from ``seed`` (default ``budget.eval.seed``), the conditions from the reference
        examples at ``conditions`` (default: a fixed random choice of n); the network runs in ``precision``
        (default ``budget.eval.precision``; bf16 is autocast around the network, the solver stays in
        float64)."""
        ev, d = self.spec.budget.eval, self.spec.diffusion
        gen = latent_generator(ev.seed if seed is None else seed, self.spec.seed, ev.latents)
        chosen = conditions
        if self.conditional and chosen is None:
            chosen = fixed_choice(len(self.data.reference), n, CONDITION_SEED)
        elif not self.conditional:
            chosen = None
        solve = SOLVERS[d.solver]
        bf16 = (precision or ev.precision) == "bf16"
        out = []
        for start in progress(range(0, n, ev.batch_size), desc="generating", unit="batch"):
            check("while generating")
            m = min(ev.batch_size, n - start)
            latents = d.sigma_max * torch.randn((m, *self.task.sample_shape), generator=gen)
            cond: dict[str, Tensor] = {}
            if chosen is not None:
                cond = self.data.reference.batch(chosen[start : start + m], self.device).cond
            denoise = guided(model, cond, guidance, self.task.null_condition(cond))
            with torch.no_grad(), torch.autocast(self.device.type, torch.bfloat16, enabled=bf16):
                out.append(solve(denoise, latents.to(self.device), sigmas))
        matched = None if chosen is None else self.data.reference.batch(chosen, torch.device("cpu"))
        return torch.cat(out), matched


class Evaluator(Generation):
    """Scores a denoiser on one task's metrics, on the samples ``Generation`` draws; shared by the training
    loop and ``suite eval``."""

    def __init__(self, spec: RunSpec, task: Task, data: TaskData, device: torch.device) -> None:
        super().__init__(spec, task, data, device)
        self.metrics: list[Metric] = task.metrics(device, cache_dir())
        self._reference: Any = None
        self.preview: Any = None  # the first decoded samples of the last evaluation (``suite.watch``)

    @property
    def n_reference(self) -> int:
        wanted = self.spec.budget.eval.reference
        return len(self.data.reference) if wanted is None else min(wanted, len(self.data.reference))

    def reads(self, metric: Metric) -> str:
        """The real examples ``metric`` compares with in this task (``Metric.reads``): ``matched`` ones only
        where the task is conditional, else the reference set."""
        if metric.reads not in ("reference", "matched", "generated"):
            raise ValueError(
                f"metric {metric.spec.name!r} reads {metric.reads!r}; valid: reference, matched, generated"
            )
        return "reference" if metric.reads == "matched" and not self.conditional else metric.reads

    def reference(self) -> Any:
        """The decoded reference examples (computed once)."""
        if self._reference is None:
            pick = fixed_choice(len(self.data.reference), self.n_reference, REFERENCE_SEED)
            self._reference = self.task.decode_reference(self.data.reference.batch(pick, torch.device("cpu")))
        return self._reference

    def evaluate(
        self,
        model: nn.Module,
        nimg: int,
        wall_time: float,
        importance_weighting: bool,
        grid: str = "karras",
        steps: int | None = None,
        profile: tuple[Tensor, Tensor] | None = None,
        only: str | None = None,
        final: bool = False,
        sampler: NoiseSampler | None = None,
    ) -> list[dict[str, Any]]:
        """One evaluation point: a row per metric (or only the metric named ``only``); the metrics see
        ``model`` and the run's ``sampler`` beside the samples (``EvalInputs``).

        At the ``final`` point the budget may ask for EDM's protocol: ``eval.final_samples`` samples from
        each of ``eval.final_ranges`` disjoint generation-seed ranges; a metric whose spec takes the best of
        ranges (FID) then reports the minimum over the ranges (the best, by the metric's direction), with
        every range's value, their mean and standard deviation among its extras; every other metric is
        scored on the first range alone. A task with ``final_eval: per_reference`` is scored at the final
        point on one sample per reference example, conditioned on that example, against the whole
        reference split in the same order, in ``eval.final_sets`` sets from disjoint seeds: every metric
        scores each set and reports their mean with its standard error (DDSM: five sets per test window).
        """
        spec, ev = self.spec, self.spec.budget.eval
        metrics = [m for m in self.metrics if only in (None, m.spec.name)]
        if not metrics:
            names = ", ".join(m.spec.name for m in self.metrics)
            raise ValueError(f"unknown metric {only!r} for task {spec.task}; valid metrics: {names}")
        steps = spec.diffusion.solver_steps if steps is None else int(steps)
        sigmas = self.grid(grid, steps, profile)
        per_reference = final and ev.per_reference_final
        conditions = None
        if per_reference:
            n, ranges = len(self.data.reference), ev.final_sets
            conditions = torch.arange(n)
        else:
            n = ev.final_samples if final else ev.samples
            ranges = ev.final_ranges if final and any(m.spec.best_of_ranges for m in metrics) else 1
        reads = [self.reads(m) for m in metrics]
        reference, n_set = None, 0
        if "reference" in reads and per_reference:
            n_set = len(self.data.reference)
            reference = self.task.decode_reference(self.data.reference.batch(conditions, torch.device("cpu")))
        elif "reference" in reads:
            n_set, reference = self.n_reference, self.reference()
        t0 = time.perf_counter()
        results: list[list[dict[str, float]]] = [[] for _ in metrics]
        for k in range(ranges):
            x, matched = self.generate(model, n, sigmas, ev.guidance, ev.seed + k * n, conditions)
            inputs = EvalInputs(
                generated=self.task.decode_generated(x, model, {} if matched is None else matched.cond),
                reference=reference,
                matched=None if matched is None else self.task.decode_reference(matched),
                model=model,
                sampler=sampler,
            )
            if k == 0:
                self.preview = inputs.generated[:PREVIEW]
            for found, metric in zip(results, metrics, strict=True):
                if k == 0 or metric.spec.best_of_ranges or per_reference:
                    check("between metrics")
                    found.append(finite_result(metric(inputs), metric.spec.name, nimg))
        rows = []
        for found, metric, read in zip(results, metrics, reads, strict=True):
            result = (
                combine_sets(found) if per_reference else combine_ranges(found, metric.spec.higher_is_better)
            )
            if read == "matched" and not per_reference:  # which reference examples: recorded by their seed
                result["condition_seed"] = float(CONDITION_SEED)
            rows.append(
                evaluation_row(
                    task=spec.task,
                    modality=self.task.modality,
                    budget=spec.budget.name,
                    sampler=spec.sampler.label,
                    seed=spec.seed,
                    nimg=nimg,
                    spec=metric.spec,
                    result=result,
                    stand_in_data=self.data.stand_in,
                    data=self.data.variant,
                    data_fingerprint=self.data.fingerprint,
                    solver=spec.diffusion.solver,
                    grid=grid,
                    steps=steps,
                    nfe=nfe(spec.diffusion.solver, steps),
                    n_samples=n,
                    n_reference={"reference": n_set, "matched": n, "generated": 0}[read],
                    reference_split=len(self.data.reference),
                    guidance=ev.guidance,
                    importance_weighting=importance_weighting,
                    comparison_hash=spec.comparison_hash,
                    config_hash=spec.config_hash,
                    eval_seconds=round(time.perf_counter() - t0, 2),
                    wall_time=round(wall_time, 2),
                )
            )
        return rows


class InvalidMetricValue(RuntimeError):
    """A metric gave a value that is not a finite number: the evaluation fails and writes no row."""


def finite_result(result: dict[str, float], metric: str, nimg: int) -> dict[str, float]:
    """``result`` when its value is a finite number; else :class:`InvalidMetricValue` naming it."""
    value = result.get("value")
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidMetricValue(
            f"{metric} at kimg {nimg / 1000:g} is {value!r}, not a finite number; the evaluation wrote no row"
        )
    return result


def combine_ranges(results: list[dict[str, float]], higher_is_better: bool) -> dict[str, float]:
    """One seed range's result as it is; several: the best value (EDM reports the minimum FID over three
    ranges), with each range's value, their mean and standard deviation (ddof = 1) as extras."""
    if len(results) == 1:
        return results[0]
    values = torch.tensor([r["value"] for r in results], dtype=torch.float64)
    best = values.max() if higher_is_better else values.min()
    return {
        "value": best.item(),
        "range_values": values.tolist(),
        "range_mean": values.mean().item(),
        "range_std": values.std().item(),
        "n_ranges": len(results),
    }


def combine_sets(results: list[dict[str, float]]) -> dict[str, float]:
    """One generated set's result as it is; several sets of one sample per reference example: their mean,
    with each set's value, the standard error of the mean, std (ddof = 1) / √k, and k as extras."""
    if len(results) == 1:
        return results[0]
    values = torch.tensor([r["value"] for r in results], dtype=torch.float64)
    return {
        "value": values.mean().item(),
        "set_values": values.tolist(),
        "set_sem": (values.std() / math.sqrt(len(results))).item(),
        "n_sets": len(results),
    }


def snapshot_path(folder: str | Path, nimg: int) -> Path:
    """Path of the network snapshot taken at the evaluation point ``nimg``."""
    return Path(folder) / f"snapshot-{nimg:012d}.pt"


def save_snapshot(folder: str | Path, nimg: int, ema: nn.Module, sampler: NoiseSampler, digest: str) -> Path:
    """Atomically write what re-scoring an evaluation point needs: EMA weights, the sampler's state (the
    learned profile InfoGrid uses), ``nimg`` and the run's config hash."""
    buffer = io.BytesIO()
    state = {"ema": ema.state_dict(), "sampler": sampler.state_dict(), "nimg": nimg, "config_hash": digest}
    torch.save(state, buffer)
    path = snapshot_path(folder, nimg)
    write_atomic(path, buffer.getvalue())
    return path


def list_snapshots(folder: str | Path) -> dict[int, Path]:
    """The snapshots of a run folder by ``nimg``."""
    found = {}
    for path in Path(folder).glob("snapshot-*.pt"):
        found[int(path.stem.split("-", 1)[1])] = path
    return dict(sorted(found.items()))


def load_snapshot(path: Path) -> dict[str, Any]:
    """A snapshot's tensors and plain values (``weights_only``: no pickled code runs)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(f"cannot read snapshot {path}: {err}") from err


def _same_point(row: dict[str, Any], new: dict[str, Any]) -> bool:
    keys = ("nimg", "metric", "grid", "nfe", "n_samples", "n_reference", "guidance")
    return all(row.get(k, "karras" if k == "grid" else None) == new[k] for k in keys)


@dataclasses.dataclass(frozen=True)
class OpenedRun:
    """A run folder opened for its snapshots (:func:`open_run`)."""

    folder: RunDirectory
    spec: RunSpec  # the run's config, on the device it was opened for
    snapshots: dict[int, Path]  # nimg -> snapshot file: every one, or the one asked for

    def snapshot(self, nimg: int) -> dict[str, Any]:
        """The snapshot at ``nimg``, refused when another config than the run's wrote it."""
        snapshot = load_snapshot(self.snapshots[nimg])
        if snapshot["config_hash"] != self.spec.config_hash:
            raise ValueError(
                f"{self.snapshots[nimg]} belongs to another config than {self.folder.path / 'config.yaml'}"
            )
        return snapshot

    def network(self, task: Task, device: torch.device) -> tuple[nn.Module, NoiseSampler]:
        """The run's network, in eval mode without gradients, and its noise sampler, built on ``device``
        (no optimiser, no DDP) for :meth:`snapshot`'s ``ema`` and ``sampler`` states."""
        parts = build_parts(self.spec, task, device)
        return parts.model.eval().requires_grad_(False), parts.sampler


def open_run(
    run_dir: str | Path, kimg: float | None = None, device: str = "auto", finished: str | None = None
) -> OpenedRun:
    """Open the run folder ``run_dir``: its spec on ``device`` and its snapshots (every one, or the one at
    ``kimg``), for ``suite eval``, ``suite samples`` and ``suite guidance``. A folder that is no run or has no
    snapshot (at ``kimg``) is refused naming the valid choices; with ``finished`` (why that matters), so is a
    run that is not done."""
    from omegaconf import OmegaConf

    folder = RunDirectory(run_dir)
    if not (folder.path / "config.yaml").is_file():
        raise FileNotFoundError(f"{folder.path} is not a run directory (no config.yaml)")
    if finished is not None and folder.status() != "done":
        raise ValueError(f"{folder.path} is {folder.status()!r}; {finished}")
    snapshots = list_snapshots(folder.snapshots)
    if not snapshots:
        raise FileNotFoundError(f"{folder.path} holds no network snapshots yet ({folder.snapshots})")
    if kimg is not None:
        nimg = int(round(kimg * 1000))
        if nimg not in snapshots:
            valid = ", ".join(f"{k / 1000:g}" for k in snapshots)
            raise ValueError(f"{folder.path} has no snapshot at kimg {kimg:g}; valid kimg: {valid}")
        snapshots = {nimg: snapshots[nimg]}
    cfg = OmegaConf.load(folder.path / "config.yaml")
    cfg.device = device
    return OpenedRun(folder, run_spec(cfg), snapshots)


MUCH_WORSE = 1.5  # a re-score this many times worse than the own grid's value at the snapshot is flagged


def grid_warning(row: dict[str, Any], recorded: list[dict[str, Any]]) -> str | None:
    """A ``warning:`` line when ``row``, scored on another grid than Karras's, is more than ``MUCH_WORSE``
    times worse than the run's own-grid row of the same snapshot and metric (the training loop's
    evaluation, recorded without a grid or on Karras's): a grid that does not suit the network, not a
    worse network. None otherwise, and where no own row was recorded there."""
    if row.get("grid", "karras") == "karras":
        return None
    own = [
        r
        for r in recorded
        if r.get("nimg") == row["nimg"]
        and r.get("metric") == row["metric"]
        and r.get("grid", "karras") == "karras"
    ]
    if not own:
        return None
    mine, theirs = float(row["value"]), float(own[0]["value"])
    if not (math.isfinite(mine) and math.isfinite(theirs)) or mine <= 0 or theirs <= 0:
        return None
    factor = theirs / mine if row["higher_is_better"] else mine / theirs
    if factor <= MUCH_WORSE:
        return None
    return (
        f"warning: {row['metric']} {mine:.4g} on grid {row['grid']} is {factor:.2g}× worse than the run's "
        f"own Karras grid at this snapshot ({theirs:.4g}, NFE {own[0].get('nfe')}); the grid, not the "
        "network, may be what is measured"
    )


def rescore(
    run_dir: str | Path,
    metric: str | None = None,
    kimg: float | None = None,
    grid: str = "karras",
    steps: int | None = None,
    device: str = "auto",
    guidance: float | None = None,
) -> list[dict[str, Any]]:
    """Re-score a finished run's saved snapshot(s) without the trainer (EDM2's pattern).

    Every snapshot is scored, or the one at ``kimg``; rows that the records do not hold yet are appended,
    rows they hold are not written twice, and each new value is printed beside the recorded one. A grid
    built from the learned profile (InfoGrid) skips the snapshots taken before the sampler learned one.
    ``guidance`` scores at another classifier-free guidance scale than the budget's (how a task's frozen
    scale is chosen, docs/text.md); its rows are a protocol of their own in the tables.
    """

    opened = open_run(run_dir, kimg, device, "`suite eval` re-scores finished runs")
    folder, spec = opened.folder, opened.spec
    if grid != "karras" and not any("profile" in row for row in read_jsonl(folder.sampler_log)):
        raise ValueError(
            f"--grid {grid} is built from the learned information profile, and the sampler of {folder.path} "
            f"({spec.sampler.label}) learned none (its sampler.jsonl holds no profile); use --grid karras, "
            "or a run of a sampler that learns one (infonoise)"
        )
    task = build_task(spec)
    if guidance is not None:
        problem = guidance_problem(float(guidance), spec.diffusion.cond_dropout, bool(task.conditional))
        if problem:
            raise SpecError([f"--guidance: {problem}"])
        scored = dataclasses.replace(spec.budget.eval, guidance=float(guidance))
        spec = dataclasses.replace(spec, budget=dataclasses.replace(spec.budget, eval=scored))
    ctx = init_distributed(device)
    data = task.load()
    ema, sampler = opened.network(task, ctx.device)
    evaluator = Evaluator(spec, task, data, ctx.device)
    recorded = folder.rows()
    new_rows = []
    for nimg in opened.snapshots:
        snapshot = opened.snapshot(nimg)
        ema.load_state_dict(snapshot["ema"])
        sampler.load_state_dict(snapshot["sampler"])
        learned = sampler.profile()
        profile = None if learned is None else (learned["u"].cpu(), learned["rho"].cpu())
        if grid != "karras" and profile is None and kimg is None:
            print(f"{folder.path} kimg {nimg / 1000:g}: no learned profile yet; grid {grid} skipped there")
            continue
        importance = bool(sampler.hyperparameters().get("importance_correction", False))
        final = nimg >= spec.budget.total_nimg
        rows = evaluator.evaluate(ema, nimg, 0.0, importance, grid, steps, profile, metric, final, sampler)
        for row in rows:
            before = [r for r in recorded if _same_point(r, row)]
            note = f"recorded {before[-1]['value']:.6g}" if before else "new row"
            print(
                f"{folder.path} kimg {nimg / 1000:g} {row['metric']} grid={grid} NFE {row['nfe']}: "
                f"{row['value']:.6g} ({note})"
            )
            if warning := grid_warning(row, recorded):
                print(warning)
            if not before:
                row["wall_time"] = folder.info().get("wall_time", 0.0)
                new_rows.append(row)
    if new_rows:
        with Lease(folder.path):  # one writer per run folder: refused while a launch trains it
            append_jsonl(folder.records, new_rows)
    return new_rows


def null_network(model: nn.Module) -> nn.Module:
    """``model`` (a run's preconditioned denoiser) with every parameter zero, in place: its raw network
    outputs F ≡ 0 (every layer's weight and bias are zero, so the read-out is), so D = c_skip·x."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
    return model


def score_null(run_dir: str | Path, device: str = "auto") -> Path:
    """Score the null network (module docstring) on the protocol of the run in ``run_dir`` and write its rows
    to the comparison folder's ``NULL_FILE`` (replacing an earlier one); returns that file."""
    opened = open_run(run_dir, None, device)
    spec = opened.spec
    task = build_task(spec)
    ctx = init_distributed(device)
    data = task.load()
    model, _ = opened.network(task, ctx.device)
    evaluator = Evaluator(spec, task, data, ctx.device)
    names = [m.spec.name for m in evaluator.metrics if not m.scores_sampler]
    if not names:
        raise ValueError(f"task {spec.task}'s metrics all score the run's sampler; the null network has none")
    null_network(model)
    rows = []
    for name in names:
        for row in evaluator.evaluate(model, 0, 0.0, False, only=name):
            rows.append(row | {"sampler": NULL_SAMPLER})
            print(f"{spec.task} null network {name}: {row['value']:.6g}")
    path = Path(run_dir).resolve().parent.parent / NULL_FILE
    write_jsonl(path, rows)
    return path


def write_samples(
    run_dir: str | Path, out: str | Path, kimg: float | None = None, n: int = PREVIEW, device: str = "auto"
) -> Path:
    """Generate ``n`` samples from a run's saved snapshot (the one at ``kimg``, else the newest) as an
    evaluation does (Karras grid at the task's steps, ``budget.eval.seed``'s latents, its batches and
    guidance), without the trainer, and write them into ``out`` as the run writes its ``samples/``
    (``suite.watch``); returns the file written. The run may still be training: snapshots are atomic."""

    if n < 1:
        raise ValueError(f"--n must be at least 1, got {n}")
    opened = open_run(run_dir, kimg, device)
    spec, nimg = opened.spec, max(opened.snapshots)
    ctx = init_distributed(device)
    task = build_task(spec)
    data = task.load()
    model, _ = opened.network(task, ctx.device)
    model.load_state_dict(opened.snapshot(nimg)["ema"])
    evaluator = Evaluator(spec, task, data, ctx.device)
    sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
    x, _ = evaluator.generate(model, n, sigmas, spec.budget.eval.guidance)
    path = save_samples(out, nimg, task.decode(x, model)[:n])
    print(f"wrote {path} ({n} samples of {opened.folder.path} at kimg {nimg / 1000:g})")
    return path
