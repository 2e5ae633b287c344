"""The first screen of ``suite table``: one compact block per task × budget × metric, the samplers as rows.

Each block's columns are the sampler, its seeds, the final quality with its 95% interval, the difference to
the time-to-target target with its interval (paired by seed), the processed examples (kimg) until the
sampler's seed-mean curve first reaches the target, the published value and the verdict. The cells are
read by column name from the frames that compute them: ``suite.report.comparisons.statistics_table``
(interval,
difference and verdict), ``suite.report.time_to_target.time_to_target`` (kimg) and
``suite.report.table.comparison_stats`` (published value); columns those frames add are ignored.

Where a comparison folder holds the null network's rows (``suite eval --null``: the run's network with raw
output F ≡ 0), each block ends with a line for it: its one value, with no interval, difference or verdict.

A fact shared by many cells is said once: every parenthesised remark inside a cell or a block title ("1 seed:
no interval", a published value's protocol gap, a stand-in data set's description) becomes a reference
``[k]`` to the k-th numbered note below the blocks, and the captions of the full tables (``suite table
--format md``) follow as further notes, each printed once. The blocks are drawn with ``rich`` at most
``WIDTH`` columns wide (the terminal's width when narrower), wrapping the verdict and the notes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

import pandas as pd

from suite.records import NULL_SAMPLER
from suite.report.comparisons import statistics_table
from suite.report.rows import finished, format_value, metric_of, null_values
from suite.report.table import comparison_stats
from suite.report.time_to_target import time_to_target

if TYPE_CHECKING:
    from rich.console import Console

WIDTH = 120
COLUMNS = (
    "sampler",
    "seeds",
    "final (95% CI)",
    "vs",
    "− target (95% CI)",
    "kimg to target",
    "published",
    "verdict",
)


@dataclass
class Notes:
    """Numbered notes, each text once: ``ref`` gives a text's ``[k]``, numbering new texts in order."""

    texts: list[str] = field(default_factory=list)

    def ref(self, text: str) -> str:
        text = " ".join(text.split())
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def split_remarks(text: str) -> tuple[str, list[str]]:
    """``text`` without its top-level parenthesised remarks, and the remarks (without their parentheses):
    "71.17 (1 seed: no interval)" → ("71.17", ["1 seed: no interval"]). Nested parentheses stay inside
    their remark; an unbalanced one is kept as text."""
    bare, remarks, depth, start = [], [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                remarks.append(text[start + 1 : i])
        elif depth == 0:
            bare.append(ch)
    if depth:
        bare.append(text[start:])
    return " ".join("".join(bare).split()), remarks


def with_refs(text: object, notes: Notes) -> str:
    """``text`` with each parenthesised remark replaced by its note reference: "71.17 [1]"."""
    bare, remarks = split_remarks(str(text))
    return " ".join([bare or "–", *(notes.ref(r) for r in remarks)]).strip()


def _title(label: str, budget: str, metric: str, target: str, notes: Notes) -> str:
    """ "bfashion (stand-in data [2]) · smoke · fid ↓ · target edm": a long remark of the row label keeps
    the words before its colon in the title and goes whole to a note; a short one stays as it is."""
    bare, remarks = split_remarks(label)
    for remark in remarks:
        head, colon, _ = remark.partition(":")
        bare += (
            f" ({remark})" if not colon and len(remark) <= 40 else f" ({head.strip()} {notes.ref(remark)})"
        )
    parts = [bare, budget, with_refs(metric, notes)]
    return " · ".join([*parts, f"target {target}"] if target and target != "–" else parts)


def _column(frame: pd.DataFrame, *starts: str) -> str:
    """The first column of ``frame`` whose name starts with one of ``starts``."""
    for start in starts:
        for name in frame.columns:
            if str(name).startswith(start):
                return str(name)
    raise KeyError(f"no column starting with {' or '.join(repr(s) for s in starts)} in {list(frame.columns)}")


VERDICT_WORDS = (
    (r"^target\b", "target"),
    (r"^baseline\b", "baseline"),
    (r"\bnot distinguishable from\b", "n.s."),
    (r"\bbetter than\b", "better"),
    (r"\bworse than\b", "worse"),
    (r"^constant:", "constant"),
)
TIME_WORDS = (
    (r"(\d+(?:\.\d+)?×) sooner", r"\1 sooner"),
    (r"takes (\d+(?:\.\d+)?×) longer", r"\1 longer"),
    (r"^time to .* not distinguishable", "time n.s."),
    (r"^time to .*: not tested", "time not tested"),
)


def short_verdict(verdict: str, sampler: str) -> str:
    """The statistics verdict in the words the block's columns leave to it: its judgement of the
    difference ("better", "worse", "n.s.": not distinguishable, "target") and of the time to the target's
    final value, or to the worse final of each pair ("2.00× sooner", "1.50× longer", "time n.s.", "time not
    tested": fewer than two pairs observed both crossings);
    a verdict in other words is kept, less the sampler's name at its start, its parenthesised remarks and
    its intervals."""
    clauses = [c.strip() for c in verdict.split(";")]
    words = [new for pattern, new in VERDICT_WORDS if re.search(pattern, clauses[0])][:1]
    if not words:
        text = verdict.removeprefix(f"{sampler} ")
        return split_remarks(re.sub(r",? \d+% CI \[[^\]]*\]", "", text))[0]
    for clause in clauses[1:]:
        for pattern, new in TIME_WORDS:
            found = re.search(pattern, clause)
            if found:
                words.append(found.expand(new))
                break
    return "; ".join(words)


def hoist_common_refs(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` without the note references that every row's final quality carries (with one seed each:
    "1 seed: no interval"), and those references, for the block's title."""
    refs = [re.findall(r"\[\d+\]", str(cell)) for cell in rows["final (95% CI)"] if cell]
    common = [ref for ref in refs[0] if all(ref in mine for mine in refs)] if refs else []
    if not common:
        return rows, []
    pattern = re.compile(" ?(" + "|".join(re.escape(ref) for ref in common) + ")")
    return rows.map(lambda cell: (pattern.sub("", str(cell)) or "–") if cell != "" else ""), common


@dataclass(frozen=True)
class Block:
    """One task × budget × metric: its title and one row of ``COLUMNS`` cells per sampler."""

    title: str
    rows: pd.DataFrame


def summary_blocks(
    df: pd.DataFrame,
    budget: str | None,
    targets: Sequence[str],
    published: pd.DataFrame,
    samplers: Iterable[str] | None = None,
    declared: str | None = None,
) -> tuple[list[Block], Notes, list[str]]:
    """The compact blocks of the finished runs in ``df`` (of ``budget`` when given), only the rows of
    ``samplers`` when given (the targets are still set by every sampler that ran), their notes, and the
    scales their comparisons were computed on (for ``suite.report.comparisons.statistics_caption``).

    With a ``declared`` target every sampler has one line; without one each sampler is compared with
    every finished baseline (Holm, ``suite.report.statistics``), one line per baseline under a ``vs`` column,
    the sampler's own cells written on its first line only."""
    notes = Notes()
    stats = statistics_table(df, budget, targets, declared)
    if stats.empty:
        return [], notes, []
    keys = ["row", "budget", "metric", "sampler"]
    kimg = time_to_target(df, budget, targets, declared)
    kimg = kimg.assign(metric=[metric_of(r) for _, r in kimg.iterrows()]) if not kimg.empty else kimg
    comp = comparison_stats(df, budget, published)
    nulls = null_values(finished(df, budget))
    null_of = {
        (r["row"], r["budget"], metric_of(r)): nulls[
            (r["task"], r["budget"], r["comparison_hash"], r["metric"])
        ]
        for _, r in comp.iterrows()
        if r["protocol"] == "" and (r["task"], r["budget"], r["comparison_hash"], r["metric"]) in nulls
    }
    comp = comp.assign(metric=[metric_of(r) for _, r in comp.iterrows()])
    result_of = kimg.set_index(keys)["result"].to_dict() if not kimg.empty else {}
    published_of = comp.set_index(keys)[["paper", "published_gap"]].to_dict("index")
    final, difference = _column(stats, "final"), _column(stats, "sampler − target", "difference")
    keep = None if samplers is None else set(samplers)
    blocks = []
    for (label, name, metric), part in stats.groupby(["task", "budget", "metric"], sort=False):
        lines = []
        several = "target" in part and part["target"].nunique() > 1
        for _, line in part.iterrows():
            sampler = str(line["sampler"])
            if keep is not None and sampler not in keep:
                continue
            again = bool(lines) and _sampler_of(lines) == sampler
            lone = several and str(line["seeds"]) == "1"  # nothing paired to show: one line, no baseline
            if again and lone:
                continue
            paper = published_of.get((label, name, metric, sampler), {})
            value, gap = paper.get("paper", float("nan")), paper.get("published_gap", "")
            shown = "–" if pd.isna(value) else format_value(float(value))
            if shown != "–" and gap:
                shown += f" {notes.ref('published protocol ' + gap)}"
            lines.append(
                {
                    "sampler": "" if again else sampler,
                    "seeds": "" if again else str(line["seeds"]),
                    "final (95% CI)": "" if again else with_refs(line[final], notes),
                    "vs": "–" if lone else str(line.get("target", "–")),
                    "− target (95% CI)": "–"
                    if lone
                    else with_refs(re.sub(r", \d+ seed pairs?$", "", line[difference]), notes),
                    "kimg to target": ""
                    if again
                    else with_refs(result_of.get((label, name, metric, sampler), "–"), notes),
                    "published": "" if again else shown,
                    "verdict": short_verdict(str(line["verdict"]), sampler),
                    "_sampler": sampler,
                }
            )
        if lines and (label, name, metric) in null_of:
            lines.append(
                {
                    "sampler": NULL_SAMPLER,
                    "seeds": "–",
                    "final (95% CI)": format_value(null_of[(label, name, metric)]),
                    "vs": "–",
                    "− target (95% CI)": "–",
                    "kimg to target": "–",
                    "published": "–",
                    "verdict": "no learning: D = c_skip·x (one evaluation)",
                    "_sampler": NULL_SAMPLER,
                }
            )
        if lines:
            target = "" if several else str(part["target"].iloc[0]) if "target" in part else ""
            columns = [c for c in COLUMNS if several or c != "vs"]
            rows, common = hoist_common_refs(pd.DataFrame(lines, columns=columns))
            for ref in common:  # said in the title: "1 seed: no interval; run ≥ 3 seeds" → "run ≥ 3 seeds"
                said = notes.texts[int(ref[1:-1]) - 1] + "; "
                rows["verdict"] = [v.removeprefix(said) for v in rows["verdict"]]
            title = " ".join([_title(str(label), str(name), str(metric), target, notes), *common])
            blocks.append(Block(title, rows))
    return blocks, notes, sorted(set(stats["scale"])) if "scale" in stats else []


def _sampler_of(lines: list[dict[str, str]]) -> str:
    """The sampler whose lines ``lines`` end with."""
    return lines[-1]["_sampler"]


def render_summary(
    blocks: Sequence[Block], notes: Sequence[str], footer: Sequence[str] = (), file: IO[str] | None = None
) -> None:
    """Print ``blocks`` as ``rich`` tables, then each line of ``footer``, then the numbered ``notes``; at
    most ``WIDTH`` columns (the terminal's width when narrower; colours only on a terminal)."""
    from rich.console import Console

    probe = Console(file=file)
    console = Console(
        file=file, width=min(probe.width, WIDTH) if probe.is_terminal else WIDTH, highlight=False
    )
    with console.capture() as captured:
        _print(console, blocks, notes, footer)
    print("\n".join(line.rstrip() for line in captured.get().splitlines()), file=file or sys.stdout)


def _print(console: Console, blocks: Sequence[Block], notes: Sequence[str], footer: Sequence[str]) -> None:
    from rich import box
    from rich.table import Table

    for block in blocks:
        table = Table(
            title=block.title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for name in block.rows.columns:
            table.add_column(str(name), no_wrap=name != "verdict", overflow="fold")
        for values in block.rows.itertuples(index=False):
            table.add_row(*(str(v) for v in values))
        console.print(table)
    for line in footer:
        console.print(line, markup=False)
    for number, text in enumerate(notes, start=1):
        console.print(f"[{number}] {text}", markup=False)
