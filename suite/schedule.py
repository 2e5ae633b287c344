"""The deterministic stream of a run: per-step seeds, data order, learning rate, EMA and evaluation points.

Budgets and schedules are in processed examples (kimg, EDM's unit), so runs with other batch sizes or GPU
counts stay comparable. Every random draw of the step that starts at ``nimg`` processed examples comes from
a generator seeded by (seed, nimg): the global batch's data indices (position ``nimg`` in the stream of
per-epoch permutations of the training set), σ, ε, condition dropout and augmentation are drawn for the
*global* batch on every rank, and each rank keeps its slice. A resumed run therefore continues the same
stream without saving RNG states, and a 2-process run draws what a 1-process run with the doubled batch
draws.
"""

from __future__ import annotations

import functools
import math

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


def learning_rate(lr: float, nimg: int, rampup_kimg: float) -> float:
    """EDM's linear warm-up: lr·min(1, nimg/(rampup_kimg·1000))."""
    return lr * min(1.0, nimg / max(rampup_kimg * 1000, 1e-8))


def ema_beta(batch: int, nimg: int, halflife_kimg: float, rampup_ratio: float | None) -> float:
    """Per-step EMA decay for a half-life of ``halflife_kimg`` thousand images (EDM, Sec. C.2)."""
    halflife = halflife_kimg * 1000
    if rampup_ratio:
        halflife = min(halflife, nimg * rampup_ratio)
    return 0.5 ** (batch / max(halflife, 1e-8))


EVAL_SPACINGS = ("linear", "log")
LOG_SPAN = 100.0  # a log-spaced grid covers the last two decades of the run: from steps/100 to the end


def evaluation_points(total_nimg: int, batch: int, points: int, spacing: str = "linear") -> list[int]:
    """Processed-example counts (multiples of the batch) at which to evaluate; the last is the end.

    ``linear``: ``points`` evaluations evenly spaced, at steps ⌈S·k/P⌉, k = 1…P. ``log``: geometrically
    spaced over the last two decades, at steps ⌈S·100^((k−P)/(P−1))⌉, so that a crossing of a power-law
    curve anywhere from 1/100 of the run to its end falls between two points a constant ratio apart
    (100^(1/19) = 1.27 with 20 points); duplicates at small S merge."""
    if spacing not in EVAL_SPACINGS:
        raise ValueError(f"eval_spacing={spacing!r}: valid: {', '.join(EVAL_SPACINGS)}")
    steps = math.ceil(total_nimg / batch)
    if spacing == "log" and points > 1:
        at = (math.ceil(steps * LOG_SPAN ** ((k - points) / (points - 1))) for k in range(1, points + 1))
        return sorted({max(1, min(step, steps)) * batch for step in at})
    return sorted({math.ceil(steps * k / points) * batch for k in range(1, points + 1)})
