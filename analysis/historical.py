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
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .markdown import Table, fmt
from .names import condition_label, decoder_label
from .outputs import Outputs
from .run import Design
from .summary import Analysis, number, register_numbers
from .tables import main_table, register_tables, sensitivity_table, table_suffix, within5_table

__all__ = [
    "HISTORICAL_SUITES",
    "ApeSummary",
    "HistoryDate",
    "HistoryReadout",
    "ape_range",
    "history_numbers",
    "history_readouts",
    "history_tables",
]

HISTORICAL_SUITES = ("historical", "historical_binary")


@dataclass(frozen=True)
class ApeSummary:
    """APE (%) over the ok outputs of one condition (one date, or all dates); NaN if none."""

    n: int  # ok outputs with a defined APE
    n_failed: int
    min: float
    max: float
    mean: float
    median: float
    above: int  # ok outputs whose value is above the reference (the paper notes direction)


@dataclass(frozen=True)
class HistoryDate:
    """One date's reference close and its APE summary per condition."""

    date: str
    reference: str
    conditions: tuple[ApeSummary, ...]  # in HistoryReadout.conditions order


@dataclass(frozen=True)
class HistoryReadout:
    """The table of one decoder: a row per date and the summary over all its outputs."""

    decoder: str
    conditions: tuple[str, ...]
    dates: tuple[HistoryDate, ...]
    overall: tuple[ApeSummary, ...]


def _summary(outputs: Outputs, rows: np.ndarray) -> ApeSummary:
    ok = rows[outputs.ok[rows]]
    ape = outputs.ape[ok]
    defined = np.isfinite(ape)  # APE is undefined at a zero target (never a close)
    ape, ok = ape[defined], ok[defined]
    n_failed = int(len(rows) - np.count_nonzero(outputs.ok[rows]))
    if not len(ape):
        return ApeSummary(0, n_failed, math.nan, math.nan, math.nan, math.nan, 0)
    return ApeSummary(
        n=len(ape),
        n_failed=n_failed,
        min=float(ape.min()),
        max=float(ape.max()),
        mean=float(ape.mean()),
        median=float(np.median(ape)),
        above=int(np.count_nonzero(outputs.value[ok] > outputs.target[ok])),
    )


def history_readouts(outputs: Outputs, design: Design) -> tuple[HistoryReadout, ...]:
    """One readout per decoder with outputs; dates are the run's domains.

    Every output is one unit (dates × conditions × orders × repeats); repeats are never
    collapsed. Dates sort by name, which for ISO dates is chronological.
    """
    readouts = []
    for decoder in design.decoders:
        if decoder not in outputs.decoder_names:
            continue
        mine = outputs.decoder == outputs.decoder_names.index(decoder)
        by_condition = [
            mine & (outputs.condition == outputs.condition_names.index(c))
            if c in outputs.condition_names
            else np.zeros_like(mine)
            for c in design.conditions
        ]
        dates = []
        for date in sorted(outputs.domain_names):
            on_date = outputs.domain == outputs.domain_names.index(date)
            rows = np.flatnonzero(mine & on_date)
            if not len(rows):
                continue
            # One close per date; should a log ever disagree, show every value, not one.
            references = dict.fromkeys(outputs.target_text[i] for i in rows)
            summaries = tuple(_summary(outputs, np.flatnonzero(m & on_date)) for m in by_condition)
            dates.append(HistoryDate(date, " / ".join(references), summaries))
        overall = tuple(_summary(outputs, np.flatnonzero(m)) for m in by_condition)
        readouts.append(HistoryReadout(decoder, design.conditions, tuple(dates), overall))
    return tuple(readouts)


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
        partial(main_table, title="Historical evaluation"),
        within5_table,
        sensitivity_table,
    )
    register_numbers(_suite, history=history_numbers)
