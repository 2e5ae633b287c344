"""The noise wing: training-noise densities π(σ) and what they are built from — the samplers' interface and
registry (``sampler``), adaptive samplers and InfoNoise, loss weights w(σ), tabulated densities, analytic data
with closed-form posterior means and their exact MMSE and entropy-rate profiles, and calibration. It imports
nothing from the run, launch or report wings."""
