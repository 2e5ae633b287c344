"""``suite list``: every task, sampler and budget, plugins' included."""

from __future__ import annotations

import argparse

HELP = "every task, sampler and budget"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    from suite.config import group_options
    from suite.noise.sampler import SAMPLERS
    from suite.registry import description
    from suite.task import TASKS

    tasks, samplers = list(TASKS), list(SAMPLERS)  # every plugin imported before the first line is printed
    print("tasks:")
    for name, cls in tasks:
        configured = "" if name in group_options("task") else "  (no config)"
        print(f"  {name:<16} {cls.modality:<9} {description(cls)}{configured}")
    print("samplers:")
    for name, cls in samplers:
        kind = "adaptive" if cls.adaptive else "fixed"
        print(f"  {name:<16} {kind:<9} {description(cls)}")
    print("budgets:")
    for name in group_options("budget"):
        print(f"  {name}")
    return 0
