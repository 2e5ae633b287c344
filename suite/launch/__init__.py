"""The launch wing: planning apart from execution — planned runs (``runner``), the typed request a command
line or a study file becomes and the one dispatch that prints, submits or trains them (``request``), local and
packed execution, SLURM arrays, the preflight, study files and planned cost. It builds on the run wing."""
