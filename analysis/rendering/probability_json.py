"""The Probabilities section's numbers for ``analyze --json`` and ``diff --json``.

Probabilities are fractions in [0, 1]; lengths are in grid cells and in % of U−L; NaN is
written as null.
"""

from __future__ import annotations

import math
from typing import Any

from analysis.statistics.calibration import N_BINS, CalibrationRow
from analysis.statistics.divergence import DivergenceGroup
from analysis.statistics.probabilities import ProbabilityStats

from .distributions import distributions_to_dict
from .probabilities import no_probabilities_line

__all__ = ["probability_to_dict"]


def number(value: float) -> float | None:
    """A float for JSON, NaN as None (as ``json_numbers.number``, which imports this module)."""
    value = float(value)
    return None if math.isnan(value) else value


def _reliability_dict(row: CalibrationRow) -> dict[str, Any]:
    rel = row.reliability
    return {
        "decoder": row.decoder,
        "condition": row.condition,
        "n": rel.n,
        "mean_selected": number(row.mean_selected),
        "accuracy": number(row.accuracy),
        "ece": number(rel.ece),
        "ece_interval": [number(row.ece_interval[0]), number(row.ece_interval[1])],
        "entropy_right_bits": number(row.entropy_right),
        "entropy_wrong_bits": number(row.entropy_wrong),
        "n_wrong": row.n_wrong,
        "auroc_entropy": number(row.auroc),
        "bins": [
            {
                "lo": rel.edges[b],
                "hi": rel.edges[b + 1],
                "n": rel.count[b],
                "mean_p": number(rel.confidence[b]),
                "accuracy": number(rel.accuracy[b]),
            }
            for b in range(len(rel.count))
        ],
    }


def _group_dict(g: DivergenceGroup) -> dict[str, Any]:
    return {
        "decoder": g.decoder,
        "condition": g.condition,
        "N": g.n_cells,
        "K": g.branching,
        "n": g.n,
        "excluded": dict(g.excluded),
        "mean_abs_error_cells": number(g.mean_error),
        "bound_cells": number(g.bound),
        "sharper_bound_cells": number(g.sharper),
        "mean_abs_error_pct_range": number(g.percent(g.mean_error)),
        "bound_pct_range": number(g.percent(g.bound)),
        "sharper_bound_pct_range": number(g.percent(g.sharper)),
        "slack_pct_range": number(g.percent(g.slack)),
        "sharper_slack_pct_range": number(g.percent(g.sharper_slack)),
        "holds": g.holds,  # true by construction (a false one is a bug): see the slack
        "not_covered": g.not_covered,
        "outputs_beyond_their_term": g.beyond_term,
        "depths": [
            {
                "d": r.depth,
                "W_cells": r.w_cells,
                "at_risk": r.at_risk,
                "diverged": r.diverged,
                "pr_E_d": number(r.pr),
                "e_d": number(r.conditional),
                "error_share": number(r.error_share),
                "forced_share": number(r.forced_share),
                "questions_with_probabilities": r.questions,
                "mean_p_selected": number(r.mean_selected),
                "mean_p_true": number(r.mean_true),
                "accuracy": number(r.accuracy),
            }
            for r in g.depths
        ],
    }


def probability_to_dict(p: ProbabilityStats) -> dict[str, Any]:
    """The section's numbers for ``--json`` (probabilities as fractions, lengths in cells
    and in % of U−L, NaN as null)."""
    c = p.counts
    return {
        "available": p.available,
        "note": no_probabilities_line(p),
        "read": {
            "interval_outputs": p.units,
            "ok_outputs": p.outputs_read,
            "not_interval_outputs": dict(p.not_intervals),
            "answered": c.answered,
            "with_probabilities": c.with_probabilities,
            "without_probabilities": c.without_probabilities,
            "unusable": c.unusable,
            "choice_mismatch": c.choice_mismatch,
            "duplicates": c.duplicates,
            "raw_sum_min": number(c.raw_sum_min),
            "raw_sum_max": number(c.raw_sum_max),
            "raw_sum_outside_0.99_1.01": c.off_by_more_than_001,
            "renormalised": True,
            "missing_label_probability": 0.0,
        },
        "left_out": [{"decoder": d, "reason": r, "n": n} for d, r, n in p.left_out],
        "first_divergence": [_group_dict(g) for g in p.divergence],
        "calibration": {
            "bins": N_BINS,
            "binning": "equal width on [0, 1], last bin closed",
            "rows": [_reliability_dict(r) for r in p.calibration],
            "pooled": [_reliability_dict(r) for r in p.pooled],
        },
        "order_averaging": {
            "orders": list(p.order_names),
            "rows": [
                {
                    "decoder": r.decoder,
                    "condition": r.condition,
                    "n_questions": r.n,
                    "n_cases": r.n_cases,
                    p.order_names[0]: number(r.first),
                    p.order_names[1]: number(r.second),
                    "averaged": number(r.averaged),
                    "averaged_minus_best": number(r.gain),
                    "intervals": {
                        name: [number(lo), number(hi)]
                        for name, (lo, hi) in zip(
                            (*p.order_names, "averaged", "averaged_minus_best"),
                            r.intervals,
                            strict=True,
                        )
                    },
                }
                for r in p.orders
            ],
        },
        "distributions": distributions_to_dict(p),
    }
