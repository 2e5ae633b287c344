"""Overrides for a tiny bfashion run: 0.384 kimg at batch 16 (24 steps), a checkpoint every 0.032 kimg, two
evaluations of 16 samples against 32 references in the features of the test extractor ``rand-test`` (a
process imports ``tests.helpers.fid_extractor``, or names it in ``SUITE_PLUGINS``, before it evaluates),
an 8-channel network and 4 solver steps; and ``TINY_RING2D`` for a ring2d run of 4 steps of 16 points with
a checkpoint every 2 steps and two evaluations of 32 samples, with ``untimed`` to compare its records without
the fields that time them."""

TINY = [
    "budget.kimg=0.384",
    "budget.batch=16",
    "budget.tick_kimg=0.064",
    "budget.checkpoint_kimg=0.032",
    "budget.eval_points=2",
    "budget.eval.samples=16",
    "budget.eval.reference=32",
    "budget.eval.batch_size=16",
    "task.metrics.fid.feature_extractor=rand-test",
    "task.network.model_channels=8",
    "budget.lr_rampup_kimg=0.1",
    "budget.adaptive.warmup_steps=4",
    "budget.adaptive.refresh_every=2",
    "task.solver_steps=4",
]

TINY_RING2D = [
    "device=cpu",
    "task.train_size=512",
    "task.reference_size=64",
    "budget.batch=16",
    "budget.kimg=0.064",
    "budget.tick_kimg=0.032",
    "budget.checkpoint_kimg=0.032",
    "budget.eval_points=2",
    "budget.eval.samples=32",
    "budget.eval.reference=32",
    "budget.eval.batch_size=32",
    "task.solver_steps=2",
    "task.metrics.kl-bound.samples=8192",
    "task.metrics.kl-bound.nodes=4",
    "task.metrics.sliced-w2.projections=8",
]
TIMINGS = ("sec_per_kimg", "wall_time", "eval_seconds")


def untimed(rows: list[dict]) -> list[dict]:
    """``rows`` without the fields that time them (they differ between two runs of the same work)."""
    return [{k: v for k, v in row.items() if k not in TIMINGS} for row in rows]
