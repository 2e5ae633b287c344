"""``suite table``: by default the compact blocks of ``suite.report.summary`` (one per task × budget × metric,
the samplers as rows), then what each budget's numbers cannot show (its config's ``note``, e.g. that demo
and smoke cannot rank samplers), then numbered notes of a sentence each: those the cells point to and a
one-sentence legend (``--format md`` defines everything in full), of the user's own runs: those
of the results folder that lie in no committed evidence set (``suite.report.results.own_runs``);
``--all`` adds those sets, and naming folders (``suite table results/cpu-smoke``) reads them as they are.
``--format md|latex|csv`` prints the full tables instead: the comparison and time-to-target tables
(``suite.report.table``, ``suite.report.time_to_target``), the confidence intervals and verdicts of
``suite.report.statistics``, the runs whose records stop short, and last what each budget's numbers can and
cannot show (its config's ``note``).
``--format long-csv|json`` prints the tidy long table of ``suite.report.table_long``, alone on stdout (the
note on incomplete records goes to stderr), so that ``pandas.read_csv`` reads it."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pandas as pd

from suite.config import group_options
from suite.names import unknown_name
from suite.report.rendering import floor_caption, incomplete_note
from suite.report.results import RunRecord
from suite.report.rows import finished, load_own, load_published, parse_targets
from suite.report.summary import render_summary, summary_blocks
from suite.report.table import guidance_note
from suite.report.table_long import LONG_FORMATS, long_table, render_long
from suite.report.three_tables import render_tables

LEGEND = (
    "final: the seed mean with its 95% interval; − target: the difference to the target sampler, paired by "
    "seed; kimg to target: processed examples until the seed-mean curve first reaches the target's final "
    "value; published: InfoNoise's (arXiv 2602.18647) as transcribed in results/paper/; `suite table "
    "--format md` defines every column, target and verdict in full."
)


def print_tables(
    results: str,
    folders: list[str] | None = None,
    fmt: str = "text",
    task: str | None = None,
    sampler: str | None = None,
    budget: str | None = None,
    everything: bool = False,
    target_samplers: str | None = None,
    study: str | None = None,
) -> int:
    """``suite table``: the compact blocks (``fmt`` text, the default) or the full tables of the records
    under ``results`` (or of the ``folders``), filtered by ``task``, ``sampler`` (a comma list) and
    ``budget``; committed evidence sets only with ``everything`` or named; only the grid of the ``study``
    file when given. ``target_samplers`` (a comma list) replaces the paper's baselines as the first target.
    """
    targets = parse_targets(target_samplers)
    if budget is not None:
        check_choice(budget, group_options("budget"), "budget")
    folders = list(folders or [results])
    df, left_out = load_own(folders, everything)
    ok = 1 if df.attrs["damaged"] else 0  # a damaged run.json (reported when read) is left out, and fails
    declared = None
    if study:
        from suite.launch.study import load_study

        declared = load_study(study).target

        if fmt in LONG_FORMATS:  # the study's header and missing runs go to stderr, the table alone to stdout
            with contextlib.redirect_stdout(sys.stderr):
                df = restrict_to_study(df, study, results, budget, "csv")
        else:
            df = restrict_to_study(df, study, results, budget, "md" if fmt == "text" else fmt)
    if df.empty:
        where = ", ".join(folders) + (f" (left out: {left_out}; --all adds them)" if left_out else "")
        print(f"error: no records under {where}", file=sys.stderr)
        print(incomplete_note(df, fmt), end="", file=sys.stderr)
        return 1
    if task is not None:
        check_choice(task, sorted(set(df["task"].dropna())), "task")
        df = df[df["task"] == task]
    samplers = None if sampler is None else [s.strip() for s in sampler.split(",") if s.strip()]
    if samplers is not None:
        for label in samplers:
            check_choice(label, sorted(set(df["sampler"].dropna())), "sampler")
    if fmt == "text":
        published = load_published(folders[0])
        blocks, notes, scales = summary_blocks(df, budget, targets, published, samplers, declared)
        if not blocks:
            print(f"error: no finished run under {', '.join(folders)} in these filters", file=sys.stderr)
            return 1
        captions = [
            LEGEND,
            sentence(guidance_note(df, budget).removeprefix("; ")),
            floor_caption(df, budget).strip(),
            *incomplete_note(df).splitlines(),
        ]
        for caption in filter(None, captions):
            notes.ref(caption)
        footer = [
            *budget_notes(df, budget, "text").splitlines(),
            *([f"Left out: committed evidence {left_out}; `suite table --all` adds it."] if left_out else []),
        ]
        render_summary(blocks, notes.texts, footer)
        return ok
    if samplers is not None:
        df = df[df["sampler"].isin(samplers)]
    if fmt in LONG_FORMATS:
        print(render_long(long_table(df, budget, load_published(results)), fmt), end="")
        print(incomplete_note(df, "csv"), end="", file=sys.stderr)
        return ok
    for text in render_tables(df, fmt, budget, load_published(results), targets, declared):
        print(text)
    print(incomplete_note(df, fmt), end="")
    print(budget_notes(df, budget, fmt), end="")
    return ok


def sentence(text: str) -> str:
    """``text`` as a sentence: its first letter capitalised, a full stop at the end ("" stays "")."""
    text = text.strip()
    return f"{text[:1].upper()}{text[1:]}{'' if text.endswith('.') else '.'}" if text else ""


def check_choice(value: str, valid: list[str], what: str) -> None:
    """Refuse ``value`` unless it is one of ``valid``, in one line naming the valid choices."""
    if value not in valid:
        raise ValueError(unknown_name(what, value, valid))


def budget_notes(df: pd.DataFrame, budget: str | None = None, fmt: str = "md") -> str:
    """What the tabulated numbers can and cannot show: the ``note`` of each budget config the runs ran with
    (read from one run's ``config.yaml`` per comparison folder), one line per budget that has one, only
    ``budget`` where given; '' when none has a note. Lines are commented (``#``, ``%``) in CSV and LaTeX."""
    rows = df if budget is None else df[df["budget"] == budget]
    notes: dict[str, str] = {}
    for run_dir in rows.groupby(rows["run_dir"].map(lambda d: str(Path(d).parent.parent)))["run_dir"].first():
        config = RunRecord(Path(run_dir), "").config.get("budget") or {}
        if config.get("note"):
            notes.setdefault(str(config.get("name")), " ".join(str(config["note"]).split()))
    prefix = {"csv": "# ", "latex": "% "}.get(fmt, "")
    return "".join(f"{prefix}Budget {name} {note}\n" for name, note in sorted(notes.items()))


COMMENT = {"md": "", "latex": "% ", "csv": "# "}


def restrict_to_study(
    df: pd.DataFrame, path: str | Path, results: str | Path, budget: str | None = None, fmt: str = "md"
) -> pd.DataFrame:
    """The rows of ``df`` (``suite.report.results.records_frame`` of ``results``) that belong to the study's
    run folders; prints the study and the grid's runs without a finished record as missing (as comment lines
    in the LaTeX and CSV formats)."""
    from suite.launch.study import describe_study, grid_runs, load_study, plan_study

    study = load_study(path)
    if budget is not None and budget != study.budget:
        raise ValueError(
            f"--budget {budget} with --study {path}, whose budget is {study.budget}; drop --budget"
        )
    runs = grid_runs(plan_study(study, results))
    planned = {str(run.run_dir.resolve()): run for run in runs}
    if df.empty:  # no records at all: every run of the grid is missing
        mine, present = df, set()
    else:
        mine = df[df["run_dir"].map(lambda folder: str(Path(folder).resolve()) in planned)]
        present = {str(Path(folder).resolve()) for folder in finished(mine)["run_dir"]}
    missing = [run for key, run in planned.items() if key not in present]
    lines = [
        *describe_study(study).splitlines(),
        f"{len(runs) - len(missing)} of {len(runs)} run(s) in the tables; {len(missing)} missing"
        + (":" if missing else ""),
        *(f"  missing {run.label:<40} ({run.status}) {run.run_dir}" for run in missing),
    ]
    print("\n".join(COMMENT[fmt] + line for line in lines) + "\n")
    return mine
