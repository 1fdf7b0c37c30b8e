"""Markdown tables and the JSON object for ``numericjev diff``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.statistics.diff import RunDiff
from analysis.statistics.facts import RunFacts
from analysis.statistics.metrics import STATISTICS

from .json_numbers import banners_to_list, number
from .markdown import Table, fmt, fmt_interval, warning_lines
from .probability_diff import probability_diff_dict, probability_diff_tables

__all__ = ["diff_markdown", "diff_tables", "diff_title", "diff_to_dict"]

_MAPE, _NMAE = STATISTICS.index("mape"), STATISTICS.index("nmae")
_CRPS, _LOG = STATISTICS.index("crps"), STATISTICS.index("logscore")


def _mark(d: RunDiff) -> str:
    notices: dict[str, list[str]] = {}
    for side, f in (("A", d.facts_a), ("B", d.facts_b)):
        if f.notice:
            notices.setdefault(f.notice, []).append(side)
    return "".join(f" — {notice} ({' and '.join(sides)})" for notice, sides in notices.items())


def diff_title(d: RunDiff) -> str:
    """``B vs A`` heading naming both runs, their models and the suite."""
    a, b = d.facts_a, d.facts_b
    return (
        f"Diff B − A: {b.run_id} (model {b.model}) vs {a.run_id} (model {a.model}) · "
        f"suite {a.suite}{_mark(d)}"
    )


def _served(f: RunFacts) -> str:
    return ", ".join(f"{name} ×{n}" for name, n in f.served_models) or "none reported"


def _unpaired_table(d: RunDiff) -> list[Table]:
    """Each run's means over its own ok outputs, when those are not all common units."""
    if not d.n_status_changed.any():
        return []
    suite = d.facts_a.suite
    rows = []
    for i, decoder in enumerate(d.design.decoders):
        for c, condition in enumerate(d.design.conditions):
            rows.append(
                (
                    decoder_label(decoder, suite),
                    condition_label(condition),
                    *(
                        fmt(x[s, i, c])
                        for s in (_MAPE, _NMAE)
                        for x in (d.unpaired_a, d.unpaired_b)
                    ),
                    str(int(d.n_own_a[i, c])),
                    str(int(d.n_own_b[i, c])),
                )
            )
    header = (
        "Decoder",
        "Condition",
        "MAPE A",
        "MAPE B",
        "NMAE A",
        "NMAE B",
        "n ok A",
        "n ok B",
    )
    notes = [
        "Unpaired: each run averaged over its own ok outputs, so A and B cover different "
        "outputs wherever a status changed. Shown for reference only; compare the paired "
        "table above, never these columns with each other.",
        "No interval: reference only; the paired table above carries the intervals.",
    ]
    title = f"Unpaired means, each run over its own ok outputs{_mark(d)}"
    return [Table(title, header, tuple(rows), tuple(notes), left=2)]


def diff_tables(d: RunDiff) -> list[Table]:
    """Paired metric changes per decoder × condition, the unpaired means when the runs cover
    different outputs, the largest output changes, and the two runs."""
    rows = []
    for i, decoder in enumerate(d.design.decoders):
        for c, condition in enumerate(d.design.conditions):
            row = [decoder_label(decoder, d.facts_a.suite), condition_label(condition)]
            row.append(str(int(d.n_compared[i, c])))
            for s in (_MAPE, _NMAE):
                row += [
                    fmt(d.point_a[s, i, c]),
                    fmt(d.point_b[s, i, c]),
                    fmt_interval(d.delta[s, i, c], d.delta_lo[s, i, c], d.delta_hi[s, i, c]),
                ]
            row.append(str(d.n_changed[i, c]))
            row.append(str(d.n_status_changed[i, c]))
            rows.append(tuple(row))
    header = (
        "Decoder",
        "Condition",
        "n",
        "MAPE A",
        "MAPE B",
        "ΔMAPE",
        "NMAE A",
        "NMAE B",
        "ΔNMAE",
        "Changed",
        "Status changed",
    )
    notes = [
        "Paired: n counts the outputs (job, decoder) ok in both runs; MAPE, NMAE and Δ are "
        "over those n outputs only, in both runs. MAPE and NMAE in %; Δ = B − A in "
        "percentage points (negative: B is better).",
        "Changed: of the n, outputs whose decoded value differs. Status changed: ok in one "
        "run, failed or absent in the other (left out of both sides).",
    ]
    if d.refusal is not None:
        notes.append(f"No brackets: {d.refusal}.")
    elif d.n_boot > 0:
        notes.append(
            f"Brackets: {d.level:.0%} intervals of compare's verdict test (a cluster-robust t "
            f"over the {d.n_families} families; the differences it does not reject), each "
            "side over the common outputs only."
        )
    title = f"Changes per decoder and condition, paired (B − A){_mark(d)}"
    tables = [Table(title, header, tuple(rows), tuple(notes), left=2), *_unpaired_table(d)]
    top_rows = tuple(
        (
            o.job,
            decoder_label(o.decoder, d.facts_a.suite),
            domain_label(o.domain),
            o.target,
            o.value_a,
            o.value_b,
            fmt(o.ape_a),
            fmt(o.ape_b),
            fmt(o.delta_ape),
        )
        for o in d.top
    )
    if top_rows:
        tables.append(
            Table(
                f"Largest changes (top {len(top_rows)} by |ΔAPE|){_mark(d)}",
                (
                    "Job",
                    "Decoder",
                    "Domain",
                    "Target",
                    "Value A",
                    "Value B",
                    "APE A",
                    "APE B",
                    "ΔAPE",
                ),
                top_rows,
                ("No interval: single outputs, each its own value in A and B.",),
                left=3,
            )
        )
    tables += _score_table(d)
    if d.probabilities is not None:
        tables += probability_diff_tables(d.probabilities, d.facts_a.suite, _mark(d))
    sides = tuple(
        (
            side,
            f.run_id,
            f.model,
            _served(f),
            "oracle" if f.oracle else "yes" if f.simulated else "no",
            f"{f.outputs_ok}/{f.outputs_failed}/{f.outputs_missing}",
        )
        for side, f in (("A", d.facts_a), ("B", d.facts_b))
    )
    tables.append(
        Table(
            "Runs compared" + _mark(d),
            ("Side", "Run", "Model", "Served model(s)", "Simulated", "ok/failed/missing"),
            sides,
            ("No interval: what each run recorded; nothing here is estimated.",),
            left=5,
        )
    )
    return tables


def _score_table(d: RunDiff) -> list[Table]:
    """The predicted distributions' CRPS and log score, paired (none when no output of
    either run was scored, e.g. ``--no-probabilities``)."""
    if not np.any(d.n_paired[_CRPS]) and not np.any(d.n_paired[_LOG]):
        return []
    rows = []
    for i, decoder in enumerate(d.design.decoders):
        for c, condition in enumerate(d.design.conditions):
            row = [decoder_label(decoder, d.facts_a.suite), condition_label(condition)]
            for s in (_CRPS, _LOG):
                n = int(d.n_paired[s, i, c])
                row.append(f"{n:,}")
                row += [
                    fmt(d.point_a[s, i, c]) if n else "n/a",
                    fmt(d.point_b[s, i, c]) if n else "n/a",
                    fmt_interval(d.delta[s, i, c], d.delta_lo[s, i, c], d.delta_hi[s, i, c])
                    if n
                    else "n/a",
                ]
            rows.append(tuple(row))
    header: tuple[str, ...] = ("Decoder", "Condition", "n (CRPS)", "CRPS A", "CRPS B", "ΔCRPS")
    header += ("n (log score)", "Log score A", "Log score B", "ΔLog score")
    notes = (
        "Each output's predicted distribution (analyze's Distributions section), paired: n "
        "counts the outputs (job, decoder) ok and scored in both runs (a whole distribution "
        "answered with probabilities; for the log score, a true leaf of mass > 0), and both "
        "sides' means and Δ = B − A are over those n only (negative: B is better). CRPS in % "
        "of U−L; log score: the density form −ln(m·N/w), nats. n/a: no output scored in "
        "both; brackets as above.",
    )
    title = f"Predicted distributions' scores, paired (B − A){_mark(d)}"
    return [Table(title, header, tuple(rows), notes, left=2)]


def diff_markdown(d: RunDiff) -> str:
    """The full Markdown printed by ``numericjev diff``."""
    repairs = [
        f"{side}: log repairs: {f.repairs}"  # as the diff's HTML page says it (run_warnings)
        for side, f in (("A", d.facts_a), ("B", d.facts_b))
        if f.repairs
    ]
    warnings = warning_lines([*(b.message for b in d.banners), *repairs])
    head = "\n".join([f"# {diff_title(d)}", "", *warnings])
    return "\n\n".join([head.rstrip(), *(t.to_markdown() for t in diff_tables(d))]) + "\n"


def diff_to_dict(d: RunDiff) -> dict[str, Any]:
    """The numbers of ``diff`` as one JSON-ready object (NaN written as null)."""
    cells = []
    for i, decoder in enumerate(d.design.decoders):
        for c, condition in enumerate(d.design.conditions):
            cell: dict[str, Any] = {"decoder": decoder, "condition": condition}
            for s, name in enumerate(STATISTICS):
                cell[name] = {
                    "a": number(d.point_a[s, i, c]),
                    "b": number(d.point_b[s, i, c]),
                    "delta": number(d.delta[s, i, c]),
                    "lo": number(d.delta_lo[s, i, c]),
                    "hi": number(d.delta_hi[s, i, c]),
                    "n": int(d.n_paired[s, i, c]),
                    "a_unpaired": number(d.unpaired_a[s, i, c]),
                    "b_unpaired": number(d.unpaired_b[s, i, c]),
                }
            cell["n_compared"] = int(d.n_compared[i, c])
            cell["n_ok_a"] = int(d.n_own_a[i, c])
            cell["n_ok_b"] = int(d.n_own_b[i, c])
            cell["n_changed"] = int(d.n_changed[i, c])
            cell["n_status_changed"] = int(d.n_status_changed[i, c])
            cells.append(cell)

    def side(f: RunFacts) -> dict[str, Any]:
        out = asdict(f)
        out["notice"] = f.notice
        out["served_models"] = dict(f.served_models)
        out["errors_by_kind"] = dict(f.errors_by_kind)
        return out

    return {
        "warnings": banners_to_list(d.banners),
        "a": side(d.facts_a),
        "b": side(d.facts_b),
        "bootstrap": {
            "replicates": d.n_boot,
            "seed": d.seed,
            "level": d.level,
            "method": "cluster-robust t over families (compare's verdict test), inverted",
            "paired": "per-family sums of B − A over the common units",
            "paired_units": "(job, decoder) outputs ok in both runs",
            "n_families": d.n_families,
            "min_families": d.min_families,
            "intervals_refused": d.refusal,
        },
        "cells": cells,
        "top_changes": [
            {
                **asdict(o),
                "ape_a": number(o.ape_a),
                "ape_b": number(o.ape_b),
                "delta_ape": number(o.delta_ape),
            }
            for o in d.top
        ],
        "probabilities": None
        if d.probabilities is None
        else probability_diff_dict(d.probabilities),
    }
