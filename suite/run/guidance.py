"""``suite guidance RUN --scales 1,1.5,2,3``: a conditional run's classifier-free guidance scale, chosen on
held-out conditions apart from the ones every evaluation scores.

An evaluation conditions its n samples on ``fixed_choice(len(reference), n, CONDITION_SEED)``: the first n
positions of one fixed permutation of the reference split (for OpenWebText, validation documents), n at most
E = max(``budget.eval.samples``, ``budget.eval.final_samples``). The sweep takes the next ``--samples``
positions of the same permutation, [E, E + m), so its conditions and their real examples are disjoint from
every evaluation's by construction; a split too small for both is refused, as is a task whose final point
scores every reference example (``final_eval: per_reference``) or an unconditional one.

At each scale g (Ho & Salimans 2022: D_g = D(x; ∅) + g·(D(x; c) − D(x; ∅))) the run's newest snapshot (or
the one at ``--kimg``) generates from the evaluation's latents with the task's solver and grid, and the
task's metric that compares each sample with its own condition's real example (``Metric.reads ==
"matched"``, MAUVE against the same documents; ``--metric`` names one when several do) scores it. The best
value by the metric's direction wins (the smallest scale on ties). Every value, the choice, the held-out
positions and the run's identity are written atomically to ``guidance.json`` in the run folder (under the
run's lease), with each scale's spread over the metric's seeds where it reports one (MAUVE: the standard
deviation over its k-means seeds). Each sampler's run chooses its own scale (``docs/text.md``): with
``rescore`` its snapshots are then scored again at that scale (``suite.run.evaluation.rescore``), rows the
table shows as that run's re-scored protocol ``guidance=<chosen>``.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from torch import Tensor

from suite.lease import Lease
from suite.metrics import EvalInputs
from suite.records import write_json
from suite.run.assembly import build_task
from suite.run.distributed import init_distributed
from suite.run.evaluation import CONDITION_SEED, Evaluator, fixed_choice, open_run
from suite.run.spec import SpecError, guidance_problem

GUIDANCE_FILE = "guidance.json"
SPREAD_KEYS = ("std", "n_seeds")


def held_out_conditions(n_split: int, n_evaluated: int, n: int) -> Tensor:
    """Positions [n_evaluated, n_evaluated + n) of the evaluation's permutation of a split of n_split
    examples: disjoint from the first n_evaluated, which the evaluations condition on."""
    if n < 2 or n_evaluated + n > n_split:
        raise ValueError(
            f"a held-out sweep of {n} conditions beside the {n_evaluated} that evaluations use needs a split "
            f"of at least {n_evaluated + n} examples (and n >= 2); the reference split holds {n_split}: "
            f"pass --samples <= {max(n_split - n_evaluated, 0)}"
        )
    return fixed_choice(n_split, n_evaluated + n, CONDITION_SEED)[n_evaluated:]


def parse_scales(text: str) -> list[float]:
    """``"1,1.5,2"`` → [1.0, 1.5, 2.0]; anything but distinct finite numbers ≥ 0 is refused."""
    try:
        scales = [float(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--scales {text!r}: expected comma-separated numbers, e.g. 1,1.5,2,3") from None
    if not scales or any(not math.isfinite(g) or g < 0 for g in scales) or len(set(scales)) != len(scales):
        raise ValueError(f"--scales {text!r}: expected distinct finite numbers >= 0, e.g. 1,1.5,2,3")
    return scales


def sweep_guidance(
    run_dir: str | Path,
    scales: list[float],
    metric: str | None = None,
    kimg: float | None = None,
    samples: int | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Score a finished run at every scale on held-out conditions, write ``guidance.json`` and return it."""

    opened = open_run(run_dir, kimg, device, "`suite guidance` sweeps finished runs")
    folder, spec = opened.folder, opened.spec
    problems = [p for g in scales if (p := guidance_problem(g, spec.diffusion.cond_dropout))]
    if problems:
        raise SpecError(problems)
    ev = spec.budget.eval
    if ev.per_reference_final:
        raise ValueError(
            f"task {spec.task!r} scores every reference example at its final point, so no reference example "
            "is left to choose a guidance scale on"
        )
    ctx = init_distributed(device)
    task = build_task(spec)
    if not task.conditional:
        raise ValueError(f"task {spec.task!r} is unconditional: classifier-free guidance does not apply")
    data = task.load()
    evaluator = Evaluator(spec, task, data, ctx.device)
    matched = [m for m in evaluator.metrics if evaluator.reads(m) == "matched"]
    chosen = [m for m in matched if metric in (None, m.spec.name)]
    if not chosen:
        valid = ", ".join(m.spec.name for m in matched) or "none"
        raise ValueError(
            f"metric {metric!r} does not compare each sample with its condition's real example in task "
            f"{spec.task!r}; valid metrics: {valid}"
        )
    scorer = chosen[0]
    n_evaluated = max(ev.samples, ev.final_samples)
    conditions = held_out_conditions(len(data.reference), n_evaluated, samples or ev.samples)
    nimg = max(opened.snapshots)
    model, _ = opened.network(task, ctx.device)
    model.load_state_dict(opened.snapshot(nimg)["ema"])
    sigmas = evaluator.grid("karras", spec.diffusion.solver_steps, None)
    values, curve = {}, []
    for g in scales:
        x, real = evaluator.generate(model, len(conditions), sigmas, g, conditions=conditions)
        if real is None:
            raise RuntimeError(f"task {spec.task!r} generated without its conditions' examples")
        inputs = EvalInputs(task.decode_generated(x, model, real.cond), None, task.decode_reference(real))
        scored = scorer(inputs)
        values[g] = float(scored["value"])
        # a metric's spread over its own seeds (MAUVE: the std over k-means seeds), where it reports one
        spread = {k: float(scored[k]) for k in SPREAD_KEYS if k in scored}
        curve.append({"guidance": g, "value": values[g], **spread})
        shown = f" ± {spread['std']:.3g} over {spread.get('n_seeds', 0):g} seeds" if "std" in spread else ""
        print(f"{folder.path} kimg {nimg / 1000:g} guidance {g:g}: {scorer.spec.name} {values[g]:.6g}{shown}")
    best = (max if scorer.spec.higher_is_better else min)(sorted(values), key=values.__getitem__)
    record = {
        "chosen": best,
        "metric": scorer.spec.name,
        "higher_is_better": scorer.spec.higher_is_better,
        "values": curve,
        "kimg": nimg / 1000,
        "held_out": {
            "split": "reference",
            "split_size": len(data.reference),
            "condition_seed": CONDITION_SEED,
            "positions": [n_evaluated, n_evaluated + len(conditions)],
            "evaluated_positions": [0, n_evaluated],
            "indices_sha256": hashlib.sha256(conditions.numpy().astype("<i8").tobytes()).hexdigest(),
        },
        "task": spec.task,
        "budget": spec.budget.name,
        "sampler": spec.sampler.label,
        "seed": spec.seed,
        "config_hash": spec.config_hash,
        "data_fingerprint": data.fingerprint,
        "solver": spec.diffusion.solver,
        "steps": spec.diffusion.solver_steps,
    }
    with Lease(folder.path):  # one writer per run folder: refused while a launch trains it
        write_json(folder.path / GUIDANCE_FILE, record)
    print(f"chosen guidance {best:g} ({scorer.spec.name}); written to {folder.path / GUIDANCE_FILE}")
    return record
