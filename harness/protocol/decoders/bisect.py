"""``bisect{K}``: probabilistic bisection over the grid (Horstein 1963; Waeber, Frazier and
Henderson 2013), asked with the paper's interval questions (docs/protocol.md, "Probabilistic
bisection", gives the model, the stopping rules and the rounds):

    l_j = (1 - FLOOR) r_j + FLOOR / k,      posterior(i) ∝ prior(i) l_{j(i)}

Cut ``j`` is the cell boundary whose cumulative posterior mass is nearest to ``j/k`` (ties
to the lower), moved if needed so every interval holds a cell. (Taking the boundary *below*
the quantile, as Algorithm 1 does, can ask the same question forever: two tied cells holding
most of the mass are never separated.) It reads out the most probable cell's lower endpoint
(lower cell on ties). The arithmetic is exact (Fractions), which resume relies on; the
posterior is stored as runs of cells with equal weight (at most ``1 + rounds (k - 1)``), so
a million-cell grid costs no more than a small one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from harness.protocol.decoders.base import Answer, Decoded, Question
from harness.protocol.decoders.probabilities import one_hot, option_distribution, tidy
from harness.protocol.decoders.tree import tree_depth
from harness.protocol.grid import Grid, check_options
from harness.protocol.prompts import TREE, interval_text

FLOOR = Fraction(1, 20)  # the uniform share mixed into every likelihood
STOP_MASS = Fraction(9, 10)  # stop once one cell holds more than this share
EXTRA_ROUNDS = 4  # rounds allowed beyond the greedy tree's depth


@dataclass(frozen=True)
class Run:
    """Cells ``[a, b)``, each with posterior weight ``w`` (unnormalised)."""

    a: int
    b: int
    w: Fraction


def quantile_cuts(runs: list[Run], n: int, k: int) -> list[int]:
    """Cut points ``0 = c_0 < c_1 < ... < c_k = n`` at the posterior's ``j/k`` quantiles."""
    total = sum((r.w * (r.b - r.a) for r in runs), Fraction(0))
    cuts = [0]
    for j in range(1, k):
        q = total * j / k
        below = Fraction(0)  # mass of the cells before run r
        cut = n
        for r in runs:
            mass = r.w * (r.b - r.a)
            if below + mass < q:
                below += mass
                continue
            # Boundaries a + t hold mass below + t w; take the t nearest to q, ties down.
            t = (q - below) / r.w
            whole = math.floor(t)
            cut = r.a + whole + (1 if t - whole > Fraction(1, 2) else 0)
            break
        cut = max(cut, cuts[-1] + 1)  # every interval keeps a cell ...
        cuts.append(min(cut, n - (k - j)))  # ... and leaves one for each interval after it
    cuts.append(n)
    return cuts


def update(runs: list[Run], cuts: list[int], likelihood: list[Fraction]) -> list[Run]:
    """Multiply the weights of interval ``j`` (``[cuts[j], cuts[j+1])``) by ``likelihood[j]``."""
    out: list[Run] = []
    for r in runs:
        for j, lik in enumerate(likelihood):
            a, b = max(r.a, cuts[j]), min(r.b, cuts[j + 1])
            if a >= b:
                continue
            w = r.w * lik
            if out and out[-1].w == w and out[-1].b == a:
                out[-1] = Run(out[-1].a, b, w)  # merge equal neighbours
            else:
                out.append(Run(a, b, w))
    return out


def fewest_rounds(n: int, k: int, floor: Fraction = FLOOR, stop: Fraction = STOP_MASS) -> int:
    """A lower bound on the rounds any answers need before one cell holds ``stop``.

    One round multiplies two cells' weight ratio by at most ``R = l_max / l_min =
    (1 - floor + floor/k) / (floor/k)``, so after r rounds a cell holds at most
    ``R^r / (R^r + n - 1)``.
    """
    if n <= 1:
        return 0
    ratio = (1 - floor + floor / k) / (floor / k)
    need = stop * (n - 1) / (1 - stop)
    rounds, power = 0, Fraction(1)
    while power <= need:
        rounds, power = rounds + 1, power * ratio
    return rounds


@dataclass
class BisectionDecoder:
    """Probabilistic bisection into K intervals per round; see the module docstring."""

    grid: Grid
    subject: str
    k: int
    name: str = ""
    runs: list[Run] = field(default_factory=list, init=False)
    trace: list[dict[str, Any]] = field(default_factory=list, init=False)
    stop: str = field(default="", init=False)
    one_hot_answers: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        check_options(self.k, f"a {self.k}-way bisection")
        if self.k < 2:
            raise ValueError(f"bisection needs K >= 2; got K={self.k}")
        self.name = self.name or f"bisect{self.k}"
        self.runs = [Run(0, self.grid.n, Fraction(1))]
        self.budget = tree_depth(self.grid.n, self.k)[1] + EXTRA_ROUNDS
        self._check_stop()

    @property
    def parts(self) -> int:
        """Intervals per question: ``min(K, N)``."""
        return min(self.k, self.grid.n)

    def _top(self) -> tuple[Run, Fraction]:
        """The run holding the most probable cell (lowest first on ties), and that cell's mass."""
        total = sum((r.w * (r.b - r.a) for r in self.runs), Fraction(0))
        top = max(self.runs, key=lambda r: (r.w, -r.a))
        return top, top.w / total

    def _check_stop(self) -> None:
        _, mass = self._top()
        if mass > STOP_MASS:
            self.stop = "threshold"
        elif len(self.trace) >= self.budget:
            self.stop = "budget"

    def _cuts(self) -> list[int]:
        return quantile_cuts(self.runs, self.grid.n, self.parts)

    def ready(self) -> list[Question]:
        """The next round's interval question, or nothing once stopped."""
        if self.done:
            return []
        g, cuts = self.grid, self._cuts()
        criteria = tuple(
            (str(j), interval_text(g.bound_text(cuts[j]), g.bound_text(cuts[j + 1])))
            for j in range(len(cuts) - 1)
        )
        return [Question(str(len(self.trace) + 1), f"{self.subject} {TREE}", criteria)]

    def give(self, key: str, answer: Answer) -> None:
        """Update the posterior by the answer's likelihood."""
        cuts = self._cuts()
        labels = [str(j) for j in range(len(cuts) - 1)]
        r = option_distribution(answer, labels)
        if r is None:
            r = one_hot(answer, labels)
            self.one_hot_answers += 1
        k = len(labels)
        likelihood = [(1 - FLOOR) * p + FLOOR / k for p in r]
        self.runs = update(self.runs, cuts, likelihood)
        top, mass = self._top()
        g = self.grid
        self.trace.append(
            {
                "round": len(self.trace) + 1,
                "choice": answer.choice,
                "cuts": [g.bound_text(c) for c in cuts],
                "top": [g.bound_text(top.a), g.bound_text(top.a + 1)],
                "mass": tidy(mass),
            }
        )
        self._check_stop()

    @property
    def done(self) -> bool:
        """Stopped by the threshold or the round budget."""
        return bool(self.stop)

    def depths(self) -> tuple[int, int]:
        """Fewest rounds any answers can stop in (``fewest_rounds``), and the round budget."""
        return min(fewest_rounds(self.grid.n, self.parts), self.budget), self.budget

    def result(self) -> Decoded:
        """The most probable cell's lower endpoint."""
        top, mass = self._top()
        g = self.grid
        cell = (g.bound(top.a), g.bound(top.a + 1))
        extra: dict[str, Any] = {"stop": self.stop, "mass": tidy(mass)}
        if self.one_hot_answers:
            extra["one_hot_answers"] = self.one_hot_answers
        return Decoded(cell[0], cell, len(self.trace), tuple(self.trace), extra)
