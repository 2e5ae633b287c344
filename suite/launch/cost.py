"""The planned cost of a run: processed examples, training FLOPs, and device hours at a stated rate.

FLOPs per training example are counted by ``torch.utils.flop_counter.FlopCounterMode`` over one forward and
backward pass of the task's network at batch 1 (2 FLOPs per multiply-add), on PyTorch's ``meta`` device: the
shapes are real, nothing is computed, so a 60M-parameter network is counted in a second. The example batch
comes from the task's own example data (``Task.example_data``), so conditioning inputs have their real
shapes. Training FLOPs = examples × FLOPs per example; evaluation is not included.

The planning rate of one H200 is a measured one, labelled with where it comes from, in this order:

1. the run's own network: the fastest variant of a committed ``suite bench train`` report
   (``results/gpu/*/bench/train-*.json``) whose network has the same FLOPs per example (within 1%; the same
   task preferred), e.g. bfashion's `short` U-Net at 38 TFLOP/s, CIFAR-10's DDPM++ at 242 TFLOP/s under
   bf16 and torch.compile;
2. else its modality (``Task.modality``): the fastest variant of the bench of a network of the same
   modality whose FLOPs per example are nearest on a log scale;
3. else NVlabs/edm's own CIFAR-10 training loop (DDPM++, 127 GFLOP per training image, 1667 img/s with its
   fp16 option on one NVIDIA H200, about 212 TFLOP/s achieved). For an image network that is its family's
   published rate; for another modality (DNA, text, points) no rate of its own has been measured, the label
   says so, and the hours are a lower bound (a small network uses the device less well), until ``suite
   bench train --task T`` on a GPU measures one.

On this machine, ``measured_here`` times the run itself: its trainer's optimiser steps at the run's batch (the
median step, after two untimed ones) and one evaluation as the run makes it, with the threads each run will
get (a run packed K to a machine gets 1/K of the cores); ``wall_seconds`` then counts steps × step time +
evaluation points × evaluation time per run, and the runs K at a time. ``suite bench plan`` sets this plan
against measured wall times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.flop_counter import FlopCounterMode

from suite.run.assembly import build_parts
from suite.run.spec import RunSpec
from suite.task import TASKS, Batch

PLANNING_TFLOPS = 212.0
PLANNING_RATE = "212 TFLOP/s (EDM's CIFAR-10 loop with --fp16 on one H200: 1667 img/s × 127 GFLOP)"


BENCH_REPORTS = Path(__file__).resolve().parents[2] / "results"
PLAN_WARM_STEPS = 2  # untimed optimiser steps before the plan's timed ones
PLAN_STEPS, PLAN_MAX_STEPS, PLAN_MIN_S = 5, 40, 1.0  # timed steps: at least 5, more until 1 s (at most 40)
PLAN_EVAL_SAMPLES = 1024  # at most this many samples in the plan's timed evaluation, scaled to the budget's
PLAN_EVAL_REFERENCE = 1024  # and at most this many reference examples
QUICK_BATCH = 8  # a dry run times its steps on at most this many examples, scaled to the run's batch
QUICK_STEPS = 3  # and takes the median of this many (after an untimed one)
WARN_HOURS = 1.0  # a local plan longer than this on this machine is said in a warning line
SMALLEST_BUDGETS = ("demo", "smoke")  # no smaller budget to advise


@functools.lru_cache(maxsize=4)
def _example_batch(task: str, task_yaml: str) -> Any:
    """One training example of the task's own example data (``Task.example_data``), on the CPU; cached, as
    the cost and the measurement of a dry-run both read it."""
    task_cls = TASKS.get(task)
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as tmp:
        example_cfg = OmegaConf.merge(OmegaConf.create(task_yaml), task_cls.example_data(Path(tmp), 2))
        return task_cls(example_cfg).load().train.batch(torch.arange(1), torch.device("cpu"))


def example_batch(spec: RunSpec) -> Any:
    """``_example_batch`` of the run's task config."""
    return _example_batch(spec.task, OmegaConf.to_yaml(spec.task_cfg))


def _forward_backward(parts: Any, batch: Any, device: torch.device) -> None:
    """One forward and backward pass of the run's objective on ``batch`` at σ = 1."""
    objective = parts.task.objective(parts.weight)
    cond = {key: value.to(device) for key, value in batch.cond.items()}
    x0 = objective.encode(parts.model, batch.x0.to(device))
    n = x0.shape[0]
    noise = torch.empty((n, *parts.task.sample_shape), device=device).normal_()
    weighted, _ = objective.losses(parts.model, x0, torch.ones(n, device=device), noise, cond)
    weighted.sum().backward()


_FLOPS: dict[str, float] = {}  # comparison hash → FLOPs per example


def flops_per_example(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training example of the run's network (meta device). The runs of a
    comparison share them (only the sampler and the seed differ, and neither enters the pass), so they are
    counted once per comparison hash in a process: a study's plan counts each comparison once."""
    if spec.comparison_hash not in _FLOPS:
        meta = torch.device("meta")
        batch = example_batch(spec)
        with FlopCounterMode(display=False) as counter:
            _forward_backward(build_parts(spec, meta=True), batch, meta)
        _FLOPS[spec.comparison_hash] = float(counter.get_total_flops())
    return _FLOPS[spec.comparison_hash]


def planning_rate(gflop_per_example: float, task: str) -> tuple[float, str]:
    """TFLOP/s of one H200 for ``task``'s network of ``gflop_per_example`` and where the figure comes from
    (module docstring): a committed bench of a network of the same FLOPs, else of the task's modality,
    else EDM's CIFAR-10 loop."""
    modality = TASKS.get(task).modality
    exact: list[tuple[bool, float, str]] = []
    near: list[tuple[float, float, str]] = []
    for path in sorted(BENCH_REPORTS.glob("gpu/*/bench/train-*.json")):
        report = json.loads(path.read_text())
        same_modality = report["task"] in TASKS.names() and TASKS.get(report["task"]).modality == modality
        for row in report.get("rows", []):
            gflop, tflops = row.get("gflop_per_example"), row.get("tflops")
            if not (gflop and tflops):
                continue
            source = (
                f"suite bench train of {report['task']} {report['budget']}, {row['variant']}, on one "
                f"{report['device_name']}, {path.relative_to(BENCH_REPORTS.parent)}"
            )
            if math.isclose(gflop, gflop_per_example, rel_tol=0.01):
                exact.append((report["task"] == task, tflops, f"{tflops:.3g} TFLOP/s (measured: {source})"))
            elif same_modality:
                distance = abs(math.log(gflop / gflop_per_example))
                bound = (
                    "; a smaller network, so a lower bound on its hours" if gflop_per_example < gflop else ""
                )
                label = (
                    f"{tflops:.3g} TFLOP/s (measured for another {modality} network, of {gflop:.3g} "
                    f"GFLOP/example against this one's {gflop_per_example:.3g}: {source}{bound})"
                )
                near.append((-distance, tflops, label))
    if exact:
        _, tflops, source = max(exact)
        return tflops, source
    if near:
        _, tflops, source = max(near)
        return tflops, source
    if modality == "image":
        return (
            PLANNING_TFLOPS,
            f"{PLANNING_RATE}; no bench of an image network, so a lower bound on its hours",
        )
    return PLANNING_TFLOPS, (
        f"{PLANNING_TFLOPS:.0f} TFLOP/s, the image rate of EDM's CIFAR-10 loop on one H200: no {modality} "
        f"network benched yet, so a lower bound on its hours (`suite bench train --task {task}` on a GPU "
        "measures one)"
    )


def planned_cost(spec: RunSpec) -> dict[str, Any]:
    """Examples, FLOPs and device hours of one run at the planning rate of its network (``planning_rate``)."""
    examples = float(spec.budget.total_nimg)
    per_example = flops_per_example(spec)
    total = examples * per_example
    tflops, rate = planning_rate(per_example / 1e9, spec.task)
    return {
        "examples": examples,
        "gflop_per_example": per_example / 1e9,
        "training_pflop": total / 1e15,
        "device_hours": total / (tflops * 1e12) / 3600,
        "rate": rate,
    }


def wall_seconds(
    step_s: float,
    steps: int,
    eval_s: float,
    eval_points: int,
    runs: int,
    at_once: int = 1,
    setup_s: float = 0.0,
) -> tuple[float, float]:
    """(seconds of one run, seconds of ``runs`` runs): a run takes ``setup_s`` to build its trainer,
    ``steps`` optimiser steps of ``step_s`` and ``eval_points`` evaluations of ``eval_s``; the runs go
    ``at_once`` at a time, each batch of them as long as one run (each timed with the threads it gets,
    ``threads_per_run``)."""
    one = setup_s + steps * step_s + eval_points * eval_s
    return one, math.ceil(runs / max(1, at_once)) * one


def threads_per_run(at_once: int = 1) -> int:
    """The intra-op threads each of ``at_once`` runs trains with on the CPU: torch's own count for one run
    at a time, the usable cores shared out for more (as ``suite.launch.packed`` sets ``OMP_NUM_THREADS``)."""
    from suite.launch.packed import usable_cores

    return torch.get_num_threads() if at_once <= 1 else max(1, usable_cores() // at_once)


def measured_here(spec: RunSpec, at_once: int = 1, whole: bool = True) -> dict[str, Any]:
    """Seconds per optimiser step and per evaluation of the run on the device a local launch trains on, with
    the threads each of ``at_once`` runs gets (``threads_per_run``), and the hours of one run at those (module
    docstring): the run's trainer at its own batch, ``PLAN_WARM_STEPS`` untimed steps, then the median of
    ``PLAN_STEPS`` or more timed ones (``_median_step``), then one evaluation after an untimed one
    (``planning_spec``: at most ``PLAN_EVAL_SAMPLES`` samples, the time scaled to the budget's samples).
    Without ``whole`` (a dry run, which must answer in seconds), or where the run's trainer cannot be
    built (its data are missing), forward and backward passes and Adam steps on the task's example data at
    the run's batch stand in for the steps, and the evaluation is left out (the source says so)."""
    device = torch.device("cuda" if spec.device != "cpu" and torch.cuda.is_available() else "cpu")
    threads = threads_per_run(at_once) if device.type == "cpu" else torch.get_num_threads()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with tempfile.TemporaryDirectory(prefix="suite-plan-") as tmp:
            start = time.perf_counter()
            trainer = _planning_trainer(spec, Path(tmp)) if whole else None
            setup_s = time.perf_counter() - start if trainer is not None else 0.0
            left_out = None  # why the evaluations are not in the plan
            if trainer is None:
                step_s, eval_s = _passes_only(spec, device), 0.0
                source = f"the task's example data (at most {QUICK_BATCH} copies, scaled to the batch)"
                left_out = "its data could not be loaded here" if whole else "a dry run times the steps only"
            else:
                with contextlib.redirect_stdout(io.StringIO()):
                    step_s, timed = _steps_and_evaluation(trainer, device)
                eval_s = (timed or 0.0) * evaluated_samples(spec) / trainer.spec.budget.eval.samples
                source = "the run's trainer"
                left_out = None if timed is not None else "its evaluation failed here; the run's own says why"
                del trainer
    finally:
        torch.set_num_threads(before)
    steps = math.ceil(spec.budget.total_nimg / spec.budget.batch)
    per_run, _ = wall_seconds(step_s, steps, eval_s, spec.budget.eval_points, 1, setup_s=setup_s)
    where = (
        f"cpu, {threads} thread(s) per run" if device.type == "cpu" else torch.cuda.get_device_name(device)
    )
    evaluation = (
        f"{spec.budget.eval_points} evaluation(s) of {eval_s:.3g} s"
        if left_out is None
        else f"evaluations not included: {left_out}"
    )
    return {
        "step_s": step_s,
        "eval_s": eval_s,
        "setup_s": setup_s,
        "steps": steps,
        "eval_points": spec.budget.eval_points,
        "examples_per_s": spec.budget.batch / step_s,
        "hours": per_run / 3600,
        "threads": threads,
        "device": where,
        "source": f"measured now with {source}: the median of {PLAN_STEPS}+ optimiser steps after "
        f"{PLAN_WARM_STEPS} untimed, "
        f"{steps} steps of batch {spec.budget.batch} per run; {evaluation}; building the trainer "
        f"{setup_s:.2g} s",
    }


def planning_spec(spec: RunSpec) -> RunSpec:
    """``spec`` with its evaluation cut to at most ``PLAN_EVAL_SAMPLES`` samples against at most
    ``PLAN_EVAL_REFERENCE`` reference examples (the demo's and smoke's own counts stay as they are), so that
    a plan of a large budget does not score thousands of samples before the first step."""
    ev = spec.budget.eval
    n = min(ev.samples, PLAN_EVAL_SAMPLES)
    reference = min(ev.reference or PLAN_EVAL_REFERENCE, PLAN_EVAL_REFERENCE)
    cut = dataclasses.replace(ev, samples=n, final_samples=n, reference=reference)
    return dataclasses.replace(spec, budget=dataclasses.replace(spec.budget, eval=cut))


def evaluated_samples(spec: RunSpec) -> float:
    """Samples generated and scored per evaluation point of ``spec``, averaged over its points (the final
    point may score ``final_samples`` from each of ``final_ranges``)."""
    ev, points = spec.budget.eval, max(1, spec.budget.eval_points)
    return (ev.samples * (points - 1) + ev.final_samples * max(1, ev.final_ranges)) / points


def _planning_trainer(spec: RunSpec, folder: Path) -> Any:
    """The run's trainer on ``planning_spec`` in ``folder``, or None where it cannot be built (its data are
    missing or unreadable: the preflight names that afterwards)."""
    from suite.run.training import Trainer

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return Trainer(planning_spec(spec), folder)
    except Exception:
        return None


def _steps_and_evaluation(trainer: Any, device: torch.device) -> tuple[float, float | None]:
    """(seconds per optimiser step, seconds of one evaluation) of ``trainer`` (``measured_here``); None for
    an evaluation that failed."""
    for _ in range(PLAN_WARM_STEPS):  # allocations and lazy initialisation
        trainer.train_step()
    _synchronize(device)
    step_s = _median_step(trainer.train_step, device)
    if trainer.evaluator is None or trainer.spec.budget.eval_points < 1:
        return step_s, 0.0

    def evaluate() -> None:
        trainer.evaluator.evaluate(trainer.state.ema, 0, 0.0, False, sampler=trainer.state.sampler)

    try:
        evaluate()  # loads weights, caches the reference
        start = time.perf_counter()
        evaluate()
    except Exception:  # the run's own first evaluation will say what fails; the plan goes on without it
        return step_s, None
    _synchronize(device)
    return step_s, time.perf_counter() - start


def _passes_only(spec: RunSpec, device: torch.device) -> float:
    """Seconds of one forward and backward pass and Adam step of the run's network on ``budget.batch``
    copies of the task's example: the median of ``QUICK_STEPS`` (after an untimed one) on at most
    ``QUICK_BATCH`` copies, scaled to the run's batch, so that a dry run of a large budget answers in seconds
    (a DNA `short` dry run: 19 s on 2 cores at 32 copies and 5 steps)."""
    parts = build_parts(spec, device=device)
    one = example_batch(spec)
    n = min(spec.budget.batch, QUICK_BATCH)
    batch = Batch(
        one.x0.repeat(n, *[1] * (one.x0.dim() - 1)),
        {k: v.repeat(n, *[1] * (v.dim() - 1)) for k, v in one.cond.items()},
    )
    optimiser = torch.optim.Adam(parts.model.parameters(), lr=1e-4)

    def step() -> None:
        optimiser.zero_grad(set_to_none=True)
        _forward_backward(parts, batch, device)
        optimiser.step()

    step()
    _synchronize(device)
    return _median_step(step, device, QUICK_STEPS) * spec.budget.batch / n


def _median_step(step: Any, device: torch.device, least: int = PLAN_STEPS) -> float:
    """The median seconds of ``step()`` over at least ``least`` calls, more until they took ``PLAN_MIN_S``
    (at most ``PLAN_MAX_STEPS``): a median, as other processes on a shared machine slow some calls."""
    times: list[float] = []
    while len(times) < least or (sum(times) < PLAN_MIN_S and len(times) < PLAN_MAX_STEPS):
        start = time.perf_counter()
        step()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _hours(hours: float) -> str:
    """Hours, "0.52 h" or "3,100 h", with days beyond 48 h and years beyond two: "3,100 h (129 days)"."""
    text = f"{hours:,.0f} h" if hours >= 100 else f"{hours:.3g} h"
    if hours > 2 * 8766:
        return f"{text} ({hours / 8766:,.0f} years)"
    return f"{text} ({hours / 24:,.3g} days)" if hours > 48 else text


def _duration(hours: float) -> str:
    """A wall time in the unit that reads best: "42 s", "5.3 min", else as ``_hours``."""
    if hours < 1 / 60:
        return f"{hours * 3600:.2g} s" if hours * 3600 < 10 else f"{hours * 3600:.0f} s"
    return f"{hours * 60:.2g} min" if hours < 1 else _hours(hours)


def describe_cost(
    cost: dict[str, Any], runs: int, here: dict[str, Any] | None = None, at_once: int = 1, budget: str = ""
) -> list[str]:
    """The cost lines ``suite run --dry-run`` prints: the planned training cost per run and for ``runs``
    runs at the planning rate, then (``here``, a ``measured_here``) the wall time on this machine, with a
    ``warning:`` line when the runs one after another take longer than ``WARN_HOURS``."""
    lines = [
        f"planned cost per run: {cost['examples']:,.0f} training examples × {cost['gflop_per_example']:.4g} "
        f"GFLOP (forward + backward) = {cost['training_pflop']:,.4g} PFLOP, {cost['device_hours']:,.3g} "
        f"device-hours at {cost['rate']}; {runs} run(s): {runs * cost['device_hours']:,.3g} device-hours "
        "(evaluation not included)"
    ]
    return lines + ([] if here is None else describe_here(here, runs, at_once, budget))


def describe_here(here: dict[str, Any], runs: int, at_once: int = 1, budget: str = "") -> list[str]:
    """The planned wall time of ``runs`` runs on this machine, ``at_once`` at a time (a ``measured_here``
    with the same ``at_once``), and a ``warning:`` line when they take longer than ``WARN_HOURS``; it
    advises a smaller budget only to a ``budget`` that has one (not demo or smoke)."""
    timed = (here["step_s"], here["steps"], here["eval_s"], here["eval_points"])
    _, total_s = wall_seconds(*timed, runs, at_once, here.get("setup_s", 0.0))
    total = total_s / 3600
    order = "one after another" if at_once <= 1 else f"{at_once} at a time"
    lines = [
        f"planned wall time on this machine ({here['device']}): {_duration(here['hours'])} per run "
        f"({here['step_s']:.3g} s per step), {_duration(total)} for {runs} run(s) {order} ({here['source']})"
    ]
    if total > WARN_HOURS:
        smaller = "" if budget in SMALLEST_BUDGETS else "a smaller budget (demo, smoke) or "
        lines.append(
            f"warning: these {runs} run(s) would take {_hours(total)} here; {smaller}--launcher slurm on "
            "GPUs is the usual way"
        )
    return lines
