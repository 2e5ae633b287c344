"""The suite's tests in tiers: ``unit``, ``integration``, ``cluster`` and ``gpu`` (one folder each); their
helpers are the package ``tests.helpers``."""
