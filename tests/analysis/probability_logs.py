"""Hand-made run folders for the Probabilities tests: tree paths that go wrong where a test
says, and requests.jsonl lines that answer them with chosen probabilities.

No harness: like ``analysis_runs``, these write the run-folder contract directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from analysis_runs import manifest

__all__ = [
    "LogWriter",
    "Path_",
    "exact_bound_cells",
    "tree_path",
]


def _cuts(a: int, b: int, k: int) -> list[int]:
    return [a + (b - a) * j // k for j in range(k + 1)]


@dataclass(frozen=True)
class Path_:
    """A tree decoder's path: per step (a, b, k, chosen j)."""

    steps: tuple[tuple[int, int, int, int], ...]

    @property
    def final(self) -> int:
        """The lower endpoint (cell index) of the last selected interval."""
        a, b, k, j = self.steps[-1]
        return _cuts(a, b, k)[j]


def tree_path(n_cells: int, k_max: int, pick: Any) -> Path_:
    """Algorithm 1 on [0, n_cells): ``pick(depth, a, b, cuts) -> j`` chooses each child."""
    a, b, steps = 0, n_cells, []
    while b - a > 1:
        k = min(k_max, b - a)
        cuts = _cuts(a, b, k)
        j = pick(len(steps) + 1, a, b, cuts)
        steps.append((a, b, k, j))
        a, b = cuts[j], cuts[j + 1]
    return Path_(tuple(steps))


def true_child(cell: int) -> Any:
    """A ``pick`` that always selects the child holding ``cell`` (or the last child)."""

    def pick(depth: int, a: int, b: int, cuts: list[int]) -> int:
        return next((j for j in range(len(cuts) - 1) if cuts[j] <= cell < cuts[j + 1]), 0)

    return pick


def exact_bound_cells(
    errors: Sequence[Decimal], first: Sequence[int], n_cells: int, k: int
) -> tuple[Decimal, Decimal]:
    """(Σ|ŷ−y|/ε, n·1 + Σ_d ⌈N/K^{d−1}⌉·#E_d), both exact: the paper's bound times n."""
    bound = Decimal(len(errors))
    for d in first:
        if d:
            bound += -(-n_cells // k ** (d - 1))
    return sum(errors, Decimal(0)), bound


@dataclass
class LogWriter:
    """Collects outputs and requests lines, then writes a run folder."""

    lower: Decimal = Decimal(0)
    eps: Decimal = Decimal(1)
    n_cells: int = 100
    outputs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def bound(self, i: int) -> str:
        return str(self.lower + self.eps * i)

    def tree_output(
        self,
        job: str,
        decoder: str,
        target: Decimal,
        path: Path_,
        *,
        value: Decimal | None = None,
        condition: str = "arithmetic",
        order: str = "ascending",
        case: str = "c",
        repeat: int = 0,
    ) -> dict[str, Any]:
        """An ok output whose trace is ``path``; the value is the final cell unless given."""
        trace = []
        for depth, (a, b, k, j) in enumerate(path.steps, start=1):
            cuts = _cuts(a, b, k)
            trace.append(
                {
                    "round": depth,
                    "choice": str(j),
                    "interval": [self.bound(cuts[j]), self.bound(cuts[j + 1])],
                    "parent": [self.bound(a), self.bound(b)],
                    "k": k,
                }
            )
        found = self.lower + self.eps * path.final if value is None else value
        record = self._output(job, decoder, target, found, trace, condition, order, case, repeat)
        self.outputs.append(record)
        return record

    def _output(
        self,
        job: str,
        decoder: str,
        target: Decimal,
        value: Decimal,
        trace: list[dict[str, Any]],
        condition: str,
        order: str,
        case: str,
        repeat: int,
    ) -> dict[str, Any]:
        return {
            "job": job,
            "suite": "affine",
            "case": case,
            "family": 0,
            "domain": "int",
            "condition": condition,
            "order": order,
            "repeat": repeat,
            "decoder": decoder,
            "target": str(target),
            "L": str(self.lower),
            "eps": str(self.eps),
            "N": self.n_cells,
            "value": str(value),
            "cell": [str(value), str(value + self.eps)],
            "rounds": len(trace),
            "trace": trace,
            "status": "ok",
            "simulated": True,
        }

    def raw_output(self, record: dict[str, Any]) -> None:
        """Any outputs.jsonl record, as given."""
        self.outputs.append(record)

    def answers(
        self,
        job: str,
        rnd: int,
        questions: dict[str, tuple[str, list[str], str, dict[str, Any] | None]],
        *,
        error: dict[str, Any] | None = None,
    ) -> None:
        """One requests.jsonl line: qid -> (``decoder/step``, labels as listed, choice, probs)."""
        request = {
            "model": "sim",
            "state": {"expression": "1 + 1"},
            "questions": {
                qid: {
                    "type": "choice",
                    "instructions": "…",
                    "criteria": {label: f"option {label}" for label in labels},
                }
                for qid, (_, labels, _, _) in questions.items()
            },
        }
        answers: dict[str, Any] = {}
        for qid, (_, _, choice, probabilities) in questions.items():
            answer: dict[str, Any] = {"type": "choice", "choice": choice}
            if probabilities is not None:
                answer["probabilities"] = probabilities
            answers[qid] = answer
        self.requests.append(
            {
                "job": job,
                "round": rnd,
                "t": 1795000000.0 + rnd,
                "request": request,
                "qmap": {qid: where for qid, (where, _, _, _) in questions.items()},
                "attempt": 1,
                "latency_ms": 1.0,
                "status": None if error else 200,
                "response": None if error else {"model": "sim", "answers": answers},
                "error": error,
                "model": "sim",
                "usage": None,
                "cost_usd": None,
                "request_id": None,
            }
        )

    def answer_path(
        self,
        job: str,
        decoder: str,
        path: Path_,
        probabilities: Any = None,
        reverse: bool = False,
    ) -> None:
        """Answer every step of ``path`` in its own round; ``probabilities(depth, k, j)``
        gives each answer's probabilities (None: one-hot on the choice)."""
        for depth, (_, _, k, j) in enumerate(path.steps, start=1):
            labels = [str(i) for i in range(k)]
            if reverse:
                labels.reverse()
            probs = (
                {str(i): 1.0 if i == j else 0.0 for i in range(k)}
                if probabilities is None
                else probabilities(depth, k, j)
            )
            self.answers(job, depth, {"q1": (f"{decoder}/{depth}", labels, str(j), probs)})

    def write(self, folder: Path, **manifest_fields: Any) -> Path:
        """Write manifest.json, outputs.jsonl and requests.jsonl into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        fields = {"decoders": sorted({o["decoder"] for o in self.outputs})}
        fields.update(manifest_fields)
        (folder / "manifest.json").write_bytes(orjson.dumps(manifest(run_id=folder.name, **fields)))

        def lines(records: list[dict[str, Any]]) -> bytes:
            return b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records)

        (folder / "outputs.jsonl").write_bytes(lines(self.outputs))
        (folder / "requests.jsonl").write_bytes(lines(self.requests))
        return folder
