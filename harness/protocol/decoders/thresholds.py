"""Threshold decoders: adaptive and parallel ``x <= z`` comparisons, and the threshold CDF.

Paper, Appendix "Exploratory Records" and Appendix "CDF Construction and Its Limits". The
parallel comparisons are asked at ``z_i = L + (i-1)*eps`` (``i = 1 .. N-1``), the largest
grid value below each interior cell boundary, so mass ``w_i = f_{i+1} - f_i`` belongs to
grid value ``L + i*eps`` (docs/protocol.md, "Threshold positions", says why these
positions); thresholds are written with exact decimals (``x <= 0.4375``), never floats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from harness.protocol.decoders.base import Answer, Decoded, Question, answer_probability
from harness.protocol.decoders.cdf import (
    decreases,
    histogram_masses,
    isotonic_projection,
    midpoint_mean,
    modal_index,
)
from harness.protocol.decoders.probabilities import tidy
from harness.protocol.decoders.tree import tree_depth
from harness.protocol.grid import MAX_OPTIONS, Grid, GridError, fmt, partition
from harness.protocol.prompts import THRESHOLD_LABELS, threshold_criteria, threshold_instruction

YES, NO = THRESHOLD_LABELS


def probability_at_most(answer: Answer) -> float:
    """``p_yes / (p_yes + p_no)`` for one yes/no pair (paper: "normalizes each yes/no pair").

    A label missing from the probabilities counts as zero. Falls back to the selected label
    as 1 or 0 when the model returned no probabilities, or none for either label.
    """
    if answer.probabilities is not None:
        # Negative values are not probabilities; treat them as no support for that label.
        p_yes = max(answer_probability(answer, YES) or 0.0, 0.0)
        p_no = max(answer_probability(answer, NO) or 0.0, 0.0)
        if p_yes + p_no > 0:
            return min(p_yes / (p_yes + p_no), 1.0)
    return 1.0 if answer.choice == YES else 0.0


def threshold_question(key: str, subject: str, z: Decimal) -> Question:
    """The yes/no question ``x <= z``."""
    return Question(key, threshold_instruction(subject, z), threshold_criteria(z))


@dataclass
class AdaptiveThresholdDecoder:
    """Binary search with ``x <= z`` questions at Algorithm 1's K = 2 split ``m``: "yes"
    keeps ``[a, m)``, "no" keeps ``[m, b)``."""

    grid: Grid
    subject: str
    name: str = "adaptive_thresholds"
    a: int = field(default=0, init=False)
    b: int = field(default=0, init=False)
    trace: list[dict[str, Any]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.b = self.grid.n

    def _split(self) -> int:
        return partition(self.a, self.b, 2)[1]

    def ready(self) -> list[Question]:
        """The comparison at the middle of the current interval."""
        if self.done:
            return []
        z = self.grid.bound(self._split() - 1)
        return [threshold_question(str(len(self.trace) + 1), self.subject, z)]

    def give(self, key: str, answer: Answer) -> None:
        """Keep the lower half on "yes", the upper half otherwise."""
        m = self._split()
        z = self.grid.bound(m - 1)
        if answer.choice == YES:
            self.b = m
        else:
            self.a = m
        self.trace.append(
            {
                "round": len(self.trace) + 1,
                "choice": answer.choice,
                "threshold": fmt(z),
                "interval": [fmt(self.grid.bound(self.a)), fmt(self.grid.bound(self.b))],
            }
        )

    @property
    def done(self) -> bool:
        """Finished when one grid value is left."""
        return self.b - self.a <= 1

    def depths(self) -> tuple[int, int]:
        """The depths of a binary interval tree on the same grid."""
        return tree_depth(self.grid.n, 2)

    def result(self) -> Decoded:
        """The remaining grid value."""
        g = self.grid
        cell = (g.bound(self.a), g.bound(self.a + 1))
        return Decoded(cell[0], cell, len(self.trace), tuple(self.trace))


@dataclass
class _AllThresholds:
    """The ``N - 1`` comparisons at every interior boundary, asked together in one round."""

    grid: Grid
    subject: str
    name: str = ""
    answers: dict[int, Answer] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.grid.n - 1 > MAX_OPTIONS:
            raise GridError(
                f"{self.name} asks one question per interior boundary, {self.grid.n - 1} here; "
                f"use a grid of at most {MAX_OPTIONS + 1} values"
            )

    def thresholds(self) -> list[Decimal]:
        """``z_i = L + (i-1)*eps`` for ``i = 1 .. N-1``, ascending."""
        return [self.grid.bound(i - 1) for i in range(1, self.grid.n)]

    def ready(self) -> list[Question]:
        """Every comparison not yet answered (they are independent)."""
        return [
            threshold_question(f"t{i}", self.subject, z)
            for i, z in enumerate(self.thresholds(), start=1)
            if i not in self.answers
        ]

    def give(self, key: str, answer: Answer) -> None:
        """Take one comparison; ``key`` is ``t<i>``."""
        self.answers[int(key[1:])] = answer

    @property
    def done(self) -> bool:
        """Finished when every comparison is in."""
        return len(self.answers) == self.grid.n - 1

    def depths(self) -> tuple[int, int]:
        """One round (none on a one-value grid)."""
        rounds = 1 if self.grid.n > 1 else 0
        return rounds, rounds

    def _read(self) -> tuple[list[dict[str, Any]], dict[str, Any], list[float]]:
        """Trace, common extra fields and masses from the answers."""
        zs = self.thresholds()
        raw = [probability_at_most(self.answers[i]) for i in range(1, self.grid.n)]
        projected = isotonic_projection(raw)
        masses = histogram_masses(projected)
        trace = [
            {"round": 1, "threshold": fmt(z), "choice": self.answers[i].choice, "p": tidy(p)}
            for i, (z, p) in enumerate(zip(zs, raw, strict=True), start=1)
        ]
        extra = {
            "thresholds": [fmt(z) for z in zs],
            "raw": [tidy(p) for p in raw],
            "projected": [tidy(f) for f in projected],
            "masses": [tidy(w) for w in masses],
            "decreased": decreases(raw),
        }
        return trace, extra, masses

    def _decoded(self, index: int, trace: list[dict[str, Any]], extra: dict[str, Any]) -> Decoded:
        g = self.grid
        cell = (g.bound(index), g.bound(index + 1))
        return Decoded(cell[0], cell, self.depths()[0], tuple(trace), extra)


@dataclass
class ParallelThresholdDecoder(_AllThresholds):
    """Modal mass of the isotonic threshold CDF, lower value on ties (a point read-out)."""

    name: str = "parallel_thresholds"

    def result(self) -> Decoded:
        """The grid value holding the largest projected mass."""
        trace, extra, masses = self._read()
        index = modal_index(masses)
        return self._decoded(index, trace, {**extra, "mode": fmt(self.grid.bound(index))})


@dataclass
class ThresholdCdfDecoder(_AllThresholds):
    """The threshold CDF read-out: the histogram's midpoint mean, snapped down to its cell.

    The masses sit on the grid cells ``[b_i, b_{i+1})``; their midpoint-weighted mean
    (paper, Appendix "CDF Construction") is a number between grid values, so the decoded
    value is the lower end of the cell holding the mean. This is a different read-out from
    ``parallel_thresholds`` (modal mass) on the same questions, and like it, unvalidated as
    a distribution: ``extra`` keeps the raw answers and whether they decreased.
    """

    name: str = "threshold_cdf"

    def result(self) -> Decoded:
        """The cell of the midpoint mean; ``extra["mean"]`` is the mean itself."""
        trace, extra, masses = self._read()
        g = self.grid
        mean = midpoint_mean([g.bound(i) for i in range(g.n + 1)], masses)
        index = min(max(g.index_of(mean), 0), g.n - 1)
        return self._decoded(index, trace, {**extra, "mean": _mean_text(mean, g.places + 6)})


def _mean_text(mean: Fraction, digits: int) -> str:
    """The mean as a decimal string rounded to ``digits`` places (it can be non-terminating)."""
    with localcontext() as ctx:
        ctx.prec = 60
        value = Decimal(mean.numerator) / Decimal(mean.denominator)
        return fmt(value.quantize(Decimal(1).scaleb(-digits)))
