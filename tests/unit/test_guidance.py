"""Guidance conditions: the held-out conditions ``suite guidance`` sweeps on are disjoint from the ones every
evaluation scores and follow them in one permutation; guidance scales must be distinct finite numbers ≥ 0.
The sweep on a real run is in ``tests/integration/test_guidance.py``."""

from __future__ import annotations

import pytest
import torch

from suite.run.evaluation import CONDITION_SEED, fixed_choice
from suite.run.guidance import held_out_conditions, parse_scales


def test_the_held_out_conditions_are_disjoint_from_every_evaluation_and_follow_them_in_one_permutation():
    held = held_out_conditions(100, 30, 20)
    evaluated = fixed_choice(100, 30, CONDITION_SEED)  # the conditions of an evaluation of 30 samples
    assert len(held) == 20 and not set(held.tolist()) & set(evaluated.tolist())
    assert torch.equal(torch.cat([evaluated, held]), fixed_choice(100, 50, CONDITION_SEED))
    with pytest.raises(ValueError, match=r"split holds 40: pass --samples <= 10"):
        held_out_conditions(40, 30, 20)


def test_scales_must_be_distinct_finite_numbers_at_least_0():
    assert parse_scales("1,1.5,2") == [1.0, 1.5, 2.0]
    for bad in ("1,x", "1,1", "-1,2", "nan", ""):
        with pytest.raises(ValueError, match="--scales"):
            parse_scales(bad)
