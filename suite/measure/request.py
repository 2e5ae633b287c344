"""What one ``suite bench`` measurement is asked for (``BenchRequest``), its run spec and device, and
the command line that reproduces it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import torch

from suite.config import compose_run
from suite.run.spec import RunSpec, run_spec

# name -> (budget.precision, budget.compile)
VARIANTS: dict[str, tuple[str, bool]] = {
    "fp32": ("fp32", False),
    "bf16": ("bf16", False),
    "bf16+compile": ("bf16", True),
}


@dataclass(frozen=True)
class BenchRequest:
    """What ``suite bench train|sampler|eval|sweep|plan`` measures: the kind, the task and budget with their
    overrides, the device, and the options of that kind (None: its default)."""

    what: str  # train, sampler, eval, sweep or plan
    task: str
    budget: str
    device: str  # auto, cpu or cuda
    overrides: tuple[str, ...] = ()
    batch: int | None = None
    steps: int | None = None
    variants: str | None = None
    runs: str | None = None
    samples: int | None = None
    out: str | None = None


def compose(request: BenchRequest, sampler: str = "edm", extra: list[str] | None = None) -> RunSpec:
    """The run spec of the bench: task, sampler, budget, the command's overrides, device and ``extra``."""
    return run_spec(
        compose_run(
            request.task,
            sampler,
            request.budget,
            [*request.overrides, f"device={request.device}", *(extra or [])],
        )
    )


def device_of(request: BenchRequest) -> torch.device:
    """The device ``--device`` resolves to (auto: CUDA when available)."""
    if request.device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"unknown device {request.device!r}; valid: auto, cpu, cuda")
    if request.device == "cpu" or (request.device == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def steps_of(
    request: BenchRequest, defaults: dict[str, tuple[int, int]], device: torch.device
) -> tuple[int, int]:
    """(warm-up, timed) calls: the device's defaults, the timed count replaced by ``--steps``."""
    warm, timed = defaults[device.type]
    return warm, int(request.steps) if request.steps else timed


def parse_variants(spec: str | None) -> list[str]:
    """``--variants`` as a list of known variant names (default: all)."""
    names = list(VARIANTS) if not spec else [v.strip() for v in spec.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; valid variants: {', '.join(VARIANTS)}")
    return names


def parse_runs(spec: str) -> list[int]:
    """``--runs`` as a list of distinct positive counts that includes 1 (the baseline)."""
    try:
        counts = [int(k) for k in spec.split(",") if k.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts) or 1 not in counts:
        raise ValueError(
            f"--runs {spec!r}: give a comma list of distinct positive numbers of concurrent runs that "
            "includes 1, the baseline (e.g. 1,2,4,8)"
        )
    return counts


def command_line(request: BenchRequest) -> str:
    """The ``suite bench`` command that reproduces this measurement, rebuilt from its arguments."""
    parts = [
        "suite",
        "bench",
        request.what,
        "--task",
        request.task,
        "--budget",
        request.budget,
        "--device",
        request.device,
    ]
    for option in ("batch", "steps", "samples", "variants", "runs", "out"):
        value = getattr(request, option, None)
        if value is not None:
            parts += [f"--{option}", str(value)]
    return shlex.join([*parts, *request.overrides])
