"""The exploratory suite's own tables (paper, Appendix "Exploratory Records").

MAPE per decoder on the integer and fraction questions and overall, laid out like the
paper's "Exploratory arithmetic MAPE (%)", and how many threshold query groups had
decreasing raw answers before projection (paper, "Numerical distributions need a separate
validation"). Importing this module registers both for the ``exploratory`` suite.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from analysis.loading.names import decoder_label, domain_label
from analysis.statistics.exploratory import threshold_decreases
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.summary import Analysis

from .json_numbers import number, register_numbers
from .markdown import Table, fmt, fmt_interval
from .tables import (
    bracket_note,
    domain_cell,
    main_table,
    paired_table,
    register_tables,
    sensitivity_table,
    standard_notes,
    table_suffix,
    within5_table,
)

__all__ = [
    "exploratory_numbers",
    "exploratory_tables",
    "threshold_numbers",
    "threshold_table",
]

SUITE = "exploratory"
_MAPE = STATISTICS.index("mape")


def exploratory_tables(a: Analysis) -> list[Table]:
    """Paper "Exploratory arithmetic MAPE (%)": MAPE [interval] per domain and overall, n."""
    m, b = a.metrics, a.bootstrap
    gaps = a.metrics.has_gaps
    tables = []
    for c, condition in enumerate(a.design.conditions):
        header = (
            "Decoder",
            *(domain_label(name) for name in a.design.domains),
            "Overall",
            "n ok/failed/missing" if gaps else "n",
        )
        rows = tuple(
            (
                decoder_label(decoder, a.facts.suite),
                *(domain_cell(a, d, c, k) for k in range(len(a.design.domains))),
                fmt_interval(m.point[_MAPE, d, c], b.lo[_MAPE, d, c], b.hi[_MAPE, d, c]),
                f"{m.n_ok[d, c]}/{m.n_failed[d, c]}/{m.n_missing[d, c]}"
                if gaps
                else str(m.n_ok[d, c]),
            )
            for d, decoder in enumerate(a.design.decoders)
        )
        notes = standard_notes(a, bootstrap=False)
        notes.append(
            "Domain columns average the ok outputs of that domain's questions; Overall "
            "averages all of the decoder's ok outputs. n counts outputs: every question × "
            "option order × repeat is one output (repeats are never collapsed)."
        )
        if {"parallel_thresholds", "threshold_cdf"} & set(a.design.decoders):
            notes.append(
                "Parallel thresholds ask x ≤ L, L+ε, …, U−2ε (15 comparisons on 16 values): "
                "the bins between them are right-closed, as in the paper's CDF appendix, and "
                "each holds one candidate; P(Y ≤ U−ε) = 1 is the fixed endpoint, not asked "
                '(docs/protocol.md, "Threshold positions").'
            )
        notes += bracket_note(
            a, f"{a.bootstrap.n_families} questions resampled with their option orders and repeats"
        )
        title = f"Exploratory {condition} MAPE (%)" + table_suffix(a)
        tables.append(Table(title, header, rows, tuple(notes)))
    return tables


def threshold_table(a: Analysis) -> list[Table]:
    """Per threshold decoder: query groups that decreased before projection, ``k of n``."""
    found = threshold_decreases(a.run.outputs, a.design.decoders)
    if not found:
        return []
    rows = tuple(
        (
            decoder_label(t.decoder, a.facts.suite),
            f"{t.decreased} of {t.groups}",
            fmt(100.0 * t.decreased / t.groups) if t.groups else "n/a",
        )
        for t in found
    )
    notes = [
        "A query group is one job (question × option order × repeat), whose threshold "
        "questions are asked together; it counts when some raw P(Y ≤ z) is below the answer "
        "at a smaller threshold, i.e. before the equal-weight isotonic projection.",
        "Repeats send identical requests, so a model may repeat the same answers: the "
        "groups are not independent observations, so no interval is given (a count).",
    ]
    if len(found) > 1:
        notes.append(
            "The threshold decoders ask the same comparisons and differ in the read-out, "
            "so their counts are not independent of each other either."
        )
    missing = [t for t in found if t.unrecorded]
    if missing:
        notes.append(
            "Not counted (no recorded flag, e.g. failed): "
            + ", ".join(
                f"{decoder_label(t.decoder, a.facts.suite)} {t.unrecorded}" for t in missing
            )
            + " job(s)."
        )
    title = "Threshold query groups that decreased before projection" + table_suffix(a)
    return [Table(title, ("Decoder", "Decreased", "Share (%)"), rows, tuple(notes))]


def exploratory_numbers(a: Analysis) -> dict[str, Any]:
    """The numbers of :func:`exploratory_tables` for ``analyze --json`` (MAPE in %)."""
    m, b = a.metrics, a.bootstrap
    return {
        condition: [
            {
                "decoder": decoder,
                "label": decoder_label(decoder, a.facts.suite),
                "mape_by_domain": {
                    name: number(m.mape_by_domain[d, c, k])
                    for k, name in enumerate(a.design.domains)
                },
                "mape": {
                    "value": number(m.point[_MAPE, d, c]),
                    "lo": number(b.lo[_MAPE, d, c]),
                    "hi": number(b.hi[_MAPE, d, c]),
                },
                "n_ok": int(m.n_ok[d, c]),
                "n_failed": int(m.n_failed[d, c]),
                "n_missing": int(m.n_missing[d, c]),
            }
            for d, decoder in enumerate(a.design.decoders)
        ]
        for c, condition in enumerate(a.design.conditions)
    }


def threshold_numbers(a: Analysis) -> dict[str, Any]:
    """The counts of :func:`threshold_table` for ``analyze --json``."""
    return {
        t.decoder: {
            "label": decoder_label(t.decoder, a.facts.suite),
            "decreased": t.decreased,
            "groups": t.groups,
            "unrecorded": t.unrecorded,
        }
        for t in threshold_decreases(a.run.outputs, a.design.decoders)
    }


# The paper's table comes first; the generic tables add NMAE, rounds and sensitivity. The
# generic by-domain table is left out: the exploratory table already has its columns.
register_tables(
    SUITE,
    exploratory_tables,
    threshold_table,
    partial(main_table, title="Exploratory evaluation"),
    within5_table,
    sensitivity_table,
    paired_table,
)
register_numbers(SUITE, exploratory_mape=exploratory_numbers, threshold_decreases=threshold_numbers)
