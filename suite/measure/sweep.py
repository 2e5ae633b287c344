"""``suite bench sweep``: K concurrent runs on one device (``spawn``, ``OMP_NUM_THREADS`` = cores // K),
their aggregate training and sampling rates against one run's, and their summed peak memory."""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from multiprocessing.connection import Connection, wait
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import torch

from suite.launch.packed import child_environment, usable_cores
from suite.measure.evaluation import CPU_EVAL_SAMPLES
from suite.measure.request import BenchRequest, compose, device_of, parse_runs, steps_of
from suite.measure.timing import peak_memory_mib, synchronize
from suite.measure.train import TRAIN_STEPS
from suite.registry import import_plugins
from suite.run.training import Trainer


def sweep_worker(request: BenchRequest, start: Barrier, report: Connection) -> None:
    """One of K concurrent processes of ``suite bench sweep``: build the trainer, warm up, then (each phase
    begun with the others at ``start``, a barrier) time the training steps and the generation; sends the
    phases' monotonic start and end times and this process's peak memory."""

    import_plugins()
    device = device_of(request)
    spec = compose(request, extra=[f"budget.batch={request.batch}"] if request.batch else [])
    warm, timed = steps_of(request, TRAIN_STEPS, device)
    n = int(request.samples or (spec.budget.eval.samples if device.type == "cuda" else CPU_EVAL_SAMPLES))
    guidance = spec.budget.eval.guidance
    with tempfile.TemporaryDirectory(prefix="suite-bench-") as tmp:
        trainer = Trainer(spec, Path(tmp))
        evaluator = trainer.evaluator
        assert evaluator is not None  # the single process is the main rank
        sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
        for _ in range(warm):
            trainer.train_step()
        evaluator.generate(trainer.state.ema, 2, sigmas, guidance)
        synchronize(device)
        start.wait()
        train_from = time.monotonic()
        for _ in range(timed):
            trainer.train_step()
        synchronize(device)
        train_to = time.monotonic()
        start.wait()
        generate_from = time.monotonic()
        evaluator.generate(trainer.state.ema, n, sigmas, guidance)
        synchronize(device)
        generate_to = time.monotonic()
        report.send(
            {
                "train": (train_from, train_to),
                "generate": (generate_from, generate_to),
                "steps": timed,
                "batch": trainer.batch,
                "samples": n,
                "peak_memory_mib": peak_memory_mib(device),
                "threads": torch.get_num_threads(),
            }
        )
    report.close()


def concurrent_runs(request: BenchRequest, count: int) -> list[dict[str, Any]]:
    """The reports of ``count`` concurrent :func:`sweep_worker` processes; raises if one of them failed."""

    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(count)
    workers = []
    for _ in range(count):
        reader, writer = spawn.Pipe(duplex=False)
        process = spawn.Process(target=sweep_worker, args=(request, start, writer))
        with child_environment(OMP_NUM_THREADS=str(max(1, usable_cores() // count))):
            process.start()
        writer.close()
        workers.append((process, reader))
    reports: list[dict[str, Any]] = []
    failed = []
    for process, reader in workers:
        while process.exitcode is None and not reader.poll():
            wait([process.sentinel, reader], timeout=1.0)
            if any(p.exitcode not in (None, 0) for p, _ in workers):
                start.abort()  # the others would wait for it at the barrier
        if reader.poll():
            reports.append(reader.recv())
        process.join()
        if process.exitcode != 0:
            failed.append(process.exitcode)
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {count} sweep processes failed (exit status {failed}); their tracebacks "
            "are printed above"
        )
    return reports


def bench_sweep(request: BenchRequest) -> dict[str, Any]:
    """Aggregate training examples/s, generated samples/s and peak memory of K concurrent runs, per K."""
    counts = parse_runs(request.runs)
    device = device_of(request)
    rows = []
    work: dict[str, Any] = {}
    for count in sorted(counts):
        reports = concurrent_runs(request, count)
        work = {key: reports[0][key] for key in ("steps", "batch", "samples")}
        train_s = max(r["train"][1] for r in reports) - min(r["train"][0] for r in reports)
        generate_s = max(r["generate"][1] for r in reports) - min(r["generate"][0] for r in reports)
        rows.append(
            {
                "runs": count,
                "threads_per_run": reports[0]["threads"],
                "train_examples_per_s": sum(r["steps"] * r["batch"] for r in reports) / train_s,
                "train_s": train_s,
                "samples_per_s": sum(r["samples"] for r in reports) / generate_s,
                "generate_s": generate_s,
                "peak_memory_mib": sum(r["peak_memory_mib"] for r in reports),
            }
        )
    base = rows[0]
    for row in rows:
        row["train_ratio"] = row["train_examples_per_s"] / base["train_examples_per_s"]
        row["samples_ratio"] = row["samples_per_s"] / base["samples_per_s"]
        row["memory_ratio"] = row["peak_memory_mib"] / base["peak_memory_mib"]
    memory = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "peak RSS"
    notes = [
        f"each run: {work['steps']} timed training steps at batch {work['batch']}, then {work['samples']} "
        "generated samples (the task's solver and NFE), after warm-up; each phase started together",
        "aggregate rate = K × one run's work / wall time from the first start to the last end; ratio = "
        "against 1 run",
        f"peak MiB = sum over the K processes of each one's {memory}",
    ]
    columns = [
        ("runs", "runs"),
        ("threads_per_run", "threads/run"),
        ("train_examples_per_s", "train ex/s"),
        ("train_ratio", "× 1 run"),
        ("samples_per_s", "samples/s"),
        ("samples_ratio", "× 1 run"),
        ("peak_memory_mib", "peak MiB"),
        ("memory_ratio", "× 1 run"),
    ]
    return {
        "runs": sorted(counts),
        "batch": work["batch"],
        "timed_steps": work["steps"],
        "samples": work["samples"],
        "rows": rows,
        "columns": columns,
        "notes": notes,
    }
