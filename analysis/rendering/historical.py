"""The historical suites' own table (paper, Table "Historical index readout").

Per date: the reference close and the range of absolute percentage errors over that
date's outputs, per condition (recall, provided); then the mean, median and maximum APE
over all outputs of each condition. Importing this module registers the table for
``historical`` and for the changed-prompt, two-way follow-up ``historical_binary``. Each
suite is analysed from its own run folder and titled with its own name, so the two
protocols are never pooled.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.historical import ApeSummary, history_readouts
from analysis.statistics.summary import Analysis

from .json_numbers import number, register_numbers
from .markdown import Table, fmt
from .tables import main_table, register_tables, sensitivity_table, table_suffix, within5_table

__all__ = ["HISTORICAL_SUITES", "ape_range", "history_numbers", "history_tables"]

HISTORICAL_SUITES = ("historical", "historical_binary")


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{fmt(value)}%"


def ape_range(s: ApeSummary) -> str:
    """``3.11–4.96%``, or one value when both ends agree to two decimals (paper layout)."""
    if s.n == 0:
        return "n/a"
    lo, hi = fmt(s.min), fmt(s.max)
    return f"{lo}%" if lo == hi else f"{lo}–{hi}%"


def _count(s: ApeSummary) -> str:
    return f"{s.n} (+{s.n_failed} failed)" if s.n_failed else str(s.n)


def history_tables(a: Analysis) -> list[Table]:
    """Paper Table "Historical index readout", one table per decoder."""
    tables = []
    for r in history_readouts(a.run.outputs, a.design):
        labels = [condition_label(c) for c in r.conditions]
        header = ("Date", "Reference", *(f"{x} APE" for x in labels), *(f"n {x}" for x in labels))
        rows = [
            (d.date, d.reference, *map(ape_range, d.conditions), *map(_count, d.conditions))
            for d in r.dates
        ]
        rows.append(("Mean", "", *(_pct(s.mean) for s in r.overall), *map(_count, r.overall)))
        rows.append(("Median", "", *(_pct(s.median) for s in r.overall), *[""] * len(labels)))
        rows.append(("Maximum", "", *(_pct(s.max) for s in r.overall), *[""] * len(labels)))
        notes = [
            "APE = 100·|ŷ − y|/y per output. A date's range is min–max over its ok outputs "
            "(option orders × repeats, never collapsed); Mean, Median and Maximum are over "
            "all ok outputs of the condition. Failed outputs are shown beside n, never imputed.",
            "Above the reference: "
            + "; ".join(f"{x} {s.above} of {s.n}" for x, s in zip(labels, r.overall, strict=True))
            + " ok outputs (a direction on few dates, not evidence for a cause).",
            f"Suite {a.facts.suite} only: the historical protocols (ten-way, and the "
            "changed-prompt two-way follow-up) are separate suites and never pooled.",
            f"No interval: {a.bootstrap.refusal}."
            if a.bootstrap.refusal
            else "No interval: ranges, a median and a maximum, not means the family bootstrap "
            "resamples (the main table's MAPE carries one).",
        ]
        title = f"Historical index readout, {decoder_label(r.decoder, a.facts.suite)}"
        tables.append(Table(title + table_suffix(a), header, tuple(rows), tuple(notes), left=2))
    return tables


def _summary_dict(s: ApeSummary) -> dict[str, Any]:
    return {
        "n": s.n,
        "n_failed": s.n_failed,
        "min": number(s.min),
        "max": number(s.max),
        "mean": number(s.mean),
        "median": number(s.median),
        "above_reference": s.above,
    }


def history_numbers(a: Analysis) -> dict[str, Any]:
    """The numbers of :func:`history_tables` for ``analyze --json`` (APE in %)."""
    return {
        r.decoder: {
            "label": decoder_label(r.decoder, a.facts.suite),
            "dates": [
                {
                    "date": d.date,
                    "reference": d.reference,
                    "ape": {
                        c: _summary_dict(s) for c, s in zip(r.conditions, d.conditions, strict=True)
                    },
                }
                for d in r.dates
            ],
            "overall": {c: _summary_dict(s) for c, s in zip(r.conditions, r.overall, strict=True)},
        }
        for r in history_readouts(a.run.outputs, a.design)
    }


# The paper's table first; the generic ones add NMAE, rounds, the 5% share and the ordering
# gap. The generic by-date MAPE table is left out: the readout already has per-date errors.
for _suite in HISTORICAL_SUITES:
    register_tables(
        _suite,
        history_tables,
        # Three dates, three families: no interval; the value of each date instead.
        partial(main_table, title="Historical evaluation", date_values=True),
        partial(within5_table, date_values=True),
        sensitivity_table,
    )
    register_numbers(_suite, history=history_numbers)
