"""A ``compare --sequential`` comparison judged at its looks: where the rule stopped each cell,
whether it stopped asking, and what that saved (no I/O).

The plan (``options.sequential`` in ``compare.json``: looks, seed, margin, each suite's
family order) fixes which families each look asked, so the state after any look is
recomputed from the run folders alone: the harness asks ``SequentialOutcome.settled`` after
each look (``comparison.sequential_look``), and the summary shows the outcome kept on the
``Comparison`` (``Comparison.sequential``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runfolder import look_sizes

from .decisions import Verdict
from .family_test import Method
from .sequential import SequentialPath, StopReason, sequential_replay

__all__ = ["SequentialOutcome", "sequential_outcome"]


@dataclass(frozen=True, eq=False)
class SequentialOutcome:
    """The rule over the looks taken: each cell's stop (``path``), the families asked, and
    the requests and cost asked, against the full suite projected at the same per family."""

    path: SequentialPath
    cells: tuple[str, ...]  # "model · decoder · condition", in the path's column order
    taken: int  # looks taken
    families: int  # the suite's families
    asked: int  # families asked by the looks taken
    unasked: frozenset[str]  # families the looks taken did not ask
    requests: int
    cost_usd: float
    lower_is_better: bool

    @property
    def looks(self) -> int:
        """The looks planned."""
        return len(self.path.sizes)

    @property
    def settled(self) -> bool:
        """Every cell has stopped: the comparison asks no further look."""
        return self.path.settled

    @property
    def stopped_early(self) -> bool:
        """The rule stopped the comparison before its last look: the families it did not
        ask are left unasked on purpose, not unfinished."""
        return self.settled and self.taken < self.looks

    @property
    def share(self) -> float:
        """The share of the suite's families asked."""
        return self.asked / self.families

    @property
    def requests_full(self) -> float:
        """The requests the full suite would have asked, projected per family."""
        return self.requests / self.share

    @property
    def cost_full(self) -> float:
        """The cost of the full suite, projected per family."""
        return self.cost_usd / self.share

    def unasked_jobs(self, n_jobs: int | None) -> int:
        """A run's pending jobs that the rule chose not to ask (0 unless it stopped early):
        the unasked families' share of its ``n_jobs`` (a suite's families hold equal
        shares of its jobs); any pending beyond them is missing, not unasked."""
        if not self.stopped_early or n_jobs is None:
            return 0
        return round(n_jobs * len(self.unasked) / self.families)

    def called(self, i: int) -> Verdict | None:
        """Cell ``i``'s decided direction, better or worse; None when not decided."""
        if self.path.reason[i] is not StopReason.DECIDED:
            return None
        worse = float(self.path.sign[i]) * (1 if self.lower_is_better else -1) > 0
        return Verdict.WORSE if worse else Verdict.BETTER


def sequential_outcome(
    plan: Mapping[str, Any],
    suite: str,
    axis: Sequence[str],
    family_diffs: np.ndarray,
    family_counts: np.ndarray,
    cells: Sequence[str],
    *,
    requests: int,
    cost_usd: float,
    lower_is_better: bool,
    method: Method,
    look: int | None = None,
) -> SequentialOutcome:
    """The rule over ``look`` looks (None: as many as the families with outputs hold) of a
    suite whose (later model, F, D, C) family sums and counts run along ``axis`` (the
    families with outputs, in order)."""
    order = [str(f) for f in plan["order"][suite]]
    sizes = look_sizes(len(order), int(plan["looks"]))
    have = set(axis)
    taken = look or max((i + 1 for i, n in enumerate(sizes) if set(order[:n]) <= have), default=1)
    rows = [list(axis).index(f) for f in order[: sizes[taken - 1]]]
    diffs = np.concatenate([d[rows].reshape(len(rows), -1) for d in family_diffs], axis=1)
    counts = np.concatenate([n[rows].reshape(len(rows), -1) for n in family_counts], axis=1)
    # Families never asked are padded with zeros: the replay reads only the looks taken.
    pad = len(order) - len(rows)
    diffs = np.vstack([diffs, np.zeros((pad, diffs.shape[1]))])
    counts = np.vstack([counts, np.zeros((pad, counts.shape[1]))])
    path = sequential_replay(
        diffs,
        counts,
        n_looks=int(plan["looks"]),
        margin=float(plan["margin"]),
        upto=taken,
        method=method,
    )
    return SequentialOutcome(
        path=path,
        cells=tuple(cells),
        taken=taken,
        families=len(order),
        asked=sizes[taken - 1],
        unasked=frozenset(order[sizes[taken - 1] :]),
        requests=requests,
        cost_usd=cost_usd,
        lower_is_better=lower_is_better,
    )
