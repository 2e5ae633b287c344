"""``suite report``: ``<results>/REPORT.md`` (or ``--out DIR``: ``DIR/REPORT.md``, its figures in
``DIR/figures``, the results folder only read): both tables, every figure and the commands behind each
record, of the user's runs (``suite.report.results.own_runs``, as ``suite table`` reads them; ``--all`` adds
the committed evidence sets). In the repository ``results/REPORT.md`` and ``results/figures/`` are ignored by
git, so the default outputs leave the tracked tree as it was.

The command that reproduces a run is reconstructed from what the run stored, nothing more: its resolved
``config.yaml`` is compared key by key with a freshly composed default config of the same task, sampler and
budget (``suite.config.compose_run``), and every key whose value differs becomes a ``key=value`` override
(``+key=value`` for a key the default lacks). ``results`` and ``seed`` are left out: the seed is set by
``--seeds`` (seeds 0…N−1; seed k lives in ``seed<k>/``) and the results folder by ``--results``. Since
records are tied to their config by ``config_hash``, re-running the command with the same code (the git SHA
of run.json) gives the same records; a run whose config no longer composes (a key was removed since) gets
its config's path instead of a command.

Rows that ``suite eval`` re-scored on another solver grid or step count (``suite.report.results``) are listed
on a line of their own under the run, labelled with that protocol, and the ``suite eval`` command that adds
them follows the ``suite run`` commands (``--kimg`` and ``--metric`` when it re-scored one point or one
metric). A done run whose records stop short (``suite.report.results``) is flagged "records incomplete" in the
tables' cells, in a list below the tables, and in its status in the records section, with the reason.
After the two tables comes the table of ``suite.report.statistics``: every final quality, paired difference
and time-to-target ratio with its 95% confidence interval over seeds, and a verdict per sampler.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from suite.config import compose_run, to_dict
from suite.outputs import claim, guarded_output
from suite.records import now, write_atomic
from suite.report.plots import discover_runs, evidence_comparisons, figure_stem, write_figures
from suite.report.profile import ProfileFn
from suite.report.rendering import incomplete_note, to_markdown
from suite.report.results import EMA_BESIDE, RunRecord, find_runs, own_runs, protocol_words
from suite.report.rows import TARGET_BASELINES, load_own, load_published, parse_targets, sampler_order
from suite.report.three_tables import render_tables

EXCLUDED_KEYS = ("results", "seed")


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested dict (lists are leaves): {"budget": {"kimg": 1}} → {"budget.kimg": 1}."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out |= flatten(value, f"{prefix}.{key}" if prefix else str(key))
    return out


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar: null, true/false, numbers, [lists], {dicts}, quoted strings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_./-]+", text) and text not in ("null", "true", "false"):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def config_overrides(cfg: dict[str, Any]) -> list[str]:
    """``key=value`` overrides that turn the default config of the run's task/sampler/budget into ``cfg``."""

    choice = (cfg["task"]["name"], cfg["sampler"]["name"], cfg["budget"]["name"])
    default = flatten(to_dict(compose_run(*choice)))
    overrides = []
    for key, value in flatten(cfg).items():
        if key in EXCLUDED_KEYS:
            continue
        if key not in default:
            overrides.append(f"+{key}={hydra_value(value)}")
        elif default[key] != value:
            overrides.append(f"{key}={hydra_value(value)}")
    return overrides


def reproduce_command(runs: list[RunRecord], results: str) -> str:
    """The ``suite run`` command that made ``runs`` (one sampler label of one comparison, any seeds)."""
    cfg = runs[0].config
    seeds = max(r.seed for r in runs) + 1
    parts = [
        "suite",
        "run",
        "--task",
        cfg["task"]["name"],
        "--sampler",
        cfg["sampler"]["name"],
        "--budget",
        cfg["budget"]["name"],
        "--seeds",
        str(seeds),
        "--results",
        results,
    ]
    return shlex.join(parts + config_overrides(cfg))


def _records_cell(rows: pd.DataFrame) -> str:
    """ "kimg: value" of every evaluation of one run."""
    if rows.empty:
        return "no records"
    return ", ".join(f"{k:g}: {v:.4g}" for k, v in zip(rows["kimg"], rows["value"], strict=True))


def eval_command(run_dir: Path, rows: pd.DataFrame, own: pd.DataFrame) -> str:
    """The ``suite eval`` command that re-scores a run's snapshots as ``rows`` (one protocol) were; ``own``
    are the run's own-protocol rows (its evaluation points and metrics)."""
    parts = ["suite", "eval", str(run_dir), "--grid", str(rows["grid"].iloc[0])]
    parts += ["--steps", str(int(rows["steps"].iloc[0]))]
    kimg, metrics = sorted(set(rows["kimg"])), sorted(set(rows["metric"]))
    if len(kimg) == 1 and len(set(own["kimg"])) > 1:
        parts += ["--kimg", f"{kimg[0]:g}"]
    if len(metrics) == 1 and len(set(own["metric"])) > 1:
        parts += ["--metric", metrics[0]]
    return shlex.join(parts)


def _provenance(runs: list[RunRecord]) -> str:
    """Code version, devices, torch version and data of a comparison's runs."""

    def values(key: str) -> str:
        found = sorted({str(r.info.get(key)) for r in runs if r.info.get(key) is not None})
        return ", ".join(found) or "unknown"

    torch = sorted({str(r.info.get("packages", {}).get("torch")) for r in runs if r.info.get("packages")})
    stand_in = " (stand-in)" if any(r.info.get("stand_in_data") for r in runs) else ""
    return (
        f"git {values('git_sha')} · device {values('device')} · torch {', '.join(torch) or 'unknown'} · "
        f"data: {values('data')}{stand_in}"
    )


def records_section(results: Path, records: pd.DataFrame, everything: bool = True) -> list[str]:
    """Per comparison: provenance, every run with its records, and the command per sampler label; the
    comparisons of committed evidence sets only with ``everything``."""
    lines = [
        "## Records and the commands that reproduce them",
        "",
        "Each command re-creates the runs of one sampler (seeds 0…N−1; seed k is the folder `seed<k>`). "
        "Overrides are the keys where the run's `config.yaml` differs from the default config.",
        "",
    ]
    incomplete = records.attrs.get("records_incomplete", {})
    left_out = {} if everything else evidence_comparisons(results)
    for folder, runs in discover_runs(results).items():
        if folder in left_out:
            continue
        origin = [p for p in folder.relative_to(results).parts[:-1] if p != "runs"]
        target = str(results.joinpath(*origin))
        lines += [f"### `{folder.relative_to(results)}`", "", _provenance(runs), ""]
        table = []
        rescored = []
        order = sampler_order([r.label for r in runs])
        for run in sorted(runs, key=lambda r: (order.index(r.label), r.seed)):
            mine = records[records["run_dir"] == str(run.path)].sort_values("kimg")
            status = run.info.get("status", "unknown")
            if str(run.path) in incomplete:
                status = f"{status}, records incomplete ({incomplete[str(run.path)]})"
            for protocol, rows in list(mine.groupby("protocol", sort=True)) or [("", mine)]:
                table.append(
                    {
                        "sampler": f"{run.label}{protocol_words(protocol)}" if protocol else run.label,
                        "seed": run.seed,
                        "status": status,
                        "metric": ", ".join(sorted(set(rows["metric"]))) or "–",
                        "records (kimg: value)": _records_cell(rows),
                        "run directory": str(run.path.relative_to(results)),
                    }
                )
                if protocol and not protocol.endswith(EMA_BESIDE):  # the training loop wrote those
                    rescored.append(eval_command(run.path, rows, mine[mine["protocol"] == ""]))
        lines += [to_markdown(pd.DataFrame(table)), "", "```bash"]
        for label in order:
            group = [r for r in runs if r.label == label]
            try:
                lines.append(reproduce_command(group, target))
            except (ValueError, KeyError) as err:
                where = group[0].path / "config.yaml"
                lines.append(f"# {label}: config no longer composes ({err}); see {where}")
        lines += [*rescored, "```", ""]
    return lines


def write_report(
    results: str | Path,
    budget: str | None = None,
    profile_fn: ProfileFn | None = None,
    targets: Sequence[str] = TARGET_BASELINES,
    out: str | Path | None = None,
    everything: bool = True,
) -> Path:
    """Write ``REPORT.md`` and the figures it links (under ``figures/``) to ``out`` (default ``results``;
    another folder leaves ``results`` untouched, so it may be read-only); returns its path. ``targets`` are
    the sampler labels whose best final quality is the first time-to-target target (the paper's fixed
    baselines). Without ``everything`` only the user's runs (``suite.report.rows.load_own``)."""
    results = Path(results)
    folder = Path(out) if out is not None else results
    records, _ = load_own([results], everything)
    published = load_published(results)
    drawn = write_figures(results, profile_fn, folder / "figures", evidence=everything)
    figures = [p for p in drawn if p.suffix == ".png"]
    n_runs = records["run_dir"].nunique()
    lines = [
        "# InfoNoise benchmark report",
        "",
        f"Written {now()} by `suite report --results {results}` from {n_runs} runs "
        f"({len(records)} evaluation rows). Rows from stand-in data or substitute metrics are labelled "
        "and never averaged with real ones; runs of different comparison hashes are separate rows; only "
        "finished runs enter the tables.",
        "",
        "## Tables",
        "",
        *(line for text in render_tables(records, "md", budget, published, targets) for line in (text, "")),
        incomplete_note(records),
        "## Figures",
        "",
    ]
    for stem in sorted(figure_stem(results, folder) for folder in discover_runs(results)):
        mine = sorted(p for p in figures if p.stem.startswith(f"{stem}_"))
        if mine:
            lines += [f"### {stem}", ""]
        for path in mine:
            png = path.relative_to(folder).as_posix()
            pdf = path.with_suffix(".pdf").relative_to(folder).as_posix()
            kind = path.stem[len(stem) + 1 :]
            lines += [f"![{kind}]({png})", "", f"{kind}: [PNG]({png}) · [PDF]({pdf})", ""]
    lines += records_section(results, records, everything)
    report = folder / "REPORT.md"
    claim(report)
    write_atomic(report, ("\n".join(lines) + "\n").encode())
    return report


def report_results(
    results: str,
    out: str | None = None,
    force: bool = False,
    target_samplers: str | None = None,
    budget: str | None = None,
    everything: bool = False,
) -> int:
    """``suite report``: write ``REPORT.md`` of the user's runs (every run with ``everything``) to ``out``
    (default ``results``; over a file suite did not write there only with ``force``), its time-to-target
    against ``target_samplers`` (a comma list)."""
    targets = parse_targets(target_samplers)
    if Path(results).is_file() or not find_runs(results):
        raise ValueError(
            f"no runs under {results}; give the folder `suite run --results` wrote, or run one first"
        )
    runs, left = own_runs(results, everything)
    if not runs:
        sets = ", ".join(map(str, left))
        raise ValueError(
            f"no runs of yours under {results} (left out: committed evidence {sets}; --all adds it)"
        )
    with guarded_output(out, force):
        written = write_report(results, budget, targets=targets, out=out, everything=everything)
    print(f"wrote {written}")
    return 0
