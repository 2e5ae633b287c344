"""The run wing: one run from its typed spec to its records — assembly of task, network and sampler, the
training step, loop and record writers, state and checkpoints, evaluation with its grids and solvers,
provenance, distributed agreement and seeds. It builds on the noise wing and the shared floor only."""
