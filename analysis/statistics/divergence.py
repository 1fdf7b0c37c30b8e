"""The paper's first-divergence error bound, measured per decoder, condition and depth.

Paper, Proposition "First-divergence error bound" (symbols as there): E_d is the event that
the first selected interval excluding y occurs at depth d, W_{d−1} = ε⌈N/K^{d−1}⌉, and

    E|ŷ−y| ≤ ε + Σ_{d=1..D} W_{d−1}·Pr(E_d);

the Appendix's sharper form puts ε·Pr(no E_d) in place of ε. Here every Pr(E_d) is the
empirical rate over a group of outputs and both sides are divided by ε, so lengths are in
grid cells (ε = 1 cell, W_{d−1} = ⌈N/K^{d−1}⌉ cells); tables show them as % of U−L = N·ε,
the unit of NMAE. K is the number of options of the first question (N for direct choice).
The bound then holds on every run, not only in expectation: on E_d both ŷ and y lie in
the depth-(d−1) parent, so |ŷ−y| < W_{d−1}, and without a divergence |ŷ−y| < ε.

The conditional rate e_d = Pr(E_d | no divergence before d) (Appendix, "Conditional error
probabilities") is shown beside the returned probabilities it might be estimated by.
No I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from analysis.loading.columns.compact import narrow_type
from analysis.loading.probabilities.answer_log import gathered
from analysis.loading.probabilities.answers import AnswerLog
from analysis.loading.probabilities.interval_paths import INELIGIBLE, LEFT_OUT, ceil_div
from analysis.loading.probabilities.order_pairs import group_key

__all__ = ["DepthRow", "DivergenceGroup", "divergence_groups"]


@dataclass(frozen=True)
class DepthRow:
    """One depth d of one group. Shares are NaN where their denominator is 0."""

    depth: int
    w_cells: int  # W_{d−1}/ε = ⌈N/K^{d−1}⌉
    at_risk: int  # outputs whose path reached d with y still in the parent
    diverged: int  # outputs in E_d
    pr: float  # Pr(E_d) = diverged / n
    conditional: float  # e_d = diverged / at_risk
    error_share: float  # share of Σ|ŷ−y| from outputs in E_d
    forced_share: float  # of their error, the part the wrong turn at d forced
    questions: int  # answered with probabilities, an option holding y
    mean_selected: float  # mean renormalised probability of the selected option
    mean_true: float  # mean probability of the option holding y
    accuracy: float  # share of those questions whose selected option holds y


@dataclass(frozen=True)
class DivergenceGroup:
    """Outputs of one decoder × condition on one grid size N and first-question size K."""

    decoder: str
    condition: str
    n_cells: int
    branching: int
    n: int  # nested paths with an in-range target
    excluded: tuple[tuple[str, int], ...]  # outputs left out, by reason
    depths: tuple[DepthRow, ...]
    mean_error: float  # E|ŷ−y| in cells
    bound: float  # ε + Σ W_{d−1} Pr(E_d) in cells; NaN when the proof does not apply
    sharper: float  # ε·Pr(∩E_d^c) + Σ W_{d−1} Pr(E_d) in cells; NaN likewise
    not_covered: str | None  # why the proof does not apply (bound NaN), else None
    beyond_term: int  # outputs with |ŷ−y| not below their term (0 whenever it applies)

    @property
    def holds(self) -> bool | None:
        """Measured E|ŷ−y| ≤ bound (None when there is no bound)."""
        if np.isnan(self.bound):
            return None
        return self.beyond_term == 0 and self.mean_error <= self.bound

    @property
    def slack(self) -> float:
        """How loose the bound is on this run: bound minus E|ŷ−y|, in cells (NaN: no bound)."""
        return self.bound - self.mean_error

    @property
    def sharper_slack(self) -> float:
        """The same for the Appendix's sharper form."""
        return self.sharper - self.mean_error

    def percent(self, cells: float) -> float:
        """A length in cells as % of the range U−L."""
        return 100.0 * cells / self.n_cells


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else float("nan")


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _group(
    log: AnswerLog,
    units: np.ndarray,
    excluded: Counter[str],
    q_rows: np.ndarray,
    key: tuple[str, str, int, int],
) -> DivergenceGroup:
    u = log.units
    n_cells, branching = key[2], key[3]
    n = len(units)
    first = u["first_divergence"][units]
    error = u["error_cells"][units]
    forced = u["forced_cells"][units]
    counts = u["step_count"][units]
    total_error = float(error.sum())
    q_depth = log.q_depth[q_rows]
    answerable = log.per_question("holds", q_rows) >= 0
    rows = []
    bound = sharper = 1.0
    for d in range(1, int(counts.max(initial=0)) + 1):
        w = ceil_div(n_cells, branching ** (d - 1))
        hit = first == d
        diverged = int(hit.sum())
        at_risk = int((((first == 0) & (counts >= d)) | (first >= d)).sum())
        here = q_rows[(q_depth == d) & answerable]
        rows.append(
            DepthRow(
                depth=d,
                w_cells=w,
                at_risk=at_risk,
                diverged=diverged,
                pr=diverged / n,
                conditional=_share(diverged, at_risk),
                error_share=_share(float(error[hit].sum()), total_error),
                forced_share=_share(float(forced[hit].sum()), float(error[hit].sum())),
                questions=len(here),
                mean_selected=_mean(log.per_question("selected", here)),
                mean_true=_mean(log.per_question("true", here)),
                accuracy=_mean(log.per_question("holds", here).astype(np.float64)),
            )
        )
        bound += w * diverged / n
        sharper += w * diverged / n
    sharper -= float((first > 0).sum()) / n  # ε·Pr(∩E_d^c) = ε·(1 − Σ Pr(E_d))
    reasons = Counter(INELIGIBLE[c] for c in u["ineligible"][units] if c)
    not_covered = reasons.most_common(1)[0][0] if reasons else None
    if not_covered is not None:
        bound = sharper = float("nan")
        # "Forced" assumes ŷ lies in the interval chosen at the wrong turn; here it need not.
        rows = [replace(r, forced_share=float("nan")) for r in rows]
    return DivergenceGroup(
        decoder=key[0],
        condition=key[1],
        n_cells=n_cells,
        branching=branching,
        n=n,
        excluded=tuple(sorted(excluded.items())),
        depths=tuple(rows),
        mean_error=total_error / n,
        bound=bound,
        sharper=sharper,
        not_covered=not_covered,
        beyond_term=int(u["beyond_term"][units].sum()),
    )


def divergence_groups(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    mask: np.ndarray | None = None,
) -> tuple[DivergenceGroup, ...]:
    """One group per decoder × condition × (N, K) with nested interval paths, in the given
    decoder and condition order (others after, as first seen). ``mask`` selects units."""
    u = log.units
    keep = np.ones(len(log), bool) if mask is None else mask
    names = log.names
    kept = np.flatnonzero(keep)
    if not len(kept):
        return ()
    # Units grouped by their (decoder, condition, N, K) codes in numpy: a Python tuple per
    # unit took ~20 MB at 100× (409,600 units) for a few dozen groups.
    # One int per unit whose order is the rows' (not a stack of four int64 columns: 4 million
    # units at 1000×).
    columns = [u[name][kept] for name in ("decoder", "condition", "n_cells", "branching")]
    _, first, which = np.unique(group_key(columns), return_index=True, return_inverse=True)
    which = which.reshape(-1)
    distinct = np.stack([column[first].astype(np.int64) for column in columns], axis=1)
    del columns
    reason = u["ineligible"][kept]
    out = np.isin(reason, sorted(LEFT_OUT))
    members: dict[tuple[str, str, int, int], np.ndarray] = {}
    left_out: dict[tuple[str, str, int, int], Counter[str]] = {}
    for g, (d, c, n, k) in enumerate(distinct.tolist()):
        key = (names["decoder"][d], names["condition"][c], n, k)
        here = which == g
        if np.any(here & ~out):
            members[key] = kept[here & ~out]
        found, times = np.unique(reason[here & out], return_counts=True)
        left_out[key] = Counter(
            {INELIGIBLE[r]: int(t) for r, t in zip(found.tolist(), times.tolist(), strict=True)}
        )
    rank_d = {name: i for i, name in enumerate(decoders)}
    rank_c = {name: i for i, name in enumerate(conditions)}
    order = sorted(
        members,
        key=lambda k: (rank_d.get(k[0], len(rank_d)), rank_c.get(k[1], len(rank_c)), k[2], k[3]),
    )
    # Narrow: one per question below (13.7 million at 1000×), a group's questions found
    # by a scan each (in question order), not by an argsort of them all.
    in_group = np.full(len(log), -1, narrow_type(-1, len(order)))
    for g, key in enumerate(order):
        in_group[members[key]] = g
    q_group = gathered(in_group, log.q_unit)
    return tuple(
        _group(
            log,
            members[key],
            left_out.get(key, Counter()),
            np.flatnonzero(q_group == g),
            key,
        )
        for g, key in enumerate(order)
    )
