"""Training seeds as ``--seeds`` and a study's ``seeds:`` give them (no torch imported here).

Three forms, in the habit of EDM's ``--seeds 0-63`` (``generate.py``'s integer lists):

* a count ``N``: seeds 0 … N−1 (``3`` → 0, 1, 2; the suite's long-standing meaning of ``--seeds N``);
* an inclusive range ``A-B`` with A ≤ B: seeds A … B (``0-63``; ``5-5`` is seed 5 alone);
* a comma list of seeds and ranges ``0,2,5`` or ``0-3,8``: exactly those, in increasing order.

On a command line, Hydra's ``seed=`` override names seeds, never a count: ``seed=3`` is seed 3 alone
(Hydra's meaning: the seed of the run), ``seed=0,2`` and ``seed=0-3`` as ``--seeds`` reads them.

Seed k of every sampler lives in ``seed<k>/`` and uses the same data order and initialisation, so seeds
given twice are refused rather than run twice. A seed is at most ``MAX_SEED`` (2³¹ − 1, a seed every
generator takes), and one command or study names at most ``MAX_SEEDS`` of them (each is a run per sampler,
planned up front): the bounds are checked on the text, before any seed list is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SEEDS_HELP = "a count N (seeds 0..N-1), a range A-B (inclusive: 0-63) or a comma list (0,2,5 or 0-3,8)"
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
MAX_SEED = 2**31 - 1
MAX_SEEDS = 1000


def parse_seeds(value: int | str, what: str = "seeds") -> tuple[int, ...]:
    """The seeds ``value`` names (module docstring); ValueError naming ``what`` (the flag or key), the value
    and the valid forms."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be {SEEDS_HELP}; got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"{what} must be at least 1 as a count ({SEEDS_HELP}); got {value}")
        if value > MAX_SEEDS:
            raise ValueError(f"{what} {value} names {value} seeds; at most {MAX_SEEDS} may be given at once")
        return tuple(range(value))
    text = str(value).replace(" ", "")
    if len(text) > 10_000:
        raise ValueError(f"{what} is {len(text)} characters long; give {SEEDS_HELP}")
    huge = re.search(r"\d{11,}", text)
    if huge:
        raise ValueError(f"{what} {huge.group()[:12]}… is above the largest seed, {MAX_SEED}")
    if text.isdigit():
        return parse_seeds(int(text), what)
    bounds: list[tuple[int, int]] = []
    for part in text.split(","):
        match = _RANGE.fullmatch(part)
        if match is None or (match.group(2) is not None and int(match.group(2)) < int(match.group(1))):
            raise ValueError(f"{what} must be {SEEDS_HELP}; got {value!r} ({part!r} is none of these)")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last > MAX_SEED:
            raise ValueError(f"{what} {value!r}: seed {last} is above the largest seed, {MAX_SEED}")
        bounds.append((first, last))
    count = sum(last - first + 1 for first, last in bounds)
    if count > MAX_SEEDS:
        raise ValueError(f"{what} {value!r} names {count} seeds; at most {MAX_SEEDS} may be given at once")
    seeds = [seed for first, last in bounds for seed in range(first, last + 1)]
    if len(set(seeds)) != len(seeds):
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        raise ValueError(f"{what} {value!r} name seed(s) {', '.join(map(str, twice))} more than once")
    return tuple(sorted(seeds))


def describe_seeds(seeds: tuple[int, ...]) -> str:
    """ "0-2" for consecutive seeds, "0,2,5" otherwise."""
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def command_seeds(flag: str | None, overrides: Iterable[str]) -> tuple[tuple[int, ...], list[str]]:
    """The seeds of a command line, from ``--seeds`` (default: seed 0 alone) or ``seed=`` overrides (module
    docstring), and the other overrides; seeds given twice that differ are refused, naming both."""
    chosen, source, rest = None if flag is None else parse_seeds(flag, "--seeds"), f"--seeds {flag}", []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or key.lstrip("+") != "seed":
            rest.append(item)
            continue
        single = value.strip().isdigit()
        named = parse_seeds(f"{value}-{value}" if single else value, f"the override {item}")
        if chosen is not None and named != chosen:
            raise ValueError(
                f"the override {item} (seeds {describe_seeds(named)}) contradicts {source} (seeds "
                f"{describe_seeds(chosen)}); give the seeds once, with --seeds or seed="
            )
        chosen, source = named, f"the override {item}"
    return (0,) if chosen is None else chosen, rest
