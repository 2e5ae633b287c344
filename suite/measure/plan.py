"""``suite bench plan``: the wall-time plan ``suite run`` prints (``suite.launch.cost.measured_here``, one
run at a time) against the measured wall time of the same run trained here to its end (``suite.run.training
.train``, from building its trainer to its last record), for each task × budget asked (default: bfashion and
twoscale at the demo and smoke budgets, sampler edm, seed 0); the ratio planned / measured, and whether it
lies within 2× either way. The runs go to a temporary folder; the evaluation caches they fill (reference
statistics) are the suite's, as in a real run, so a first case may pay for computing them."""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path
from typing import Any

from suite.config import compose_run
from suite.launch.cost import measured_here
from suite.measure.request import BenchRequest
from suite.run.spec import run_spec
from suite.run.training import train

DEFAULT_TASKS = "bfashion,twoscale"
DEFAULT_BUDGETS = "demo,smoke"
WITHIN = 2.0  # the plan should lie within this factor of the measured wall time, either way


def names(text: str) -> list[str]:
    """A comma list as names, blanks dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def bench_plan(request: BenchRequest) -> dict[str, Any]:
    """Planned and measured seconds of one run per task × budget of the request (comma lists)."""
    rows = []
    for task in names(request.task):
        for budget in names(request.budget):
            cfg = compose_run(task, "edm", budget, [*request.overrides, f"device={request.device}"])
            here = measured_here(run_spec(cfg))
            planned = here["hours"] * 3600
            with tempfile.TemporaryDirectory(prefix="suite-bench-plan-") as tmp:
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    train(cfg, Path(tmp) / "run")
                measured = time.perf_counter() - start
            ratio = planned / measured
            rows.append(
                {
                    "task": task,
                    "budget": budget,
                    "threads": here["threads"],
                    "setup_s": here["setup_s"],
                    "step_s": here["step_s"],
                    "steps": here["steps"],
                    "eval_s": here["eval_s"],
                    "eval_points": here["eval_points"],
                    "planned_s": planned,
                    "measured_s": measured,
                    "ratio": ratio,
                    "within": 1 / WITHIN <= ratio <= WITHIN,
                }
            )
    columns = [
        ("task", "task"),
        ("budget", "budget"),
        ("threads", "threads"),
        ("setup_s", "s/setup"),
        ("step_s", "s/step"),
        ("steps", "steps"),
        ("eval_s", "s/eval"),
        ("eval_points", "evals"),
        ("planned_s", "planned s"),
        ("measured_s", "measured s"),
        ("ratio", "planned/measured"),
        ("within", f"within {WITHIN:g}×"),
    ]
    notes = [
        "planned: suite run's plan of one run (the median optimiser step at the run's batch, after two "
        "untimed ones, times its steps, plus one timed evaluation times its evaluation points, plus the "
        "time its trainer took to build)",
        "measured: the same run trained here to its end, trainer construction and checkpoints included",
    ]
    return {"rows": rows, "columns": columns, "notes": notes}
