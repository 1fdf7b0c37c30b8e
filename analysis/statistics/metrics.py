"""Per decoder × condition metrics of the paper, from per-family sums (no I/O).

Every statistic here is a mean over units (outputs, order pairs, transform pairs). Its
per-family sums and counts are kept, so the point estimate is ``sum / count`` and a
family-bootstrap replicate is the same ratio with families reweighted (bootstrap.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.outputs import Outputs
from analysis.loading.run import Design

__all__ = [
    "STATISTICS",
    "FamilyTotals",
    "Metrics",
    "affine_pairs",
    "compute_metrics",
    "family_totals",
    "ordering_pairs",
]

# mape: mean APE (%); nmae: mean 100|ŷ−y|/(U−L); within5: % of outputs with APE <= 5;
# ordering_gap: mean 100|ŷ_asc−ŷ_rev|/(U−L) over cases; affine_gap: mean 100|idx_t−idx_int|/N.
STATISTICS = ("mape", "nmae", "within5", "ordering_gap", "affine_gap")


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


def _positions(names: tuple[str, ...], order: tuple[str, ...]) -> np.ndarray:
    """Map codes into ``names`` to positions in ``order`` (-1 where absent)."""
    where = {name: i for i, name in enumerate(order)}
    return np.array([where.get(n, -1) for n in names] + [-1], dtype=np.int64)[:-1]


def ordering_pairs(outputs: Outputs, first: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (i, j) of ok outputs that differ only in option order (first vs second)."""
    if first not in outputs.order_names or second not in outputs.order_names:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    n_rep = int(outputs.repeat.max()) + 1 if len(outputs) else 1
    key = (
        (outputs.decoder * len(outputs.condition_names) + outputs.condition)
        * len(outputs.case_names)
        + outputs.case
    ) * n_rep + outputs.repeat
    rows_a = np.flatnonzero(outputs.ok & (outputs.order == outputs.order_names.index(first)))
    rows_b = np.flatnonzero(outputs.ok & (outputs.order == outputs.order_names.index(second)))
    _, ia, ib = np.intersect1d(key[rows_a], key[rows_b], return_indices=True)
    return rows_a[ia], rows_b[ib]


def affine_pairs(outputs: Outputs, reference_domain: str) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (t, r): ok transformed output t and the reference-domain output r of the
    same family, order, condition, repeat and decoder."""
    if reference_domain not in outputs.domain_names:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    n_rep = int(outputs.repeat.max()) + 1
    key = (
        (
            (outputs.decoder * len(outputs.condition_names) + outputs.condition)
            * len(outputs.family_names)
            + outputs.family
        )
        * len(outputs.order_names)
        + outputs.order
    ) * n_rep + outputs.repeat
    is_ref = outputs.domain == outputs.domain_names.index(reference_domain)
    ref_rows = np.flatnonzero(outputs.ok & is_ref)
    t_rows = np.flatnonzero(outputs.ok & ~is_ref)
    if len(ref_rows) == 0 or len(t_rows) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ref_sorted = ref_rows[np.argsort(key[ref_rows], kind="stable")]
    ref_keys = key[ref_sorted]
    at = np.minimum(np.searchsorted(ref_keys, key[t_rows]), len(ref_keys) - 1)
    hit = ref_keys[at] == key[t_rows]
    return t_rows[hit], ref_sorted[at[hit]]


def family_totals(
    outputs: Outputs, design: Design, families: tuple[str, ...] | None = None
) -> FamilyTotals:
    """Per-family sums and counts of every statistic in STATISTICS.

    ``families`` fixes the family axis (diff passes the union of two runs so that one
    resample applies to both); by default it is the run's own sorted families.
    """
    families = outputs.family_names if families is None else families
    fam = _positions(outputs.family_names, families)[outputs.family]
    dec = _positions(outputs.decoder_names, design.decoders)[outputs.decoder]
    cond = _positions(outputs.condition_names, design.conditions)[outputs.condition]
    n_f, n_d, n_c = len(families), len(design.decoders), len(design.conditions)
    sums = np.zeros((n_f, len(STATISTICS), n_d, n_c))
    counts = np.zeros_like(sums)

    def add(stat: int, rows: np.ndarray, values: np.ndarray) -> None:
        keep = np.isfinite(values) & (fam[rows] >= 0)
        flat = (fam[rows] * n_d + dec[rows]) * n_c + cond[rows]
        size = n_f * n_d * n_c
        sums[:, stat] = np.bincount(flat[keep], values[keep], size).reshape(n_f, n_d, n_c)
        counts[:, stat] = np.bincount(flat[keep], None, size).reshape(n_f, n_d, n_c)

    ok = np.flatnonzero(outputs.ok)
    add(0, ok, outputs.ape[ok])
    add(1, ok, outputs.nae[ok])
    add(2, ok, 100.0 * outputs.within5[ok])
    if len(design.orders) >= 2:
        i, j = ordering_pairs(outputs, design.orders[0], design.orders[1])
        add(3, i, 100.0 * np.abs(outputs.index[i] - outputs.index[j]) / outputs.n_cells[i])
    if design.reference_domain is not None:
        t, r = affine_pairs(outputs, design.reference_domain)
        add(4, t, 100.0 * np.abs(outputs.index[t] - outputs.index[r]) / outputs.n_cells[t])
    return FamilyTotals(families, STATISTICS, sums, counts)


def compute_metrics(outputs: Outputs, design: Design) -> Metrics:
    """All per decoder × condition metrics of one run (means over ok outputs)."""
    totals = family_totals(outputs, design)
    n_d, n_c, n_m = len(design.decoders), len(design.conditions), len(design.domains)
    dec = _positions(outputs.decoder_names, design.decoders)[outputs.decoder]
    cond = _positions(outputs.condition_names, design.conditions)[outputs.condition]
    dom = _positions(outputs.domain_names, design.domains)[outputs.domain]
    cell = dec * n_c + cond
    n_ok = np.bincount(cell[outputs.ok], minlength=n_d * n_c).reshape(n_d, n_c)
    n_failed = np.bincount(cell[~outputs.ok], minlength=n_d * n_c).reshape(n_d, n_c)
    n_missing = np.zeros_like(n_ok)
    for d, decoder in enumerate(design.decoders):
        for c, condition in enumerate(design.conditions):
            expected = design.expected(decoder, condition)
            if expected is not None:
                n_missing[d, c] = max(expected - n_ok[d, c] - n_failed[d, c], 0)
    defined = outputs.ok & np.isfinite(outputs.ape)
    flat = cell[defined] * n_m + dom[defined]
    by_domain = _ratio(
        np.bincount(flat, outputs.ape[defined], n_d * n_c * n_m),
        np.bincount(flat, None, n_d * n_c * n_m),
    ).reshape(n_d, n_c, n_m)
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
        mape_by_domain=by_domain,
        rounds_min=rounds_min,
        rounds_max=rounds_max,
    )
