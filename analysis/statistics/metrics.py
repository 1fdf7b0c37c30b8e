"""Per decoder × condition metrics of the paper, from per-family sums (no I/O).

Every statistic here is a mean over units (outputs, order pairs, transform pairs). Its
per-family sums and counts are kept, so the point estimate is ``sum / count`` and a
family-bootstrap replicate is the same ratio with families reweighted (bootstrap.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.columns.compact import narrow
from analysis.loading.logs.outputs import Outputs

from .design import Design
from .log_accuracy import log_ratios, msa, sspb

__all__ = [
    "LOG_ACCURACY",
    "SCORED",
    "STATISTICS",
    "FamilyTotals",
    "Metrics",
    "affine_pairs",
    "code_positions",
    "compute_metrics",
    "family_totals",
    "log_ratio_codes",
    "ordering_pairs",
    "positions",
]

# mape: mean APE (%); nmae: mean 100|ŷ−y|/(U−L); within5: % of outputs with APE <= 5;
# ordering_gap: mean 100|ŷ_asc−ŷ_rev|/(U−L) over cases; affine_gap: mean 100|idx_t−idx_int|/N;
# lar: mean 100|ln(ŷ/y)| over outputs whose ratio has a log (log_accuracy.py).
# crps, logscore: the predicted distribution's CRPS (% of U−L) and density log score (nats)
# over the outputs scored (output_scores.py); given by the caller as ``scores`` (SCORED rows,
# one column per output, NaN: n/a), else no units.
STATISTICS = ("mape", "nmae", "within5", "ordering_gap", "affine_gap", "lar", "crps", "logscore")
SCORED = ("crps", "logscore")
# The medians and the counts of outputs without a log ratio, in Metrics.log_accuracy.
LOG_ACCURACY = ("msa", "sspb", "zero", "sign_mismatch")


@dataclass(frozen=True, eq=False)
class FamilyTotals:
    """Sums and counts of each statistic's units, shape (families, statistics, D, C)."""

    families: tuple[str, ...]
    statistics: tuple[str, ...]
    sums: np.ndarray
    counts: np.ndarray

    def point(self) -> np.ndarray:
        """Point estimates, shape (statistics, D, C); NaN where a cell has no units."""
        return _ratio(self.sums.sum(axis=0), self.counts.sum(axis=0))


@dataclass(frozen=True, eq=False)
class Metrics:
    """The paper's metrics for one run, indexed by the design's decoder and condition order."""

    design: Design
    totals: FamilyTotals
    point: np.ndarray  # (statistics, D, C)
    n_ok: np.ndarray  # (D, C)
    n_failed: np.ndarray
    n_missing: np.ndarray
    mape_by_domain: np.ndarray  # (D, C, domains)
    rounds_min: np.ndarray  # (D,), -1 where unknown
    rounds_max: np.ndarray
    # mape, nmae and within5 per domain, shape (3, D, C, domains); mape_by_domain is [0].
    by_domain: np.ndarray
    # LOG_ACCURACY per decoder × condition, shape (4, D, C): MSA and SSPB over the outputs
    # with a log ratio, and how many ok outputs had none (target or value 0; signs differ).
    log_accuracy: np.ndarray
    # MAPE's per-family sums and counts by domain, shape (families, D, C, domains): the
    # family bootstrap's input for the by-domain intervals (families as in ``totals``).
    domain_sums: np.ndarray
    domain_counts: np.ndarray

    @property
    def has_gaps(self) -> bool:
        """Whether some output failed or is missing (tables then show ok/failed/missing)."""
        return bool(np.any(self.n_failed) or np.any(self.n_missing))

    def get(self, statistic: str, decoder: str, condition: str) -> float:
        """One point estimate by names."""
        d = self.design.decoders.index(decoder)
        c = self.design.conditions.index(condition)
        return float(self.point[STATISTICS.index(statistic), d, c])

    def units(self, statistic: str) -> np.ndarray:
        """How many units (outputs or pairs) each decoder × condition mean is over."""
        return self.totals.counts[:, STATISTICS.index(statistic)].sum(axis=0)


def _ratio(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 is "no data": NaN
        return sums / counts


def code_positions(names: tuple[str, ...], order: tuple[str, ...]) -> np.ndarray:
    """Map codes into ``names`` to positions in ``order`` (-1 where absent), as int32: indexed
    by a code column, it gives one position per output (keys built from several cast first)."""
    where = {name: i for i, name in enumerate(order)}
    return np.array([where.get(n, -1) for n in names] + [-1], dtype=np.int32)[:-1]


def positions(names: tuple[str, ...], order: tuple[str, ...], codes: np.ndarray) -> np.ndarray:
    """Each code's position in ``order`` (-1 where absent), per output, in the narrowest
    integer type (one byte for decoders, conditions and domains): cast before building keys."""
    return narrow(code_positions(names, order))[codes]


_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64))


def _order_pairs(
    outputs: Outputs, rows: np.ndarray, dec: np.ndarray, first: str, second: str
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (i, j) into ``rows`` of outputs that differ only in option order.

    ``dec`` is each row's decoder key: a pair is two rows booked under the same decoder.
    """
    if first not in outputs.order_names or second not in outputs.order_names:
        return _EMPTY
    dec = dec.astype(np.int64, copy=False)  # the columns are narrow: build keys in int64
    n_rep = int(outputs.repeat.max()) + 1 if len(outputs) else 1
    key = (
        (dec * len(outputs.condition_names) + outputs.condition[rows]) * len(outputs.case_names)
        + outputs.case[rows]
    ) * n_rep + outputs.repeat[rows]
    order = outputs.order[rows]
    at_a = np.flatnonzero(order == outputs.order_names.index(first))
    at_b = np.flatnonzero(order == outputs.order_names.index(second))
    _, ia, ib = np.intersect1d(key[at_a], key[at_b], return_indices=True)
    return at_a[ia], at_b[ib]


def _affine_pairs(
    outputs: Outputs, rows: np.ndarray, dec: np.ndarray, reference_domain: str
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (t, r) into ``rows``: a transformed output and the reference-domain output
    of the same family, order, condition, repeat and decoder key."""
    if reference_domain not in outputs.domain_names or not len(rows):
        return _EMPTY
    dec = dec.astype(np.int64, copy=False)  # the columns are narrow: build keys in int64
    n_rep = int(outputs.repeat.max()) + 1
    key = (
        (
            (dec * len(outputs.condition_names) + outputs.condition[rows])
            * len(outputs.family_names)
            + outputs.family[rows]
        )
        * len(outputs.order_names)
        + outputs.order[rows]
    ) * n_rep + outputs.repeat[rows]
    is_ref = outputs.domain[rows] == outputs.domain_names.index(reference_domain)
    ref_at, t_at = np.flatnonzero(is_ref), np.flatnonzero(~is_ref)
    if len(ref_at) == 0 or len(t_at) == 0:
        return _EMPTY
    ref_sorted = ref_at[np.argsort(key[ref_at], kind="stable")]
    ref_keys = key[ref_sorted]
    at = np.minimum(np.searchsorted(ref_keys, key[t_at]), len(ref_keys) - 1)
    hit = ref_keys[at] == key[t_at]
    return t_at[hit], ref_sorted[at[hit]]


def ordering_pairs(outputs: Outputs, first: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (i, j) of ok outputs that differ only in option order (first vs second)."""
    rows = np.flatnonzero(outputs.ok)
    i, j = _order_pairs(outputs, rows, outputs.decoder[rows], first, second)
    return rows[i], rows[j]


def affine_pairs(outputs: Outputs, reference_domain: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (t, r): ok transformed output t and the reference-domain output r of the
    same family, order, condition, repeat and decoder."""
    rows = np.flatnonzero(outputs.ok)
    t, r = _affine_pairs(outputs, rows, outputs.decoder[rows], reference_domain)
    return rows[t], rows[r]


def family_totals(
    outputs: Outputs,
    design: Design,
    families: tuple[str, ...] | None = None,
    rows: np.ndarray | None = None,
    as_decoder: np.ndarray | None = None,
    log_ok: np.ndarray | None = None,
    scores: np.ndarray | None = None,
) -> FamilyTotals:
    """Per-family sums and counts of every statistic in STATISTICS.

    ``families`` fixes the family axis (diff passes the union of two runs so that one
    resample applies to both); by default it is the run's own sorted families. ``rows``
    (ok outputs only, default all of them) restricts the units to those outputs, and
    ``as_decoder`` books each of them under that design decoder position instead of its
    own: paired.py uses both to take means over the units common to two sides, and
    ``log_ok`` (one bool per row) to keep LAR to the rows whose partner has a log ratio too.
    ``scores`` (SCORED × outputs, NaN: n/a) gives the predicted distributions' scores; a
    paired caller sets NaN where the partner has none.
    """
    families = outputs.family_names if families is None else families
    # Row numbers in the integer type given (int32 from paired.py: half the bytes).
    rows = np.flatnonzero(outputs.ok) if rows is None else np.asarray(rows)
    if not np.issubdtype(rows.dtype, np.integer):
        rows = rows.astype(np.int64)
    if not np.all(outputs.ok[rows]):
        raise ValueError("family_totals counts ok outputs only")
    if as_decoder is None:
        dec_all = positions(outputs.decoder_names, design.decoders, outputs.decoder[rows])
    else:
        dec_all = np.asarray(as_decoder, np.int32)
    fam_all = positions(outputs.family_names, families, outputs.family[rows])
    n_f, n_d, n_c = len(families), len(design.decoders), len(design.conditions)
    sums = np.zeros((n_f, len(STATISTICS), n_d, n_c))
    counts = np.zeros_like(sums)
    # A block of families at a time (issue 29): every unit and every pair belongs to one
    # family, so each cell's sum adds the same values in the same order as over all rows
    # at once, while the keys and gathered columns below are one block long.
    n_blocks = max(1, min(n_f, len(rows) // _BLOCK_ROWS))
    edges = np.linspace(0, n_f, n_blocks + 1).astype(np.int64)
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        if n_blocks == 1:
            at = None
        else:
            at = np.flatnonzero((fam_all >= lo) & (fam_all < hi))
            if not len(at):
                continue
        _add_block(
            outputs,
            design,
            rows if at is None else rows[at],
            dec_all if at is None else dec_all[at],
            fam_all if at is None else fam_all[at],
            sums,
            counts,
            None if log_ok is None else (log_ok if at is None else log_ok[at]),
            scores,
        )
    return FamilyTotals(families, STATISTICS, sums, counts)


# Rows per block of families in family_totals (its temporaries are ~100 bytes per row).
_BLOCK_ROWS = 1 << 19


def _add_block(
    outputs: Outputs,
    design: Design,
    rows: np.ndarray,
    dec: np.ndarray,
    fam: np.ndarray,
    sums: np.ndarray,
    counts: np.ndarray,
    log_ok: np.ndarray | None = None,
    scores: np.ndarray | None = None,
) -> None:
    """Add one block of families' units to ``sums`` and ``counts`` (cells disjoint)."""
    cond = code_positions(outputs.condition_names, design.conditions)[outputs.condition[rows]]
    n_f, n_d, n_c = sums.shape[0], sums.shape[2], sums.shape[3]
    size = n_f * n_d * n_c
    # Each unit's family × decoder × condition cell, built once for the five statistics
    # (-1: a family outside ``families``).
    fam64 = fam.astype(np.int64)
    cell = np.where(fam64 >= 0, (fam64 * n_d + dec) * n_c + cond, -1)
    del fam64, cond

    def add(stat: int, at: np.ndarray | None, values: np.ndarray) -> None:
        flat = cell if at is None else cell[at]
        keep = np.isfinite(values) & (flat >= 0)
        flat = flat[keep]
        sums[:, stat] += np.bincount(flat, values[keep], size).reshape(n_f, n_d, n_c)
        counts[:, stat] += np.bincount(flat, None, size).reshape(n_f, n_d, n_c)

    add(0, None, outputs.ape[rows])
    add(1, None, outputs.nae[rows])
    add(2, None, 100.0 * outputs.within5[rows])
    lar = 100.0 * np.abs(log_ratio_codes(outputs)[outputs.number[rows]])
    add(5, None, lar if log_ok is None else np.where(log_ok, lar, np.nan))
    if scores is not None:
        for at_score, name in enumerate(SCORED):
            add(STATISTICS.index(name), None, scores[at_score][rows])
    index, n_cells = outputs.index[rows], outputs.n_cells[rows]
    if len(design.orders) >= 2:
        i, j = _order_pairs(outputs, rows, dec, design.orders[0], design.orders[1])
        if design.order_free:  # no option order was shown: no gap (n/a), not a gap of 0
            free = [k for k, name in enumerate(design.decoders) if name in design.order_free]
            ordered = ~np.isin(dec[i], free)
            i, j = i[ordered], j[ordered]
        add(3, i, 100.0 * np.abs(index[i] - index[j]) / n_cells[i])
    if design.reference_domain is not None:
        t, r = _affine_pairs(outputs, rows, dec, design.reference_domain)
        add(4, t, 100.0 * np.abs(index[t] - index[r]) / n_cells[t])


def log_ratio_codes(outputs: Outputs) -> np.ndarray:
    """ln(ŷ/y) per distinct number code (NaN where undefined): a few hundred, not millions."""
    return log_ratios(outputs.numbers[:, 1], outputs.numbers[:, 0]).q


def _log_accuracy(
    outputs: Outputs, dec: np.ndarray, cond: np.ndarray, n_d: int, n_c: int
) -> np.ndarray:
    """LOG_ACCURACY per decoder × condition over the ok outputs, shape (4, D, C)."""
    codes = log_ratios(outputs.numbers[:, 1], outputs.numbers[:, 0])
    out = np.full((len(LOG_ACCURACY), n_d, n_c), np.nan)
    for d in range(n_d):  # a decoder's rows at a time, as the by-domain means (issue 29)
        rows = np.flatnonzero((dec == d) & outputs.ok)
        numbers, conds = outputs.number[rows], cond[rows]
        for c in range(n_c):
            number = numbers[conds == c]
            q = codes.q[number]
            out[:, d, c] = (
                msa(q),
                sspb(q),
                codes.zero[number].sum(),
                codes.sign_mismatch[number].sum(),
            )
    return out


def compute_metrics(outputs: Outputs, design: Design, scores: np.ndarray | None = None) -> Metrics:
    """All per decoder × condition metrics of one run (means over ok outputs); ``scores``:
    the predicted distributions' (``family_totals``; None: crps and logscore have no units)."""
    totals = family_totals(outputs, design, scores=scores)
    n_d, n_c, n_m = len(design.decoders), len(design.conditions), len(design.domains)
    dec = positions(outputs.decoder_names, design.decoders, outputs.decoder)
    cond = positions(outputs.condition_names, design.conditions, outputs.condition)
    dom = positions(outputs.domain_names, design.domains, outputs.domain)
    cell = dec.astype(np.int32) * n_c + cond
    n_ok = np.bincount(cell[outputs.ok], minlength=n_d * n_c).reshape(n_d, n_c)
    n_failed = np.bincount(cell[~outputs.ok], minlength=n_d * n_c).reshape(n_d, n_c)
    n_missing = np.zeros_like(n_ok)
    for d, decoder in enumerate(design.decoders):
        for c, condition in enumerate(design.conditions):
            expected = design.expected(decoder, condition)
            if expected is not None:
                n_missing[d, c] = max(expected - n_ok[d, c] - n_failed[d, c], 0)

    # Per decoder × condition × domain means, a decoder at a time (issue 29): the values
    # gathered are one decoder's (a million at 1000×), and each cell, one decoder's, adds
    # the same values in the same order as over all outputs at once.
    cells = n_c * n_m
    sums, counts = np.zeros((3, n_d, cells)), np.zeros((3, n_d, cells))
    # MAPE's cells per family too (the by-domain intervals resample families).
    n_f = len(totals.families)
    fam_sums, fam_counts = np.zeros((n_d, n_f * cells)), np.zeros((n_d, n_f * cells))
    for d in range(n_d):
        rows = np.flatnonzero((dec == d) & outputs.ok)
        flat = cond[rows].astype(np.int32) * n_m + dom[rows]
        number = outputs.number[rows]
        for k, column in enumerate((2, 3, 5)):  # APE, NAE, within5 in ``numbers``
            values = outputs.numbers[:, column][number]
            if column == 5:
                values = 100.0 * values
            defined = np.isfinite(values)
            sums[k, d] = np.bincount(flat[defined], values[defined], cells)
            counts[k, d] = np.bincount(flat[defined], None, cells)
            if k == 0:
                at = outputs.family[rows][defined].astype(np.int64) * cells + flat[defined]
                fam_sums[d] = np.bincount(at, values[defined], n_f * cells)
                fam_counts[d] = np.bincount(at, None, n_f * cells)
    by_domain = _ratio(sums, counts).reshape(3, n_d, n_c, n_m)
    rounds_min = np.full(n_d, -1, np.int64)
    rounds_max = np.full(n_d, -1, np.int64)
    known = outputs.ok & (outputs.rounds >= 0)
    for d in range(n_d):
        r = outputs.rounds[known & (dec == d)]
        if len(r):
            rounds_min[d], rounds_max[d] = r.min(), r.max()
    return Metrics(
        design=design,
        totals=totals,
        point=totals.point(),
        n_ok=n_ok,
        n_failed=n_failed,
        n_missing=n_missing,
        mape_by_domain=by_domain[0],
        rounds_min=rounds_min,
        rounds_max=rounds_max,
        by_domain=by_domain,
        log_accuracy=_log_accuracy(outputs, dec, cond, n_d, n_c),
        domain_sums=fam_sums.reshape(n_d, n_f, n_c, n_m).transpose(1, 0, 2, 3),
        domain_counts=fam_counts.reshape(n_d, n_f, n_c, n_m).transpose(1, 0, 2, 3),
    )
