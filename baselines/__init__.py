"""Baseline training-noise samplers, one per module, each registered by name in
``suite.noise.sampler.SAMPLERS``."""
