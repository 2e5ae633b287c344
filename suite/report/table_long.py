"""The comparison table in tidy long form: one line per comparison row × sampler (``suite table --format
long-csv|json``), for pandas, R or a spreadsheet rather than for reading.

Each line is one task × budget × comparison hash × metric × data kind × origin × protocol (the rows of
``suite.report.table``'s comparison table) × sampler, with the protocol spelled out (solver ``grid``,
``steps``,
``nfe``, generated ``samples``, ``references`` and the size of the ``reference_split`` they were drawn
from; several values of one line joined by "/"), the number of ``seeds``, and over those seeds the final
value's ``mean``, sample standard deviation ``std`` (ddof = 1) and 95% t interval ``ci_low``/``ci_high``
(``suite.report.statistics.t_interval``: x̄ ± t_{0.975, n−1}·s/√n; empty for one seed). ``published`` is the
paper's value for the same task, sampler and metric (empty for stand-in data and substitute metrics),
``published_nfe`` its NFE, and ``published_gap`` says how our protocol differs from the published one
(empty when it follows it: only then are the two numbers comparable; ``suite.report.rows.published_gap``).
``records_incomplete`` counts the seeds whose records stop short (``suite.report.results``).

The CSV has one header line and nothing else (``pandas.read_csv`` reads it as is); the JSON is a list of
objects with the same keys, NaN written as null.
"""

from __future__ import annotations

import json

import pandas as pd

from suite.report.rows import ROW_KEYS, final_rows, finished, with_row_labels
from suite.report.statistics import t_interval
from suite.report.table import comparison_stats

LONG_COLUMNS = [
    "task",
    "row",
    *ROW_KEYS[1:],  # the comparison row's identity, as the tables group it
    "sampler",
    "grid",
    "steps",
    "nfe",
    "samples",
    "references",
    "reference_split",
    "seeds",
    "mean",
    "std",
    "ci_low",
    "ci_high",
    "records_incomplete",
    "published",
    "published_nfe",
    "published_gap",
]
LONG_FORMATS = ("long-csv", "json")


def _joined(values: pd.Series) -> str:
    """The distinct values of one line's runs, "/"-joined; integers without a decimal point."""
    distinct = sorted({float(v) for v in pd.to_numeric(values, errors="coerce").dropna()})
    return "/".join(str(int(v)) if v.is_integer() else str(v) for v in distinct)


def long_table(
    df: pd.DataFrame, budget: str | None = None, published: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One line per comparison row × sampler of the finished runs in ``df`` (``LONG_COLUMNS``)."""
    keys = ["row", *ROW_KEYS, "sampler"]
    stats = comparison_stats(df, budget, published)
    final = with_row_labels(final_rows(finished(df, budget)))
    if stats.empty or final.empty:
        return pd.DataFrame(columns=LONG_COLUMNS)
    lines = []
    for key, part in final.groupby(keys, sort=False, dropna=False):
        interval = t_interval(part["value"].to_numpy(dtype=float))
        lines.append(
            {
                **dict(zip(keys, key, strict=True)),
                "grid": "/".join(sorted(set(part["grid"].astype(str)))),
                "steps": _joined(part["steps"]),
                "samples": _joined(part["n_samples"]),
                "references": _joined(part["n_reference"]),
                "reference_split": _joined(part["reference_split"]),
                "ci_low": interval.low,
                "ci_high": interval.high,
            }
        )
    extra = pd.DataFrame(lines)
    merged = stats.merge(extra, on=keys, how="left")
    merged = merged.rename(
        columns={
            "n": "seeds",
            "incomplete": "records_incomplete",
            "paper": "published",
            "paper_nfe": "published_nfe",
        }
    )
    return merged[LONG_COLUMNS].reset_index(drop=True)


def render_long(table: pd.DataFrame, fmt: str) -> str:
    """``table`` as CSV (``long-csv``) or a JSON list of objects (``json``, NaN as null)."""
    if fmt == "long-csv":
        return table.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(table.to_json(orient="records")), indent=1) + "\n"
    raise ValueError(f"unknown long format {fmt!r}; valid: {', '.join(LONG_FORMATS)}")
