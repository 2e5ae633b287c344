"""The deterministic random stream of a run: per-step seeds and the data order.

Every random draw of the step that starts at ``nimg`` processed examples comes from a generator seeded by
(seed, nimg): the global batch's data indices (position ``nimg`` in the stream of per-epoch permutations of
the training set), σ, ε, condition dropout and augmentation are drawn for the *global* batch on every rank,
and each rank keeps its slice. A resumed run therefore continues the same stream without saving RNG states,
and a 2-process run draws what a 1-process run with the doubled batch draws.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import Tensor


def step_seed(seed: int, nimg: int) -> int:
    """Seed of the step that starts at ``nimg`` processed examples."""
    return (seed * 1_000_003 + nimg) % (2**63 - 1)


def step_generator(seed: int, nimg: int, device: torch.device) -> torch.Generator:
    """The generator of the step that starts at ``nimg`` processed examples."""
    gen = torch.Generator(device=device)
    gen.manual_seed(step_seed(seed, nimg))
    return gen


def seeded_generator(*entropy: int) -> torch.Generator:
    """A CPU generator seeded by the tuple ``entropy`` through NumPy's ``SeedSequence`` (O'Neill's hash of
    the whole tuple, so tuples that differ in any entry give unrelated streams, whatever their sizes)."""
    state = np.random.SeedSequence(list(entropy)).generate_state(2, np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


@functools.lru_cache(maxsize=2)
def epoch_permutation(seed: int, n_data: int, epoch: int) -> Tensor:
    """The order of the data set in ``epoch`` (cached: a step reuses its epoch's permutation)."""
    return torch.randperm(n_data, generator=torch.Generator().manual_seed(seed * 7919 + epoch))


def batch_indices(seed: int, n_data: int, nimg: int, batch: int) -> Tensor:
    """Indices [nimg, nimg + batch) of the stream of per-epoch random permutations of the data set."""
    parts = []
    position, end = nimg, nimg + batch
    while position < end:
        epoch, offset = divmod(position, n_data)
        take = epoch_permutation(seed, n_data, epoch)[offset : offset + end - position]
        parts.append(take)
        position += take.numel()
    return torch.cat(parts)
