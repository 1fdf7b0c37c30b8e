"""``tree{K}_beam{B}``: Algorithm 1's tree searched with a beam of the B most probable paths
(docs/protocol.md, "Beam").

A node is an interval ``[a, b)`` of Algorithm 1's tree; its path probability is the product
of the returned probabilities (normalised over each question's labels) of the options taken
from the root to it. Each round asks the tree question of every kept node that is not yet a
single cell, all in ONE request (independent questions of one job round), and keeps the B
most probable nodes of the pool (their children and the leaves kept earlier; zero-probability
nodes dropped; ties to the greedy path, then to the lower interval). An answer without
probabilities counts as probability one on its selected label (``extra["one_hot_answers"]``
counts them). Depth: the greedy tree's (``tree_depth(N, K)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from harness.protocol.decoders.base import Answer, Decoded, Question
from harness.protocol.decoders.probabilities import one_hot, option_distribution, tidy
from harness.protocol.decoders.tree import tree_depth, tree_question
from harness.protocol.grid import Grid, check_options, partition


@dataclass(frozen=True)
class Node:
    """One interval of the tree with its path probability."""

    a: int
    b: int
    probability: Fraction
    greedy: bool  # every step to it was the selected label

    @property
    def leaf(self) -> bool:
        """True for a single cell."""
        return self.b - self.a <= 1

    def rank(self) -> tuple[Fraction, bool, int]:
        """Sort key: most probable first, then the greedy path, then the lower interval."""
        return (-self.probability, not self.greedy, self.a)


@dataclass
class BeamTreeDecoder:
    """Keep the ``beam`` most probable intervals per level; read out the most probable leaf."""

    grid: Grid
    subject: str
    k: int
    beam: int
    name: str = ""
    kept: list[Node] = field(default_factory=list, init=False)
    asked: dict[str, Node] = field(default_factory=dict, init=False)
    answers: dict[str, Answer] = field(default_factory=dict, init=False)
    trace: list[dict[str, Any]] = field(default_factory=list, init=False)
    one_hot_answers: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        check_options(self.k, f"a {self.k}-way tree")
        partition(0, self.grid.n, self.k)  # validates K
        if self.beam < 1:
            raise ValueError(f"a beam keeps at least one interval; got B={self.beam}")
        self.name = self.name or f"tree{self.k}_beam{self.beam}"
        self.kept = [Node(0, self.grid.n, Fraction(1), True)]
        self._open_round()

    def _open_round(self) -> None:
        """The questions of the next round: one per kept node that is not a single cell."""
        step = len(self.trace) + 1
        inner = [node for node in self.kept if not node.leaf]
        self.asked = {f"{step}.{i}": node for i, node in enumerate(inner, start=1)}
        self.answers = {}

    def ready(self) -> list[Question]:
        """This round's unanswered tree questions, in beam order."""
        g, k = self.grid, self.k
        return [
            tree_question(g, self.subject, node.a, node.b, k, key)
            for key, node in self.asked.items()
            if key not in self.answers
        ]

    def give(self, key: str, answer: Answer) -> None:
        """Record one answer; the round closes when all of its questions are answered."""
        if key not in self.asked:
            raise KeyError(f"{self.name} asked no question {key!r} this round")
        self.answers[key] = answer
        if len(self.answers) == len(self.asked):
            self._close_round()

    def _close_round(self) -> None:
        pool = [node for node in self.kept if node.leaf]
        for key, node in self.asked.items():
            answer = self.answers[key]
            cuts = partition(node.a, node.b, self.k)
            labels = [str(j) for j in range(len(cuts) - 1)]
            p = option_distribution(answer, labels)
            if p is None:
                p = one_hot(answer, labels)
                self.one_hot_answers += 1
            for j, label in enumerate(labels):
                probability = node.probability * p[j]
                if probability > 0:
                    greedy = node.greedy and label == answer.choice
                    pool.append(Node(cuts[j], cuts[j + 1], probability, greedy))
        pool.sort(key=Node.rank)
        self.kept = pool[: self.beam]
        g = self.grid
        self.trace.append(
            {
                "round": len(self.trace) + 1,
                "asked": [[g.bound_text(n.a), g.bound_text(n.b)] for n in self.asked.values()],
                "choices": [self.answers[key].choice for key in self.asked],
                "kept": [
                    [g.bound_text(n.a), g.bound_text(n.b), tidy(n.probability)] for n in self.kept
                ],
            }
        )
        self._open_round()

    @property
    def done(self) -> bool:
        """Finished when every kept interval is a single cell."""
        return all(node.leaf for node in self.kept)

    def depths(self) -> tuple[int, int]:
        """The greedy tree's depths: one level per round, read out at a leaf."""
        return tree_depth(self.grid.n, self.k)

    def result(self) -> Decoded:
        """The most probable kept leaf's lower endpoint."""
        best = self.kept[0]
        g = self.grid
        cell = (g.bound(best.a), g.bound(best.a + 1))
        extra: dict[str, Any] = {
            "path_probability": tidy(best.probability),
            "greedy_path": best.greedy,
        }
        if self.one_hot_answers:
            extra["one_hot_answers"] = self.one_hot_answers
        return Decoded(cell[0], cell, len(self.trace), tuple(self.trace), extra)
