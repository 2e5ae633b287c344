"""One module per ``suite`` command (EDM2's script-per-command split): ``<name>.py`` for ``suite <name>``
(``plan_seeds.py`` for ``suite plan-seeds``), each with a one-line ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. ``suite.cli.COMMANDS`` lists them. A command module imports only argparse and light
helpers at its top, and its library code inside ``run``, so ``suite --help`` imports no torch.

The defaults and help texts more than one command uses live here (the exit statuses in ``suite.exits``)."""

from __future__ import annotations

DEFAULT_RESULTS = "results"
RUN_FOLDER_HELP = "a run folder (…/runs/<comparison>/<sampler>/seed<k>)"
TARGET_HELP = (
    "comma list of sampler labels whose best final quality is the time-to-target target "
    "(default: logu,cos,fm,edm, the paper's fixed baselines; the table also reports all fixed samplers)"
)
