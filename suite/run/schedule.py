"""The run's schedules in processed examples: learning-rate warm-up, EMA decay, evaluation points and the
points of best-validation selection.

Budgets and schedules are in processed examples (kimg, EDM's unit), so runs with other batch sizes or GPU
counts stay comparable. Plain arithmetic on counts (no torch), so the results readers and ``suite status``
that place evaluation points stay light; the random stream of a run is ``suite.stream``'s.
"""

from __future__ import annotations

import math


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


def selection_points(
    total_nimg: int, batch: int, examples: int, every_epochs: float, first_epoch: float
) -> list[int]:
    """Processed-example counts (multiples of the batch) at which best-validation selection scores the raw
    weights: after ``first_epoch`` passes over ``examples`` training examples and every ``every_epochs``
    after it, up to the run's end; each at the step that completes that pass (its count rounded up to a
    whole batch, the end at most)."""
    if examples < 1 or every_epochs <= 0 or first_epoch <= 0:
        raise ValueError(
            f"selection over {examples} training examples every {every_epochs} epochs from epoch "
            f"{first_epoch}: needs at least one example and positive epochs"
        )
    steps = math.ceil(total_nimg / batch)
    points, k = set(), 0
    while (epoch := first_epoch + k * every_epochs) * examples <= total_nimg * (1 + 1e-12):
        points.add(min(math.ceil(round(epoch * examples, 6) / batch), steps) * batch)
        k += 1
    return sorted(points)
