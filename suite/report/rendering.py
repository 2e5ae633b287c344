"""Text rendering of the tables: markdown, LaTeX and plain text, the captions and notes printed under them."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from suite.report.rows import TARGET_BASELINES, final_rows, finished, format_value


def to_markdown(table: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown table of string cells (``|`` escaped)."""

    def clean(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = [clean(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for values in table.itertuples(index=False):
        lines.append("| " + " | ".join(clean(v) for v in values) + " |")
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


_LATEX_SYMBOLS = {"±": r"$\pm$", "×": r"$\times$", "↓": r"$\downarrow$", "↑": r"$\uparrow$", "–": "--"}


def latex_cell(text: object) -> str:
    """LaTeX-escaped cell text; ``**x**`` becomes ``\\textbf{x}``."""
    out = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))
    for symbol, command in _LATEX_SYMBOLS.items():
        out = out.replace(symbol, command)
    return re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", out)


def to_latex(table: pd.DataFrame, caption: str) -> str:
    """A booktabs LaTeX table (pandas Styler) of escaped string cells."""
    cells = table.map(latex_cell).rename(columns=latex_cell)
    return cells.style.hide(axis="index").to_latex(
        hrules=True, caption=latex_cell(caption), column_format="l" * len(cells.columns)
    )


NO_ROWS = "no rows (no finished runs)"


NO_TARGET = "no rows (no comparison has a finished fixed sampler to set the target)"


COMPARISON_CAPTION = (
    "Final quality, mean ± std over seeds (best per row in bold); published values (InfoNoise, "
    "arXiv 2602.18647, as transcribed in results/paper/, whose README states their provenance) in "
    "parentheses. kg: Kingma & Gao's adaptive schedule with its 1/p importance correction (in "
    "expectation the objective of its EDM base prior, with lower variance); kg-uncorrected: the same "
    "histogram without the correction (the allocation moves to p·w). The paper does not say which KG "
    'it ran, so its KG value stands beside both (docs/kg.md). A budget marked "budget: suite choice" is '
    "not one the paper publishes numbers for (the paper's numbers are at its full budget, `paper`)"
)


def target_caption(targets: Sequence[str] = TARGET_BASELINES, declared: str | None = None) -> str:
    """The time-to-target caption, stating both targets and the speed-up's numerator and spread."""
    first = (
        f"Target (declared): {declared}'s final seed-mean quality, fixed in the study file before the runs"
        if declared is not None
        else f"Target ({', '.join(targets)}): the best final seed-mean quality among the paper's fixed "
        "baselines at their default settings"
    )
    return (
        f"Processed examples (kimg) until each sampler's seed-mean curve first reaches the target "
        f"(interpolated in log kimg × the metric's scale between evaluations). {first}; target (all fixed): "
        "the best among every fixed sampler that ran, including Laplace, Cauchy and swept labels such as "
        "edm[p_mean=…]; adaptive samplers (KG, InfoNoise) never set a target. InfoNoise speed-up = k_T / "
        "k_InfoNoise, where k_T is the target sampler's first crossing of its own final seed-mean value (at "
        "most its last evaluation) and k_InfoNoise InfoNoise's first crossing of the same value; in "
        "parentheses, mean ± std of that ratio over seed pairs (seed k of both samplers, against the target "
        "sampler's seed-k final value) with the number of pairs that reached it. All of it is read on the "
        "curves' protocol: a final point the budget scores another way (budget=paper: the best of three "
        "50k-sample FIDs after 10k-sample ones) is left out, so there the target is the last value on the "
        "curve, not the final value of the comparison table"
    )


def render(table: pd.DataFrame, fmt: str, caption: str, empty: str = NO_ROWS) -> str:
    """``table`` as Markdown (with a heading), LaTeX or CSV; ``empty`` says why a table has no rows."""
    if table.empty:
        return f"{'# ' if fmt == 'csv' else ''}{caption}: {empty}\n"
    if fmt == "md":
        return f"### {caption}\n\n{to_markdown(table)}\n"
    if fmt == "latex":
        return to_latex(table, caption)
    if fmt == "csv":
        return f"# {caption}\n{table.to_csv(index=False)}"
    raise ValueError(f"unknown format {fmt!r}; valid: md, latex, csv")


def incomplete_note(df: pd.DataFrame, fmt: str = "md") -> str:
    """The finished runs whose records are incomplete and why (``load_records``'s
    ``attrs["records_incomplete"]``, runs without a row included), one line each; '' when there are none.
    Lines are commented (``#``, ``%``) in CSV and LaTeX."""
    runs = df.attrs.get("records_incomplete", {})
    if not runs:
        return ""
    lines = [
        f"Records incomplete: {len(runs)} done run(s) whose records stop short; their cells are marked "
        "[records incomplete]:",
        *(f"- {run}: {why}" for run, why in sorted(runs.items())),
    ]
    prefix = {"csv": "# ", "latex": "% "}.get(fmt, "")
    return "".join(f"{prefix}{line}\n" for line in lines)


def floor_caption(df: pd.DataFrame, budget: str | None = None) -> str:
    """A sentence per (task, metric) whose final rows record a real-vs-real floor (Sei-FID): the metric's
    label, which names the layer the table shows, and the floor at that layer and at the other layer
    recorded beside it (the distance between two disjoint halves of the reference); "" when none does."""
    if df.empty or "extra" not in df:
        return ""
    final = final_rows(finished(df, budget))
    notes = []
    for (task, metric), part in final.groupby(["task", "metric"], sort=True):
        extras = [e for e in part["extra"] if isinstance(e, dict) and any(k.startswith("floor_") for k in e)]
        if not extras:
            continue
        layers = sorted({k.removeprefix("floor_") for e in extras for k in e if k.startswith("floor_")})
        floors = "; ".join(
            f"{layer} "
            + "/".join(sorted({format_value(e[f"floor_{layer}"]) for e in extras if f"floor_{layer}" in e}))
            for layer in layers
        )
        halves = "/".join(sorted({str(int(e["n_floor"])) for e in extras if "n_floor" in e}))
        label = part["metric_label"].iloc[-1]
        pair = f"{halves} vs {halves} reference examples"
        notes.append(f" {metric} ({task}): {label}; real-vs-real floor ({pair}) {floors}.")
    return "".join(notes)
