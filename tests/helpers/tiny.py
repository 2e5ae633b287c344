"""Overrides for a tiny bfashion run: 0.384 kimg at batch 16 (24 steps), a checkpoint every 0.032 kimg, two
evaluations of 16 samples against 32 references in the features of the test extractor ``rand-test`` (a
process imports ``tests.helpers.fid_extractor``, or names it in ``SUITE_PLUGINS``, before it evaluates),
an 8-channel network and 4 solver steps."""

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
