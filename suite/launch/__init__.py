"""Launching planned runs: the typed request a command line or a study file becomes, and the one dispatch
that prints, submits or trains them (``suite.launch.request``)."""
