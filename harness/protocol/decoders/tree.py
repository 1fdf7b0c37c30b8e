"""The NumericJev interval tree (Algorithm 1): K-way refinement of an index interval."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, NamedTuple

from harness.protocol.decoders.base import Answer, Decoded, Question
from harness.protocol.grid import Grid, check_options, partition
from harness.protocol.prompts import TREE, interval_text


@lru_cache(maxsize=65536)
def interval_criteria(grid: Grid, a: int, b: int, k: int) -> tuple[tuple[str, str], ...]:
    """Label ``j`` -> ``lower <= x < upper`` for Algorithm 1's partition of ``[a, b)``."""
    cuts = partition(a, b, k)
    return tuple(
        (str(j), interval_text(grid.bound_text(cuts[j]), grid.bound_text(cuts[j + 1])))
        for j in range(len(cuts) - 1)
    )


@lru_cache(maxsize=65536)
def tree_question(grid: Grid, subject: str, a: int, b: int, k: int, step: int | str) -> Question:
    """The question that partitions ``[a, b)`` at ``step`` (shared by every job that gets there).

    ``step`` becomes the question's key: the round for the greedy tree, ``round.slot`` for
    the beam, which asks several of these in one round.
    """
    return Question(str(step), f"{subject} {TREE}", interval_criteria(grid, a, b, k))


class TreeStep(NamedTuple):
    """One tree step: its question, the partition's cuts, and its trace records by option
    (built once, when a job first takes that option; shared read-only by every job)."""

    question: Question
    cuts: list[int]
    traced: list[dict[str, Any] | None]


class TreeSteps:
    """One grid's, subject's and K's tree steps by interval, memoised for the decoders that
    walk it: a question and its cuts are a dict lookup on ``(a, b, step)`` (the module's
    caches hash the grid, a Python-level ``__hash__``, on every call)."""

    LIMIT = 65536  # steps remembered (as the module's caches)

    def __init__(self, grid: Grid, subject: str, k: int) -> None:
        check_options(k, f"a {k}-way tree")
        partition(0, grid.n, k)  # validates K (once per grid and K, not per decoder)
        self.grid, self.subject, self.k = grid, subject, k
        self._steps: dict[tuple[int, int, int], TreeStep] = {}

    def at(self, a: int, b: int, step: int) -> TreeStep:
        """The step that partitions ``[a, b)`` at ``step``."""
        key = (a, b, step)
        found = self._steps.get(key)
        if found is None:
            if len(self._steps) >= self.LIMIT:
                self._steps.clear()
            question = tree_question(self.grid, self.subject, a, b, self.k, step)
            cuts = partition(a, b, self.k)
            found = self._steps[key] = TreeStep(question, cuts, [None] * (len(cuts) - 1))
        return found

    def traced(
        self, at: TreeStep, j: int, choice: str, a: int, b: int, step: int
    ) -> dict[str, Any]:
        """The trace record of choosing option ``j`` (label ``choice``) at ``at``, the step
        that partitions ``[a, b)`` at ``step``; memoised when ``choice`` is the option's
        label (a job's output writes one per step, with four bound texts, and the steps near
        the root are the same for most jobs of a grid)."""
        g, cuts = self.grid, at.cuts
        record = {
            "round": step,
            "choice": choice,
            "interval": [g.bound_text(cuts[j]), g.bound_text(cuts[j + 1])],
            "parent": [g.bound_text(a), g.bound_text(b)],
            "k": len(cuts) - 1,
        }
        if choice == str(j):
            at.traced[j] = record
        return record


@lru_cache(maxsize=1024)
def tree_steps(grid: Grid, subject: str, k: int) -> TreeSteps:
    """The shared ``TreeSteps`` of a grid, subject and K."""
    return TreeSteps(grid, subject, k)


@dataclass
class TreeDecoder:
    """Refine ``[a, b)`` into ``min(K, b-a)`` balanced parts until one cell is left."""

    grid: Grid
    subject: str
    k: int
    name: str = ""
    a: int = field(default=0, init=False)
    b: int = field(default=0, init=False)
    # (choice, chosen lo, chosen hi, parent a, parent b, k) per decision, as cell indices.
    trace: list[tuple[str, int, int, int, int, int]] = field(default_factory=list, init=False)
    # The same decisions as the output's trace records (``TreeSteps.traced``, shared).
    _traced: list[dict[str, Any]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self._steps = tree_steps(self.grid, self.subject, self.k)  # checks K
        self.b = self.grid.n
        self.name = self.name or f"tree{self.k}"

    def ready(self) -> list[Question]:
        """The next partition of the current interval, or nothing once one cell is left."""
        if self.b - self.a <= 1:
            return []
        return [self._steps.at(self.a, self.b, len(self.trace) + 1).question]

    def give(self, key: str, answer: Answer) -> None:
        """Move into the chosen part."""
        a, b, step = self.a, self.b, len(self.trace) + 1
        at = self._steps.at(a, b, step)
        cuts, choice = at.cuts, answer.choice
        j = int(choice)
        self.trace.append((choice, cuts[j], cuts[j + 1], a, b, len(cuts) - 1))
        record = at.traced[j]  # built by an earlier job that took this option, most often
        if record is None or record["choice"] != choice:
            record = self._steps.traced(at, j, choice, a, b, step)
        self._traced.append(record)
        self.a, self.b = cuts[j], cuts[j + 1]

    @property
    def done(self) -> bool:
        """Finished when the interval is a single cell."""
        return self.b - self.a <= 1

    def depths(self) -> tuple[int, int]:
        """Shallowest and deepest paths of the tree over the whole grid."""
        return tree_depth(self.grid.n, self.k)

    def result(self) -> Decoded:
        """The final cell's lower endpoint (paper: the returned value)."""
        g = self.grid
        cell = (g.bound(self.a), g.bound(self.a + 1))
        return Decoded(cell[0], cell, len(self.trace), tuple(self._traced), grid_index=self.a)


@cache
def tree_depth(n: int, k: int) -> tuple[int, int]:
    """Fewest and most sequential questions the tree can take on ``n`` cells."""
    if n <= 1:
        return 0, 0
    cuts = partition(0, n, k)
    depths = [tree_depth(cuts[j + 1] - cuts[j], k) for j in range(len(cuts) - 1)]
    return 1 + min(d[0] for d in depths), 1 + max(d[1] for d in depths)
