"""The paper's tables for one analysed run, and a registry of table builders per suite."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.statistics.metrics import LOG_ACCURACY, STATISTICS
from analysis.statistics.summary import Analysis

from .markdown import Table, fmt, fmt_interval, fmt_range
from .sim_caveats import sim_caveats

__all__ = [
    "TableBuilder",
    "bracket_note",
    "build_tables",
    "domain_cell",
    "domain_tables",
    "facts_table",
    "log_accuracy_table",
    "main_table",
    "paired_table",
    "register_tables",
    "resampled_with",
    "sensitivity_table",
    "standard_notes",
    "table_suffix",
    "title_suffix",
    "within5_table",
]

TableBuilder = Callable[[Analysis], list[Table]]
_REGISTRY: dict[str, tuple[TableBuilder, ...]] = {}

_MAPE, _NMAE, _WITHIN5, _ORDER, _AFFINE, _LAR = (
    STATISTICS.index(s) for s in ("mape", "nmae", "within5", "ordering_gap", "affine_gap", "lar")
)


def title_suffix(model: str, suite: str, notice: str | None) -> str:
    """`` — model sim · suite affine`` plus the run's notice (simulated, oracle) if any."""
    text = f" — model {model} · suite {suite}"
    return text + (f" — {notice}" if notice else "")


def table_suffix(a: Analysis) -> str:
    """The title suffix for a table of ``a``: model, suite and the simulated mark."""
    return title_suffix(a.facts.model, a.facts.suite, a.facts.notice)


def _count_cells(a: Analysis, d: int, conditions: range, always: bool = False) -> list[str]:
    """``ok/failed/missing`` per condition: always, or only when some output is not ok."""
    if not (always or a.metrics.has_gaps):
        return []
    m = a.metrics
    return [f"{m.n_ok[d, c]}/{m.n_failed[d, c]}/{m.n_missing[d, c]}" for c in conditions]


def _count_header(a: Analysis, conditions: range, always: bool = False) -> list[str]:
    if not (always or a.metrics.has_gaps):
        return []
    return [f"n {a.design.conditions[c]} ok/failed/missing" for c in conditions]


def _dates(a: Analysis) -> list[int]:
    """Domain positions by name: for the historical suites' ISO dates, chronological."""
    return sorted(range(len(a.design.domains)), key=lambda i: a.design.domains[i])


def _with_interval(a: Analysis, s: int, d: int, c: int, date_values: bool) -> str:
    """``value [lo, hi]``; or, with ``date_values`` when too few families leave no interval,
    ``value (v1 / v2 / v3)``: the value on each date (domain) instead."""
    m, b = a.metrics, a.bootstrap
    if date_values and b.refusal is not None and s < len(m.by_domain):
        per_date = " / ".join(fmt(m.by_domain[s, d, c, i]) for i in _dates(a))
        return f"{fmt(m.point[s, d, c])} ({per_date})"
    return fmt_interval(m.point[s, d, c], b.lo[s, d, c], b.hi[s, d, c])


def _date_values_note(a: Analysis) -> list[str]:
    if a.bootstrap.refusal is None:
        return []
    dates = ", ".join(a.design.domains[i] for i in _dates(a))
    return [
        f"Parentheses: the value on each date ({dates}) in place of an interval; the paper "
        "too reports no interval over its three dates."
    ]


def resampled_with(a: Analysis) -> str:
    """What each resampled family carries, naming only what the run has: `` with their
    transforms, option orders and both conditions`` for affine, less for other suites."""
    parts = []
    if a.design.reference_domain is not None and a.metrics.units("affine_gap").sum() > 0:
        parts.append("transforms")
    if len(a.design.orders) >= 2:
        parts.append("option orders")
    if int(a.run.outputs.repeat.max(initial=0)) > 0:
        parts.append("repeats")
    n_conditions = len(a.design.conditions)
    if n_conditions >= 2:
        parts.append("both conditions" if n_conditions == 2 else f"all {n_conditions} conditions")
    if not parts:
        return ""
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f" with their {listed}"


def bracket_note(a: Analysis, resampled: str | None = None) -> list[str]:
    """The line saying what the brackets are, or why there are none (none asked: no line);
    ``resampled`` says what was resampled (default: the run's families and what they hold)."""
    b = a.bootstrap
    if b.refusal is not None:
        return [f"No brackets: {b.refusal}."]
    if b.n_boot <= 0:
        return []
    what = resampled or f"{b.n_families} families resampled{resampled_with(a)}"
    return [
        f"Brackets: {b.level:.0%} percentile family-bootstrap intervals "
        f"({b.n_boot:,} replicates, seed {b.seed}, {what})."
    ]


def standard_notes(a: Analysis, bootstrap: bool) -> list[str]:
    """The notes under a metric table: units, failures, bootstrap intervals, APE at 0."""
    notes = [
        "All numbers in %; means over ok outputs (failed and missing outputs are counted, "
        "never imputed)."
    ]
    notes += bracket_note(a) if bootstrap else []
    excluded = int(a.metrics.n_ok.sum() - a.metrics.units("mape").sum())
    if excluded:
        notes.append(f"APE is undefined for {excluded} ok output(s) with target 0: not in MAPE.")
    return notes


def main_table(a: Analysis, title: str = "Evaluation", date_values: bool = False) -> list[Table]:
    """MAPE and NMAE [interval] per condition, rounds used, and outputs ok/failed/missing
    per condition (paper Table 1 layout, with the counts added).

    ``date_values``: where too few families leave no interval, show the value per date.
    """
    m, conds = a.metrics, range(len(a.design.conditions))
    header = ["Decoder"]
    header += [f"MAPE {condition_label(a.design.conditions[c])}" for c in conds]
    header += [f"NMAE {condition_label(a.design.conditions[c])}" for c in conds]
    header += ["Rounds", *_count_header(a, conds, always=True)]
    rows = []
    for d, decoder in enumerate(a.design.decoders):
        row = [decoder_label(decoder, a.facts.suite)]
        row += [_with_interval(a, _MAPE, d, c, date_values) for c in conds]
        row += [_with_interval(a, _NMAE, d, c, date_values) for c in conds]
        row += [fmt_range(int(m.rounds_min[d]), int(m.rounds_max[d]))]
        rows.append((*row, *_count_cells(a, d, conds, always=True)))
    notes = standard_notes(a, bootstrap=True)
    notes += _date_values_note(a) if date_values else []
    notes.append(
        "NMAE divides absolute error by the range width U−L. Rounds: sequential "
        "dependencies used (min–max), independent questions batched. n: outputs ok / "
        "failed / missing (expected by the manifest, never written) per condition."
    )
    notes += sim_caveats(a.facts.simulated, a.facts.oracle, a.facts.suite)
    return [Table(title + table_suffix(a), tuple(header), tuple(rows), tuple(notes))]


def within5_table(a: Analysis, date_values: bool = False) -> list[Table]:
    """Share of outputs with APE <= 5% per condition, with intervals (paper Figure 1)."""
    conds = range(len(a.design.conditions))
    header = (
        "Decoder",
        *(condition_label(a.design.conditions[c]) for c in conds),
        *_count_header(a, conds),
    )
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(_with_interval(a, _WITHIN5, d, c, date_values) for c in conds),
            *_count_cells(a, d, conds),
        )
        for d, decoder in enumerate(a.design.decoders)
    )
    title = "Outputs within 5% APE (%)" + table_suffix(a)
    notes = standard_notes(a, bootstrap=True)
    notes += _date_values_note(a) if date_values else []
    return [Table(title, header, rows, tuple(notes))]


def domain_cell(a: Analysis, d: int, c: int, m: int) -> str:
    """MAPE of decoder ``d`` in condition ``c`` and domain ``m`` with its family-bootstrap
    interval (the main table's resamples; the value alone where there is none)."""
    b, value = a.bootstrap, a.metrics.mape_by_domain[d, c, m]
    if b.domain_lo is None or b.domain_hi is None:
        return fmt(value)
    return fmt_interval(value, b.domain_lo[d, c, m], b.domain_hi[d, c, m])


def domain_tables(a: Analysis, label: str = "MAPE by domain (%)") -> list[Table]:
    """One table per condition: MAPE [interval] by domain (paper: arithmetic MAPE by affine
    domain)."""
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
                *(domain_cell(a, d, c, m) for m in range(len(a.design.domains))),
                *_count_cells(a, d, range(c, c + 1)),
            )
            for d, decoder in enumerate(a.design.decoders)
        )
        title = f"{condition_label(condition)} {label}" + table_suffix(a)
        notes = [
            "Each entry averages families and orders within one domain; the domains "
            "transform the same base results, so columns are not independent datasets.",
            *bracket_note(a),
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
    free = a.design.order_free

    def cell(s: int, d: int, c: int) -> str:
        # An order-free imported head was shown no options: its ordering gap is undefined.
        if s == _ORDER and a.design.decoders[d] in free:
            return "n/a"
        return _with_interval(a, s, d, c, date_values=False)

    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(cell(s, d, c) for s, _ in columns for c in conds),
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
    notes += bracket_note(a)
    if free and any(s == _ORDER for s, _ in columns):
        notes.append(
            "n/a: imported predictions with one value per case (no option order was shown, "
            "so there is nothing to permute; the paper's n/a)."
        )
    title = "Sensitivity as a percentage of the numerical range" + table_suffix(a)
    return [Table(title, (*header, *_count_header(a, conds)), rows, tuple(notes))]


def paired_table(a: Analysis) -> list[Table]:
    """MAPE and NMAE differences against direct choice over common jobs, same resamples."""
    b, conds = a.bootstrap, range(len(a.design.conditions))
    if b.reference is None:
        return []
    labels = [condition_label(a.design.conditions[c]) for c in conds]
    header = ["Decoder"]
    header += [f"ΔMAPE {x}" for x in labels] + [f"ΔNMAE {x}" for x in labels]
    header += [f"n {x}" for x in labels]
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            *(
                fmt_interval(b.diff[s, d, c], b.diff_lo[s, d, c], b.diff_hi[s, d, c])
                for s in (_MAPE, _NMAE)
                for c in conds
            ),
            *(str(int(b.n_paired[_NMAE, d, c])) for c in conds),
        )
        for d, decoder in enumerate(a.design.decoders)
        if decoder != b.reference
    )
    title = f"Paired differences vs {b.reference} (percentage points)"
    notes = [
        f"Decoder minus {b.reference} over the same units: n counts the jobs where both the "
        f"decoder and {b.reference} have an ok output; every other output is left out of "
        "both means. Same resampled families; negative is better."
    ]
    notes += standard_notes(a, bootstrap=True)[1:]
    notes += sim_caveats(a.facts.simulated, a.facts.oracle, a.facts.suite)
    return [Table(title + table_suffix(a), tuple(header), rows, tuple(notes))]


def _cache_rows(a: Analysis) -> list[tuple[str, str]]:
    """The request cache's row (hits, the runs that paid, USD saved), when it answered any."""
    req = a.run.requests
    if not req.cache_hits:
        return []
    answered = len(req) - int(req.failed.sum())
    runs = ", ".join(req.cache_runs[:3]) + (", ..." if len(req.cache_runs) > 3 else "")
    return [
        (
            "Request cache",
            f"{req.cache_hits:,} of {answered:,} answered exchanges from the cache (cost 0 here; "
            f"first paid by {runs}): USD {req.cache_saved_usd:.6f} saved",
        )
    ]


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
            f"{f.model} (backend {f.backend or 'unknown'}"
            + (f", wire {f.wire})" if f.wire else ")")
            + (f" — {f.notice}" if f.notice else ""),
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
        *_cache_rows(a),
        ("Latency p50 / p95", latency),
        (
            "Outputs ok / failed / missing",
            f"{f.outputs_ok:,} / {f.outputs_failed:,} / {f.outputs_missing:,}",
        ),
    ]
    if f.repairs:
        rows.append(("Log repairs", f.repairs))
    notes = ("No interval: this run's provenance and counts; nothing here is estimated.",)
    return Table("Run facts" + table_suffix(a), ("Item", "Value"), tuple(rows), notes, left=2)


def log_accuracy_table(a: Analysis) -> list[Table]:
    """LAR [interval], MSA and SSPB per decoder and condition, beside MAPE and NMAE, with the
    ok outputs that have no log ratio (a zero; a sign mismatch) counted in their own columns."""
    m, conds = a.metrics, range(len(a.design.conditions))
    msa, sspb, zero, mismatch = (LOG_ACCURACY.index(k) for k in LOG_ACCURACY)
    header = ["Decoder", "Condition", "MAPE", "NMAE", "LAR ×100", "MSA", "SSPB"]
    header += ["no log: zero", "no log: sign mismatch"]
    rows = tuple(
        (
            decoder_label(decoder, a.facts.suite),
            condition_label(a.design.conditions[c]),
            fmt(m.point[_MAPE, d, c]),
            fmt(m.point[_NMAE, d, c]),
            _with_interval(a, _LAR, d, c, False),
            fmt(m.log_accuracy[msa, d, c]),
            fmt(m.log_accuracy[sspb, d, c]),
            str(int(m.log_accuracy[zero, d, c])),
            str(int(m.log_accuracy[mismatch, d, c])),
        )
        for d, decoder in enumerate(a.design.decoders)
        for c in conds
    )
    notes = standard_notes(a, bootstrap=True)
    notes.append(
        "With q = ln(value/target) (Morley et al. 2018): LAR ×100 = 100·mean|q|, MSA = "
        "100·(exp(median|q|) − 1) %, SSPB = 100·sign(M)·(exp|M| − 1) % with M = median q "
        "(positive: values run high). An ok output whose value or target is 0, or whose "
        "value and target have opposite signs, has no log ratio: it is left out of these "
        "three and counted in the last two columns."
    )
    notes.append(
        "MAPE and NMAE: the main table's, with their intervals there. MSA and SSPB are medians, "
        "not means over units, so the family bootstrap (of sums over counts) gives them none."
    )
    return [Table("Log accuracy ratio" + table_suffix(a), tuple(header), rows, tuple(notes))]


def register_tables(suite: str, *builders: TableBuilder) -> None:
    """Set the tables ``analyze`` prints for ``suite`` (later registrations replace earlier)."""
    _REGISTRY[suite] = builders


_EXTRA: list[TableBuilder] = []  # after every suite's tables (each returns [] when moot)


def register_extra(builder: TableBuilder) -> None:
    """Add a table every suite gets when it applies (the transfer table of imported
    predictions)."""
    _EXTRA.append(builder)


register_extra(log_accuracy_table)


def build_tables(a: Analysis) -> list[Table]:
    """The metric tables for the run's suite (generic ones for an unregistered suite)."""
    builders = (*_REGISTRY.get(a.facts.suite, _GENERIC), *_EXTRA)
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
