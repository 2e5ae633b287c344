"""Migrate run folders made before a task's budget sizes were one mapping (``sizes``, docs/tasks.md).

Before, a task config spelled per-size values four ways, and a run's resolved config carried all of them:
``networks`` (every size's preset), ``recipes`` (budget values per size, already merged into ``budget``),
``augment_by_size`` and ``solver_steps_by_size`` (their run's value already in ``augment_p`` and
``solver_steps``) and ``budget_size``. Now the resolved config holds the chosen preset as ``task.network``
and nothing of the other sizes. This script rewrites every ``config.yaml`` and ``comparison.json`` under
the given results folders to that layout: ``task.network`` = ``task.networks[budget.size]``, the other four
keys dropped; every other value is left as it is, so the run's numbers and settings read the same, and
``suite eval`` can build the run's network again.

The comparison and config hashes in folder names, ``run.json`` and the records are those the runs were made
under and are not rewritten (as for the earlier migration of the stand-in permission), so ``suite table``,
``suite plot`` and ``suite report`` group and print exactly as before. A migrated folder is not resumed or
extended by new launches: a new run of the same settings composes a config whose hash differs, and gets
its own folder. Usage: ``python scripts/migrate_sizes.py RESULTS [RESULTS ...]``; a folder already in the
new layout is left untouched.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

OLD_KEYS = ("networks", "recipes", "augment_by_size", "solver_steps_by_size", "budget_size")


def migrate_config(cfg: dict[str, Any]) -> bool:
    """Rewrite one resolved run config (or comparison config) in place; whether anything changed."""
    task = cfg.get("task", {})
    if not any(key in task for key in OLD_KEYS):
        return False
    size = cfg["budget"]["size"]
    presets = task.get("networks") or {}
    if size not in presets:
        raise ValueError(f"task {task.get('name')!r}: no network preset for budget size {size!r} to migrate")
    migrated = {key: value for key, value in task.items() if key not in OLD_KEYS}
    migrated["network"] = presets[size]
    cfg["task"] = migrated
    return True


def migrate(results: Path) -> list[Path]:
    """Every config.yaml and comparison.json under ``results`` rewritten; the paths changed."""
    changed = []
    for path in sorted(results.rglob("config.yaml")):
        cfg = yaml.safe_load(path.read_text())
        if isinstance(cfg, dict) and "task" in cfg and migrate_config(cfg):
            path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
            changed.append(path)
    for path in sorted(results.rglob("comparison.json")):
        cfg = json.loads(path.read_text())
        if migrate_config(cfg):
            path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
            changed.append(path)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders (holding runs/)")
    for results in parser.parse_args().results:
        for path in migrate(results):
            print(f"migrated {path}")


if __name__ == "__main__":
    main()
