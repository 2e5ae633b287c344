"""The core names no modality: outside the modality packages (``infonoise_modalities/``), no code token of
``suite/`` names Inception, Sei, MNIST or CIFAR; docstrings, comments and other strings may.

Code tokens are those of Python's own ``tokenize``: names (identifiers and keywords) and operators, never
strings or comments. An identifier names a word when one of its parts does, the parts being split at
underscores, case changes and digits (``SEI_OUTPUTS``, ``InceptionV3``, ``cifar10``)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODALITY_WORDS = {"inception", "sei", "mnist", "cifar"}
PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def named_words(source: str) -> list[tuple[int, str]]:
    """(line, identifier) for each name token of ``source`` with a part in ``MODALITY_WORDS``."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.NAME:
            continue
        if {part.lower() for part in PART.findall(token.string)} & MODALITY_WORDS:
            found.append((token.start[0], token.string))
    return found


def test_the_scan_finds_modality_names_in_code_and_skips_strings_and_comments():
    source = (
        '"""Inception-v3 and Sei in a docstring."""\n'
        "SEI_OUTPUTS = 21_907  # Sei's outputs\n"
        "from x.inception import InceptionV3\n"
        'name = "sei-fid"\n'
        "cifar10 = load_cifar()\n"
        "seize = session = 1\n"
    )
    assert named_words(source) == [
        (2, "SEI_OUTPUTS"),
        (3, "inception"),
        (3, "InceptionV3"),
        (5, "cifar10"),
        (5, "load_cifar"),
    ]


def test_no_code_line_of_the_core_names_inception_sei_mnist_or_cifar():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / "suite").rglob("*.py"))
        for line, name in named_words(path.read_text())
    ]
    assert not found, "modality names in suite/'s code: " + "; ".join(found)
