"""The Probabilities figures of two runs side by side, for ``numericjev diff``."""

from __future__ import annotations

import math
from typing import Any

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.calibration import CalibrationRow
from analysis.statistics.divergence import DivergenceGroup
from analysis.statistics.probabilities import OrderRow, ProbabilityDiff

from .markdown import Table, fmt
from .probability_json import probability_to_dict

__all__ = ["probability_diff_dict", "probability_diff_tables"]


def _pct(value: float) -> str:
    return fmt(100.0 * value, 1)


def _delta(a: float, b: float, digits: int = 1) -> str:
    return fmt(100.0 * (b - a), digits)


def _slack(g: DivergenceGroup | None) -> str:
    if g is None or g.holds is None:
        return "n/a"
    text = fmt(g.percent(g.slack))
    return text if g.holds else f"**{text} (violated)**"


def _scope(d: ProbabilityDiff) -> str:
    return (
        f"Both sides over the {d.n_common:,} interval outputs (job, decoder) ok in both runs "
        f"({d.only_a:,} only in A, {d.only_b:,} only in B, left out). Questions and order "
        "pairs are those of these outputs; their paths may differ between the runs."
    )


def _bound_table(d: ProbabilityDiff, suite: str, mark: str) -> Table:
    side_a = {(g.decoder, g.condition, g.n_cells, g.branching): g for g in d.a.divergence}
    side_b = {(g.decoder, g.condition, g.n_cells, g.branching): g for g in d.b.divergence}
    rows = []
    for key in dict.fromkeys([*side_a, *side_b]):
        a, b = side_a.get(key), side_b.get(key)
        g = a or b
        assert g is not None

        def any_e(x: DivergenceGroup | None) -> float:
            return math.nan if x is None else sum(r.diverged for r in x.depths) / x.n

        def pct(x: DivergenceGroup | None, cells: str) -> float:
            return math.nan if x is None else x.percent(getattr(x, cells))

        rows.append(
            (
                decoder_label(key[0], suite),
                condition_label(key[1]),
                f"{g.n:,}",
                _pct(any_e(a)),
                _pct(any_e(b)),
                fmt(pct(a, "mean_error")),
                fmt(pct(b, "mean_error")),
                fmt(pct(a, "bound")),
                fmt(pct(b, "bound")),
                f"{_slack(a)} / {_slack(b)}",
            )
        )
    header = (
        "Decoder",
        "Condition",
        "n",
        "Any E_d % A",
        "Any E_d % B",
        "Mean error A",
        "Mean error B",
        "Bound A",
        "Bound B",
        "Slack A / B",
    )
    notes = (
        _scope(d),
        "Mean error E|ŷ−y| and the paper's bound ε + Σ_d W_{d−1}·Pr(E_d) in % of U−L; Slack: "
        "bound minus mean error (the bound holds by construction); Any E_d: share of outputs "
        "whose path left y's interval (see `analyze`).",
    )
    return Table(f"First divergence, A and B{mark}", header, tuple(rows), notes, left=2)


def _calibration_table(d: ProbabilityDiff, suite: str, mark: str) -> Table:
    def index(rows: tuple[CalibrationRow, ...]) -> dict[tuple[str, str], CalibrationRow]:
        return {(r.decoder, r.condition): r for r in rows}

    def orders(rows: tuple[OrderRow, ...]) -> dict[tuple[str, str], OrderRow]:
        return {(r.decoder, r.condition): r for r in rows}

    cal_a, cal_b = index((*d.a.calibration, *d.a.pooled)), index((*d.b.calibration, *d.b.pooled))
    ord_a, ord_b = orders(d.a.orders), orders(d.b.orders)
    rows = []
    for key in dict.fromkeys([*cal_a, *cal_b]):
        a, b = cal_a.get(key), cal_b.get(key)
        oa, ob = ord_a.get(key), ord_b.get(key)
        nan = math.nan
        rows.append(
            (
                "All decoders" if key[0] == "all" else decoder_label(key[0], suite),
                condition_label(key[1]),
                f"{a.n if a else 0:,} / {b.n if b else 0:,}",
                fmt(100.0 * a.reliability.ece if a else nan, 1),
                fmt(100.0 * b.reliability.ece if b else nan, 1),
                _pct(a.accuracy if a else nan),
                _pct(b.accuracy if b else nan),
                fmt(100.0 * oa.gain if oa else nan, 1),
                fmt(100.0 * ob.gain if ob else nan, 1),
            )
        )
    header = (
        "Decoder",
        "Condition",
        "Questions A / B",
        "ECE A (pp)",
        "ECE B (pp)",
        "Accuracy A %",
        "Accuracy B %",
        "Averaged − best A (pp)",
        "Averaged − best B (pp)",
    )
    notes = (
        _scope(d),
        "ECE of the selected option's renormalised probability against its interval holding "
        "y (10 equal-width bins); Accuracy: share of those questions whose selection held y; "
        "Averaged − best: order-averaged distributions' argmax minus the better single order.",
    )
    return Table(
        f"Calibration and order averaging, A and B{mark}", header, tuple(rows), notes, left=2
    )


def probability_diff_tables(d: ProbabilityDiff, suite: str, mark: str) -> list[Table]:
    """The section's main figures for A and B; calibration only when both have probabilities."""
    tables = []
    if d.a.divergence or d.b.divergence:
        tables.append(_bound_table(d, suite, mark))
    if d.a.available and d.b.available:
        tables.append(_calibration_table(d, suite, mark))
    return tables


def probability_diff_dict(d: ProbabilityDiff) -> dict[str, Any]:
    """Both sides' full Probabilities numbers over the common outputs, with the counts."""
    return {
        "n_common": d.n_common,
        "only_a": d.only_a,
        "only_b": d.only_b,
        "rule": "each side computed only on (job, decoder) interval outputs ok in both runs",
        "a": probability_to_dict(d.a),
        "b": probability_to_dict(d.b),
    }
