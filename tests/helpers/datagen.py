"""Small data sets written in the real on-disk formats, for tests that must not depend on downloads."""

from __future__ import annotations

from infonoise_modalities.image.idx import write_example_mnist as write_mnist_format

__all__ = ["write_mnist_format"]
