"""``suite bench eval``: samples per second at the task's NFE, each metric's time against the cached
reference, and the bf16 − fp32 precision check against the fp32 seed-to-seed spread."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from suite.measure.request import BenchRequest, compose, device_of
from suite.measure.timing import release, synchronize
from suite.measure.train import network_summary
from suite.metrics import EvalInputs
from suite.run.evaluation import Evaluator
from suite.run.solvers import nfe
from suite.run.training import Trainer

CPU_EVAL_SAMPLES = 8  # generated samples on the CPU unless --samples says otherwise


PRECISION_SEEDS = 3  # fp32 generation seeds whose spread the bf16 − fp32 difference is set against


def bench_eval(request: BenchRequest) -> dict[str, Any]:
    """Samples per second at the task's NFE (EMA model, task solver) and the time of each of its metrics."""

    device = device_of(request)
    spec = compose(request, extra=[f"budget.eval.batch_size={request.batch}"] if request.batch else [])
    ev = spec.budget.eval
    n = int(request.samples or (ev.samples if device.type == "cuda" else min(ev.samples, CPU_EVAL_SAMPLES)))
    if n < 2:
        raise ValueError(f"--samples must be at least 2 (a covariance needs 2 samples), got {n}")
    calls = nfe(spec.diffusion.solver, spec.diffusion.solver_steps)
    release(device)
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        trainer = Trainer(spec, Path(tmp))
        evaluator = Evaluator(spec, trainer.task, trainer.data, device)
        sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
        model = trainer.state.ema
        evaluator.generate(model, 2, sigmas, float(ev.guidance))  # warm-up
        synchronize(device)
        t0 = time.perf_counter()
        x, matched = evaluator.generate(model, n, sigmas, float(ev.guidance))
        synchronize(device)
        generate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        inputs = EvalInputs(
            generated=trainer.task.decode_generated(x, model, {} if matched is None else matched.cond),
            reference=evaluator.reference(),
            matched=None if matched is None else trainer.task.decode_reference(matched),
        )
        decode_s = time.perf_counter() - t0
        rows = [
            {
                "what": "generate",
                "seconds": generate_s,
                "rate": n / generate_s,
                "unit": "samples/s",
                "nfe": calls,
                "n": n,
            }
        ]
        for metric in evaluator.metrics:
            metric(inputs)  # warm-up: loads weights, caches the reference features
            t0 = time.perf_counter()
            value = metric(inputs)["value"]
            seconds = time.perf_counter() - t0
            rows.append(
                {
                    "what": metric.spec.name,
                    "seconds": seconds,
                    "rate": n / seconds,
                    "unit": "samples/s",
                    "n": n,
                    "value": value,
                }
            )
        precision = compare_precision(evaluator, trainer.task, model, n, sigmas, float(ev.guidance))
        for row in precision:
            name = row["metric"]
            rows.append({"what": f"{name} fp32 (seed {ev.seed})", "n": n, "value": row["fp32"]})
            rows.append({"what": f"{name} bf16 (seed {ev.seed})", "n": n, "value": row["bf16"]})
            rows.append({"what": f"{name} bf16 − fp32", "n": n, "value": row["difference"]})
            spread = f"{name} fp32 sd over {PRECISION_SEEDS} seeds"
            rows.append({"what": spread, "n": n, "value": row["fp32_sd"]})
        parts: dict[str, Callable[[], dict[str, float]]] = {}
        for metric in evaluator.metrics:
            for label, part in metric.bench_parts().items():
                parts.setdefault(label, part)
        for label, part in parts.items():
            timed = part()
            rows.append(
                {
                    "what": label,
                    "seconds": timed["seconds"],
                    "rate": timed["n"] / timed["seconds"],
                    "unit": "samples/s",
                    "n": int(timed["n"]),
                    "value": timed["value"],
                }
            )
        extra = network_summary(trainer) | {
            "data": trainer.data.variant,
            "decode_s": decode_s,
            "n_reference": evaluator.n_reference,
        }
        del trainer, evaluator
    release(device)
    notes = [
        f"generate: the EMA network with the task's solver from σ_max, {ev.precision}, in chunks of "
        "eval.batch_size",
        "metric rows: one call on the decoded samples against the cached reference (second call, after "
        "a warm-up that loads the featuriser and caches the reference features)",
    ]
    columns = [
        ("what", "what"),
        ("seconds", "s"),
        ("rate", "rate"),
        ("unit", "unit"),
        ("nfe", "NFE"),
        ("n", "samples"),
        ("value", "value"),
    ]
    for row in precision:
        verdict = "inside" if row["inside_spread"] else "outside"
        keep = "bf16 may be the default" if row["inside_spread"] else "fp32 stays the default"
        notes.append(
            f"{row['metric']}: bf16 generation (autocast around the network) − fp32 on the same latents = "
            f"{row['difference']:.4g}, {verdict} the fp32 seed-to-seed sd {row['fp32_sd']:.4g} "
            f"({PRECISION_SEEDS} latent seeds): {keep}"
        )
    return {"rows": rows, "columns": columns, "notes": notes, "precision": precision, **extra}


def compare_precision(
    evaluator: Any, task: Any, model: torch.nn.Module, n: int, sigmas: Tensor, guidance: float
) -> list[dict[str, Any]]:
    """Each metric on ``n`` samples of the same network generated in fp32 from ``PRECISION_SEEDS`` latent
    seeds and in bf16 from the first: the bf16 − fp32 difference at the same latents, against the sample
    standard deviation of the fp32 values over the seeds (inside the spread when |difference| ≤ sd), and
    the largest difference between the two precisions' samples in model space."""

    first = evaluator.spec.budget.eval.seed
    reference = evaluator.reference()

    def scores(seed: int, precision: str) -> tuple[dict[str, float], Tensor]:
        x, matched = evaluator.generate(model, n, sigmas, guidance, seed=seed, precision=precision)
        inputs = EvalInputs(
            generated=task.decode(x, model),
            reference=reference,
            matched=None if matched is None else task.decode_reference(matched),
        )
        return {metric.spec.name: float(metric(inputs)["value"]) for metric in evaluator.metrics}, x

    (fp32, x32), *others = [scores(first + k, "fp32") for k in range(PRECISION_SEEDS)]
    bf16, x16 = scores(first, "bf16")
    apart = (x16.float() - x32.float()).abs().max().item()  # in model space, before any decoding
    fp32 = [fp32, *(values for values, _ in others)]
    rows = []
    for name, value in bf16.items():
        values = [seed_scores[name] for seed_scores in fp32]
        sd = statistics.stdev(values)
        difference = value - values[0]
        rows.append(
            {
                "metric": name,
                "fp32": values[0],
                "bf16": value,
                "difference": difference,
                "fp32_seeds": values,
                "fp32_sd": sd,
                "inside_spread": abs(difference) <= sd,
                "samples_max_abs_difference": apart,
            }
        )
    return rows
