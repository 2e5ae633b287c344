"""``suite bench train|sampler|eval|sweep|plan``: the runner's speed, measured side by side in one run
(``plan``: ``suite.measure.plan``).

* ``train``: examples per second of ``Trainer.train_step`` (data indexing, σ draw, forward, backward,
  Adam, sampler observation, EMA) for each precision/compile variant the runner supports: ``fp32``,
  ``bf16`` (autocast; torch's CPU autocast runs it too) and ``bf16+compile`` (torch.compile, which
  ``budget.compile: auto`` applies on CUDA only, so it is skipped on the CPU). Model FLOPs per example are
  counted with ``torch.utils.flop_counter.FlopCounterMode`` over one step (forward and backward of the
  network; 2 FLOPs per multiply-add) and set against the device's dense square-matmul rate in bf16 and fp32,
  measured in the same run. Peak memory: ``torch.cuda.max_memory_allocated`` on CUDA, the process's peak
  resident set size (``getrusage``, cumulative over the run) on the CPU.
* ``sampler``: every configured sampler's cost per training step: drawing σ for the global batch (with
  its importance weight), observing the batch's losses as the training step does (``observe_draws``: no
  host read) and the amortised rebuild, against one training step of the task's network at the same batch
  (default 512; the target is at most 1%), measured in the same run. Adaptive samplers are first driven
  through their warm-up; the timed loop is then a whole number of refresh periods, so it holds exactly one
  rebuild per ``refresh_every`` steps. The observed
  losses are a synthetic MMSE-like curve of the drawn σ, computed beforehand on a copy of the sampler
  fed the same generator stream, so the timed loop holds sampler work only. This wall time includes the
  kernel launches; on CUDA the GPU time of draw + observe is measured too, each step queued behind a
  busy-wait kernel so that its kernels run back to back (the cost inside a GPU-bound training loop, whose
  launches overlap the previous work), plus the amortised rebuild (which synchronises).
* ``eval``: samples per second of the EMA model with the task's solver at its NFE, and the time of each
  of the task's metrics on those samples against the cached reference (after a warm-up call that loads
  the featuriser). Then the precision check: each metric on the same network's samples generated in fp32
  from three latent seeds and in bf16 (autocast around the network) from the first; the bf16 − fp32
  difference on the same latents is set against the fp32 values' seed-to-seed standard deviation, and
  ``budget.eval.precision`` stays fp32 unless the difference lies inside it.
* ``sweep``: for each K of ``--runs`` (1 included, the baseline), K processes on one device, each as
  ``suite run --runs-per-gpu K`` starts them (``spawn``, ``OMP_NUM_THREADS`` = cores // K), each building
  the task's trainer as ``train`` does and, after warm-up, timing ``--steps`` training steps and then the
  generation of ``--samples`` samples as ``eval`` does, the K processes starting each phase together (a
  barrier). Aggregate rates are K × the work of one process over the wall time from the first process's
  start to the last one's end (``time.monotonic``, one clock for all processes); the ratio column divides
  them by the single run's. Peak memory is summed over the processes: ``torch.cuda.max_memory_allocated``
  of each on CUDA (the CUDA context each process holds comes on top), each one's peak resident set size
  on the CPU. The processes import ``$SUITE_PLUGINS`` first, as SLURM jobs do. Printed as a markdown
  table.

CUDA work is timed with CUDA events between synchronisations, CPU work with ``time.perf_counter``; every
figure is the mean over the timed calls after untimed warm-up calls. ``--out`` writes the report as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from suite.measure.evaluation import bench_eval
from suite.measure.plan import bench_plan
from suite.measure.request import BenchRequest, command_line, device_of
from suite.measure.sweep import bench_sweep
from suite.measure.train import bench_sampler, bench_train
from suite.records import host_info, now, package_versions


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_table(report: dict[str, Any]) -> str:
    """The report's rows as an aligned text table (skipped rows say why), then its notes."""
    columns = report["columns"]
    lines = [[title for _, title in columns]]
    skipped = []
    for row in report["rows"]:
        if "skipped" in row:
            skipped.append(f"{row.get('variant', row.get('sampler'))}: skipped, {row['skipped']}")
            continue
        lines.append([_cell(row.get(key)) for key, _ in columns])
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    text = ["  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)) for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text + skipped + [f"# {note}" for note in report["notes"]])


def format_markdown(report: dict[str, Any]) -> str:
    """The report's rows as a markdown table, then its notes."""
    columns = report["columns"]
    lines = ["| " + " | ".join(title for _, title in columns) + " |", "|" + "---:|" * len(columns)]
    for row in report["rows"]:
        lines.append("| " + " | ".join(_cell(row.get(key)) for key, _ in columns) + " |")
    return "\n".join(lines + [""] + [f"- {note}" for note in report["notes"]])


def measure(request: BenchRequest) -> int:
    """``suite bench train|sampler|eval|sweep``: measure, print the table and, with ``--out``, write the
    JSON."""
    benches = {"train": bench_train, "sampler": bench_sampler, "eval": bench_eval, "sweep": bench_sweep}
    bench = (benches | {"plan": bench_plan})[request.what]
    device = device_of(request)
    report = bench(request)
    header = {
        "bench": request.what,
        "task": request.task,
        "budget": request.budget,
        "overrides": list(request.overrides),
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch_threads": torch.get_num_threads(),
        "date": now(),
        "command": command_line(request),
        "packages": package_versions(),
        "torch_cuda": torch.version.cuda,
        **host_info(),
    }
    report = header | report
    overrides = [" ".join(request.overrides)] if request.overrides else []
    parts = [f"suite bench {request.what}", f"task {request.task}", f"budget {request.budget}"]
    print(" · ".join([*parts, header["device_name"], *overrides]))
    print((format_markdown if request.what == "sweep" else format_table)(report), flush=True)
    if request.out:
        out = Path(request.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        report.pop("columns")
        out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {out}")
    return 0
