"""Modality libraries of the benchmark's tasks: image, DNA and text data, formats and networks.

The core package ``suite`` never imports this package (``tests/test_layering.py`` checks it); the task
plugins in ``tasks/`` do. Metrics that need a modality library live beside it and are registered by the
task plugins that import them (``infonoise_modalities.text.mauve`` by ``tasks/owt.py``).
"""
