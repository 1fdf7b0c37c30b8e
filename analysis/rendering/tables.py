"""The paper's tables for one analysed run, and a registry of table builders per suite."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.statistics.facts import SIMULATED_NOTICE
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.summary import Analysis

from .markdown import Table, fmt, fmt_interval, fmt_range

__all__ = [
    "TableBuilder",
    "build_tables",
    "domain_tables",
    "facts_table",
    "main_table",
    "paired_table",
    "register_tables",
    "sensitivity_table",
    "standard_notes",
    "table_suffix",
    "title_suffix",
    "within5_table",
]

TableBuilder = Callable[[Analysis], list[Table]]
_REGISTRY: dict[str, tuple[TableBuilder, ...]] = {}

_MAPE, _NMAE, _WITHIN5, _ORDER, _AFFINE = (STATISTICS.index(s) for s in STATISTICS)


def title_suffix(model: str, suite: str, simulated: bool) -> str:
    """`` — model sim · suite affine`` plus the simulated notice when it applies."""
    text = f" — model {model} · suite {suite}"
    return text + (f" — {SIMULATED_NOTICE}" if simulated else "")


def table_suffix(a: Analysis) -> str:
    """The title suffix for a table of ``a``: model, suite and the simulated mark."""
    return title_suffix(a.facts.model, a.facts.suite, a.facts.simulated)


def _has_gaps(a: Analysis) -> bool:
    return bool(np.any(a.metrics.n_failed) or np.any(a.metrics.n_missing))


def _count_cells(a: Analysis, d: int, conditions: range) -> list[str]:
    """``ok/failed/missing`` per condition, shown only when some output is not ok."""
    if not _has_gaps(a):
        return []
    m = a.metrics
    return [f"{m.n_ok[d, c]}/{m.n_failed[d, c]}/{m.n_missing[d, c]}" for c in conditions]


def _count_header(a: Analysis, conditions: range) -> list[str]:
    if not _has_gaps(a):
        return []
    return [f"n {a.design.conditions[c]} ok/failed/missing" for c in conditions]


def standard_notes(a: Analysis, bootstrap: bool) -> list[str]:
    """The notes under a metric table: units, failures, bootstrap intervals, APE at 0."""
    notes = [
        "All numbers in %; means over ok outputs (failed and missing outputs are counted, "
        "never imputed)."
    ]
    if bootstrap and a.bootstrap.n_boot > 0:
        b = a.bootstrap
        notes.append(
            f"Brackets: {b.level:.0%} percentile family-bootstrap intervals "
            f"({b.n_boot:,} replicates, seed {b.seed}, {b.n_families} families resampled with "
            "their transforms, orders and both conditions)."
        )
    excluded = int(a.metrics.n_ok.sum() - a.metrics.units("mape").sum())
    if excluded:
        notes.append(f"APE is undefined for {excluded} ok output(s) with target 0: not in MAPE.")
    return notes


def main_table(a: Analysis, title: str = "Evaluation") -> list[Table]:
    """MAPE [interval] and NMAE per condition, and rounds used (paper Table 1 layout)."""
    m, b, conds = a.metrics, a.bootstrap, range(len(a.design.conditions))
    header = ["Decoder"]
    header += [f"MAPE {condition_label(a.design.conditions[c])}" for c in conds]
    header += [f"NMAE {condition_label(a.design.conditions[c])}" for c in conds]
    header += ["Rounds", *_count_header(a, conds)]
    rows = []
    for d, decoder in enumerate(a.design.decoders):
        row = [decoder_label(decoder, a.facts.suite)]
        row += [
            fmt_interval(m.point[_MAPE, d, c], b.lo[_MAPE, d, c], b.hi[_MAPE, d, c]) for c in conds
        ]
        row += [fmt(m.point[_NMAE, d, c]) for c in conds]
        row += [fmt_range(int(m.rounds_min[d]), int(m.rounds_max[d])), *_count_cells(a, d, conds)]
        rows.append(tuple(row))
    notes = standard_notes(a, bootstrap=True)
    notes.append(
        "NMAE divides absolute error by the range width U−L. Rounds: sequential "
        "dependencies used (min–max), independent questions batched."
    )
    return [Table(title + table_suffix(a), tuple(header), tuple(rows), tuple(notes))]


def within5_table(a: Analysis) -> list[Table]:
    """Share of outputs with APE <= 5% per condition, with intervals (paper Figure 1)."""
    m, b, conds = a.metrics, a.bootstrap, range(len(a.design.conditions))
    header = (
        "Decoder",
        *(condition_label(a.design.conditions[c]) for c in conds),
        *_count_header(a, conds),
    )
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(
                fmt_interval(m.point[_WITHIN5, d, c], b.lo[_WITHIN5, d, c], b.hi[_WITHIN5, d, c])
                for c in conds
            ),
            *_count_cells(a, d, conds),
        )
        for d, decoder in enumerate(a.design.decoders)
    )
    title = "Outputs within 5% APE (%)" + table_suffix(a)
    return [Table(title, header, rows, tuple(standard_notes(a, bootstrap=True)))]


def domain_tables(a: Analysis, label: str = "MAPE by domain (%)") -> list[Table]:
    """One table per condition: MAPE by domain (paper: arithmetic MAPE by affine domain)."""
    if len(a.design.domains) < 2:
        return []
    tables = []
    for c, condition in enumerate(a.design.conditions):
        header = (
            "Decoder",
            *(domain_label(n) for n in a.design.domains),
            *_count_header(a, range(c, c + 1)),
        )
        rows = tuple(
            (
                decoder_label(decoder, a.facts.suite),
                *(fmt(v) for v in a.metrics.mape_by_domain[d, c]),
                *_count_cells(a, d, range(c, c + 1)),
            )
            for d, decoder in enumerate(a.design.decoders)
        )
        title = f"{condition_label(condition)} {label}" + table_suffix(a)
        notes = [
            "Each entry averages families and orders within one domain; the domains "
            "transform the same base results, so columns are not independent datasets."
        ]
        tables.append(Table(title, header, rows, tuple(notes)))
    return tables


def sensitivity_table(a: Analysis) -> list[Table]:
    """Ordering gap and affine gap per condition (paper appendix, ordering and affine)."""
    conds = range(len(a.design.conditions))
    columns = []
    if len(a.design.orders) >= 2:
        columns.append((_ORDER, "Ordering gap"))
    # Only when some output has an untransformed partner: the exploratory suite has an
    # "int" domain too, but its fraction questions are other families, not transforms.
    if a.design.reference_domain is not None and a.metrics.units("affine_gap").sum() > 0:
        columns.append((_AFFINE, "Affine gap"))
    if not columns:
        return []
    header = ["Decoder"]
    header += [
        f"{name} {condition_label(a.design.conditions[c])}" for _, name in columns for c in conds
    ]
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(fmt(a.metrics.point[s, d, c]) for s, _ in columns for c in conds),
            *_count_cells(a, d, conds),
        )
        for d, decoder in enumerate(a.design.decoders)
    )
    explained = {
        _ORDER: "Ordering gap: mean over cases of 100·|ŷ_asc − ŷ_rev|/(U−L).",
        _AFFINE: "Affine gap: mean of 100·|idx_t − idx_int|/N, idx = (ŷ−L)/eps, against the "
        "untransformed (int) output of the same family, order and condition.",
    }
    notes = [" ".join(explained[s] for s, _ in columns) + " These measure disagreement, not error."]
    title = "Sensitivity as a percentage of the numerical range" + table_suffix(a)
    return [Table(title, (*header, *_count_header(a, conds)), rows, tuple(notes))]


def paired_table(a: Analysis) -> list[Table]:
    """MAPE and NMAE differences against direct choice on the same resamples."""
    b, conds = a.bootstrap, range(len(a.design.conditions))
    if b.reference is None:
        return []
    header = ["Decoder"]
    header += [f"ΔMAPE {condition_label(a.design.conditions[c])}" for c in conds]
    header += [f"ΔNMAE {condition_label(a.design.conditions[c])}" for c in conds]
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(
                fmt_interval(b.diff[s, d, c], b.diff_lo[s, d, c], b.diff_hi[s, d, c])
                for s in (_MAPE, _NMAE)
                for c in conds
            ),
            *_count_cells(a, d, conds),
        )
        for d, decoder in enumerate(a.design.decoders)
        if decoder != b.reference
    )
    header += _count_header(a, conds)
    title = f"Paired differences vs {b.reference} (percentage points)"
    notes = [f"Decoder minus {b.reference}, same resampled families; negative is better."]
    notes += standard_notes(a, bootstrap=True)[1:]
    return [Table(title + table_suffix(a), tuple(header), rows, tuple(notes))]


def facts_table(a: Analysis) -> Table:
    """The run's provenance, accounting and failures as a two-column table."""
    f = a.facts
    served = ", ".join(f"{name} ×{n}" for name, n in f.served_models) or "none reported"
    errors = ", ".join(f"{kind} ×{n}" for kind, n in f.errors_by_kind) or "none"
    cost = "not reported" if f.cost_usd is None else f"USD {f.cost_usd:.6f}"
    if f.cost_usd is not None and f.requests_without_cost:
        cost += f" ({f.requests_without_cost} request(s) without cost)"
    latency = (
        "n/a"
        if f.latency_p50_ms is None
        else (f"{f.latency_p50_ms:.1f} ms / {f.latency_p95_ms:.1f} ms")
    )
    expected = "unknown" if f.n_jobs is None else f"{f.n_jobs:,} jobs"

    def count(value: int | None) -> str:
        return "not reported" if value is None else f"{value:,}"

    rows = [
        ("Run", f"{f.run_id} (created {f.created_utc or 'unknown'})"),
        (
            "Suite",
            f"{f.suite} (seed {f.seed}, case hash {(f.case_hash or 'unknown')[:12]}, {expected})",
        ),
        (
            "Model",
            f"{f.model} (backend {f.backend or 'unknown'})"
            + (f" — {SIMULATED_NOTICE}" if f.simulated else ""),
        ),
        ("Served model(s)", served),
        (
            "Requests",
            f"{f.requests:,} attempts for {f.jobs_with_requests:,} jobs, {f.retries:,} retries"
            if f.requests_log_present
            else "requests.jsonl absent",
        ),
        ("Errors", errors),
        ("Tokens in / out", f"{count(f.input_tokens)} / {count(f.output_tokens)}"),
        ("Cost", cost),
        ("Latency p50 / p95", latency),
        (
            "Outputs ok / failed / missing",
            f"{f.outputs_ok:,} / {f.outputs_failed:,} / {f.outputs_missing:,}",
        ),
    ]
    if f.duplicate_outputs or f.torn_lines:
        rows.append(
            (
                "Log repairs",
                f"{f.duplicate_outputs} duplicate output line(s) (last "
                f"kept), {f.torn_lines} torn last line(s) skipped",
            )
        )
    return Table("Run facts" + table_suffix(a), ("Item", "Value"), tuple(rows), left=2)


def register_tables(suite: str, *builders: TableBuilder) -> None:
    """Set the tables ``analyze`` prints for ``suite`` (later registrations replace earlier)."""
    _REGISTRY[suite] = builders


def build_tables(a: Analysis) -> list[Table]:
    """The metric tables for the run's suite (generic ones for an unregistered suite)."""
    builders = _REGISTRY.get(a.facts.suite, _GENERIC)
    return [table for build in builders for table in build(a)]


_GENERIC: tuple[TableBuilder, ...] = (
    main_table,
    within5_table,
    domain_tables,
    sensitivity_table,
    paired_table,
)

register_tables(
    "affine",
    partial(main_table, title="Fixed affine-grid evaluation"),
    partial(domain_tables, label="MAPE by affine domain (%)"),
    sensitivity_table,
    paired_table,
    within5_table,
)
