"""Command-line values checked before torch is imported: task, sampler and budget names against the config
folders (``suite.config.group_options``: the suite's ``suite/conf`` and the plugins' config folders, read
without importing a plugin's code), with a did-you-mean from ``difflib``'s closest matches, and numbers
against their ranges. This module imports nothing of the suite.

``unknown_name`` words the error for a bad name, naming the value, the closest valid names and every valid
one, e.g. ``unknown task 'cifar'; did you mean dcifar, cifar10? valid tasks: bfashion, bmnist, …``
(``suite.config.check_names`` raises it for a command's names; ``suite.cli`` prints it as one ``error:``
line, exit status 2); ``suite.launch.plan`` and ``suite.config`` word their other name checks the same way.
A task or sampler that has a config but no registered plugin is still refused later, by
``suite.launch.plan``, once the plugins are imported. The number checks are ``argparse`` types: a bad value
ends the parse with argparse's one-line usage error (exit status 2).

A name that becomes part of a path (a task, a budget, a sampler label, a study) is one path component of
the alphabet ``SAFE_NAME``: letters, digits and ``_ . , = + - [ ]`` (a sampler label spells its changed
parameters, ``edm[p_mean=0.0]``), not starting with a dot, so no value of a config or study can name a
parent folder, an absolute path or a hidden file (``path_name``).
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
from collections.abc import Sequence
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent / "conf"
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,=+\-\[\]]{0,199}")


def builtin_names(group: str) -> str:
    """The suite's own configs of ``group`` (``suite/conf/<group>/*.yaml``; plugins' are not imported for
    ``--help``), comma-joined."""
    return ", ".join(sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml")))


def did_you_mean(name: str, options: Sequence[str]) -> str:
    """ "did you mean cifar10? " with up to three of ``options`` closest to ``name`` ("" when none is)."""
    close = difflib.get_close_matches(name, list(options), n=3, cutoff=0.6)
    return f"did you mean {', '.join(close)}? " if close else ""


def unknown_name(group: str, name: str, options: Sequence[str], extra: str = "") -> str:
    """ "unknown task 'cifar'; did you mean cifar10? valid tasks: …" (``extra`` after the list)."""
    return (
        f"unknown {group} {name!r}; {did_you_mean(name, options)}valid {group}s: {', '.join(options)}{extra}"
    )


def positive_int(text: str) -> int:
    """An integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def positive_number(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {value:g}")
    return value


def probability(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {value}")
    return value


def path_name(what: str, name: str) -> str:
    """``name`` when it may be one component of a path (``SAFE_NAME``); else ValueError naming ``what``."""
    if not SAFE_NAME.fullmatch(name):
        raise ValueError(
            f"{what} {name!r} cannot name a folder: use 1-200 letters, digits and _ . , = + - [ ], not "
            "starting with a dot"
        )
    return name
