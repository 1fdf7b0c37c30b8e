"""The returned probabilities of every interval question, joined with its output's path.

Second streaming pass behind the Probabilities section: each answered line of
``requests.jsonl`` is read once and reduced at once to a few numbers per question, so a
1.5 GB log is never held in memory. The join runs through ``qmap``: question id ->
``decoder/<round>``, and (job, decoder) -> the unit read from outputs.jsonl
(``interval_paths.py``); the round picks the step of its trace.

Probabilities are read as the server sent them (Jev rounds them to 2 decimals, so they may
not sum to 1): a label missing from ``probabilities`` gets 0, a value that is not a number
counts as 0, and the vector over the question's criteria labels is renormalised to sum 1.
An answer whose label is not the one its trace recorded is not used (and counted).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from runfolder import JsonlReader, RequestLine, stored

from .answer_outcomes import MISMATCH, WITH, WITHOUT, Outcome, evaluate
from .answer_pairs import LabelSets, PairScorer
from .compact import narrow
from .interval_paths import PathTable, read_paths
from .request_parts import RequestParts

# Distinct (answer, question, step) outcomes kept, at most (a 100× sim run has 6,191).
_KEPT = 50_000

__all__ = ["AnswerCounts", "AnswerLog", "AnswersJoin", "load_answers", "order_pair"]


@dataclass(frozen=True)
class AnswerCounts:
    """What the join found among the answers to the units' questions."""

    requests_present: bool
    answered: int  # answers to a unit's question, first per (unit, step)
    with_probabilities: int  # of those: probabilities read and renormalised
    without_probabilities: int  # no ``probabilities`` object
    unusable: int  # probabilities summing to 0, or a label count that does not fit the step
    choice_mismatch: int  # selected label differs from the trace: not used
    duplicates: int  # a second answer to the same (unit, step): not used
    off_by_more_than_001: int  # raw sums outside [0.99, 1.01] (before renormalising)
    pairs_without_truth: int  # questions both orders shared after both left y's interval
    raw_sum_min: float
    raw_sum_max: float


@dataclass(frozen=True, eq=False)
class AnswerLog:
    """Interval-path units and, per answered question with probabilities, one row.

    ``units`` holds the unit columns of ``interval_paths.PathTable`` (codes into
    ``names``); the steps themselves are dropped once joined. ``pair_first``,
    ``pair_second`` and ``pair_depth`` list every question both option orders shared.
    Question columns (``q_*``): unit, depth, options, renormalised probability of the
    selected option and of the option holding y (NaN when none does), whether the selected
    interval holds y (1, 0; -1 when no option does), the entropy in bits (the raw sums are
    only tallied, in ``counts``).
    Pair columns (``pair_id`` and ``pair_*_right``): the shared questions that both orders
    answered with probabilities while an option still held y: whether each order's selected
    label is the true one, and whether the averaged distribution's argmax is (1/t for a
    t-way tie that includes it).
    """

    units: dict[str, np.ndarray]
    names: dict[str, tuple[str, ...]]
    pair_first: np.ndarray
    pair_second: np.ndarray
    pair_depth: np.ndarray
    outputs_read: int  # distinct ok outputs
    not_intervals: tuple[tuple[str, int], ...]  # (decoder, ok outputs) not interval choices
    q_unit: np.ndarray
    q_depth: np.ndarray
    q_options: np.ndarray
    q_selected: np.ndarray
    q_true: np.ndarray
    q_holds: np.ndarray
    q_entropy: np.ndarray
    q_first: np.ndarray  # the first of identical questions in its request (pooled rows)
    pair_id: np.ndarray
    pair_first_right: np.ndarray
    pair_second_right: np.ndarray
    pair_averaged_right: np.ndarray
    counts: AnswerCounts

    def __len__(self) -> int:
        return len(self.units["job"])

    @property
    def has_probabilities(self) -> bool:
        """True when at least one interval question came back with probabilities."""
        return len(self.q_unit) > 0

    def keys(self) -> list[tuple[str, str]]:
        """(job, decoder) of every unit, in unit order."""
        jobs, decoders = self.names["job"], self.names["decoder"]
        return [
            (jobs[j], decoders[d])
            for j, d in zip(self.units["job"].tolist(), self.units["decoder"].tolist(), strict=True)
        ]


class AnswersJoin:
    """Accumulates question rows while requests.jsonl streams past; the order pairs are
    matched and scored in NumPy a chunk at a time (``answer_pairs.PairScorer``)."""

    def __init__(self, paths: PathTable) -> None:
        self.paths = paths
        self.rows = {name: array("d") for name in ("selected", "true", "entropy")}
        # Compact types: 1.4 million rows in a 100× affine run.
        self.ints = {"unit": array("i"), "depth": array("h"), "options": array("h")}
        self.ints["holds"] = array("b")
        # 1 on the first of identical questions in one request (tree, tree_mean and
        # tree_median ask the same ones): pooled figures count each distinct question once.
        self.ints["first"] = array("b")
        self.sets = LabelSets()
        self.pairs = PairScorer(self.sets)  # rows at a shared step
        # Bit d set: step d already answered (deeper steps, > 63, are not checked for repeats).
        self.seen = array("Q", bytes(8 * len(paths)))
        self.tally = dict.fromkeys(
            ("answered", "with", "without", "unusable", "mismatch", "duplicates", "off"), 0
        )
        self.raw_min, self.raw_max = math.inf, -math.inf
        # Memoryviews index to plain ints ~5× faster than numpy scalars: this loop runs
        # once per question (1.4 million in a 100× affine run).
        self.start = paths.unit["step_start"].data
        self.count = paths.unit["step_count"].data
        self.columns = {name: paths.step[name].data for name in paths.step}
        self.choices = paths.names["choice"]
        self.job_codes, self.decoder_codes = paths.codes["job"], paths.codes["decoder"]
        self.n_decoders = len(self.decoder_codes)
        self.unit_at = paths.unit_at.data
        # qmap values repeat ("tree4/2"): each is split and looked up once.
        self.targets: dict[str, tuple[int, int]] = {}
        # (answer bytes, question bytes, step's choice, k, truth, form) -> outcome.
        self.kept: dict[tuple[Any, ...], Outcome] = {}
        self.questions: dict[bytes, tuple[bytes, Any]] = {}  # bytes -> (them, decoded)

    def line(self, record: RequestLine) -> None:
        """Reduce one requests.jsonl line (only answered exchanges carry answers)."""
        qmap, response, request = record.get("qmap"), record.get("response"), record.get("request")
        if record.get("error") is not None or not isinstance(qmap, dict):
            return
        if not isinstance(response, dict) or not isinstance(request, dict):
            return
        answers, questions = response.get("answers"), request.get("questions")
        if not isinstance(answers, dict) or not isinstance(questions, dict):
            return
        asked: set[tuple[Any, ...]] = set()  # this line's distinct questions so far
        for qid, unit, depth in self.units_asked(record.get("job"), qmap):
            self.question(unit, depth, answers.get(qid), questions.get(qid), asked)

    def parts(self, record: RequestParts) -> None:
        """``line`` for a line decoded as RequestParts: each question and answer is decoded
        only when a unit asked it, and its outcome is kept for the next time the same bytes
        come at the same step (at most ``_KEPT`` of them)."""
        qmap, response, request = record.qmap, record.response, record.request
        if record.error is not None or not isinstance(qmap, dict):
            return
        if response is None or request is None:
            return
        answers, questions = response.answers, request.questions
        if answers is None or questions is None:
            return
        asked: set[tuple[Any, ...]] = set()
        kept, columns = self.kept, self.columns
        choice, k, truth, form = columns["choice"], columns["k"], columns["truth"], columns["form"]
        for qid, unit, depth in self.units_asked(record.job, qmap):
            i = self.start[unit] + depth - 1
            answer, question = answers.get(qid), questions.get(qid)
            said = None if answer is None else bytes(answer)
            asks = None if question is None else bytes(question)
            key = (said, asks, choice[i], k[i], truth[i], form[i])
            outcome = kept.get(key)
            if outcome is None:
                asks, parsed = self.question_of(asks)
                outcome = evaluate(
                    None if said is None else orjson.loads(said),
                    parsed,
                    self.choices[choice[i]],
                    k[i],
                    truth[i],
                    form[i],
                )
                if len(kept) < _KEPT:  # keyed by the question's first bytes: one copy
                    kept[(said, asks, *key[2:])] = outcome
            self.apply(unit, depth, i, outcome, asked)

    def question_of(self, asks: bytes | None) -> tuple[bytes | None, Any]:
        """The question ``asks`` decoded (and its first bytes), once per distinct question
        while they fit: many answers come to one question, and their outcomes share it."""
        if asks is None:
            return None, None
        found = self.questions.get(asks)
        if found is None:
            found = asks, orjson.loads(asks)
            if len(self.questions) < _KEPT:
                self.questions[asks] = found
        return found

    def units_asked(self, job_name: Any, qmap: dict[Any, Any]) -> Iterator[tuple[Any, int, int]]:
        """(question id, unit, depth) of each question in ``qmap`` that is on a unit's path."""
        job = self.job_codes.get(str(job_name))
        if job is None:
            return
        base = job * self.n_decoders
        targets = self.targets
        for qid, where in qmap.items():
            target = targets.get(where) if isinstance(where, str) else None
            if target is None:
                if not isinstance(where, str) or len(targets) >= 100_000:
                    continue
                target = targets[where] = self.target(where)
            code, depth = target
            if code < 0:
                continue
            unit = self.unit_at[base + code]
            if unit >= 0 and depth <= self.count[unit]:
                yield qid, unit, depth

    def target(self, where: str) -> tuple[int, int]:
        """A qmap value ``decoder/<round>`` as (decoder code, depth); (-1, 0) if not a unit's."""
        decoder, _, key = where.partition("/")
        code = self.decoder_codes.get(decoder)
        if code is None or not key.isdigit() or int(key) < 1:
            return -1, 0
        return code, int(key)

    def question(
        self, unit: int, depth: int, answer: Any, question: Any, asked: set[tuple[Any, ...]]
    ) -> None:
        """One answer to the question at ``depth`` on ``unit``'s path."""
        i = self.start[unit] + depth - 1
        columns = self.columns
        outcome = evaluate(
            answer,
            question,
            self.choices[columns["choice"][i]],
            columns["k"][i],
            columns["truth"][i],
            columns["form"][i],
        )
        self.apply(unit, depth, i, outcome, asked)

    def apply(
        self, unit: int, depth: int, i: int, outcome: Outcome, asked: set[tuple[Any, ...]]
    ) -> None:
        """Count and keep one answer's ``outcome`` (step ``i`` at ``depth`` on ``unit``'s path)."""
        tally = self.tally
        kind = outcome[0]
        if kind == MISMATCH:
            tally["mismatch"] += 1
            return
        bit = 1 << depth if depth < 64 else 0
        if self.seen[unit] & bit:
            tally["duplicates"] += 1
            return
        self.seen[unit] |= bit
        tally["answered"] += 1
        if kind == WITHOUT:
            tally["without"] += 1
            return
        labels = outcome[1]
        # Label sets are numbered as first met past the checks above, as they always were.
        labelled = self.sets.get(labels)[0] if labels is not None else 0
        if kind != WITH:
            tally["unusable"] += 1
            return
        _, _, picked, true, total, raw, selected, true_p, entropy, key = outcome
        assert raw is not None
        tally["with"] += 1
        self.raw_min, self.raw_max = min(self.raw_min, total), max(self.raw_max, total)
        if abs(total - 1.0) > 0.01 + 1e-9:
            tally["off"] += 1
        ints = self.ints
        ints["unit"].append(unit)
        ints["depth"].append(depth)
        ints["options"].append(len(raw))
        ints["holds"].append(-1 if true < 0 else int(true == picked))
        ints["first"].append(key not in asked)
        asked.add(key)  # type: ignore[arg-type]
        rows = self.rows
        rows["selected"].append(selected)
        rows["true"].append(true_p)
        rows["entropy"].append(entropy)
        slot = self.columns["pair"][i]
        if slot >= 0:
            self.pairs.add(slot, labelled, picked, true, total, raw)

    def result(self, requests_present: bool) -> AnswerLog:
        """The columns as numpy arrays."""
        t = self.tally
        pairs = self.pairs.result()
        counts = AnswerCounts(
            requests_present=requests_present,
            answered=t["answered"],
            with_probabilities=t["with"],
            without_probabilities=t["without"],
            unusable=t["unusable"],
            choice_mismatch=t["mismatch"],
            duplicates=t["duplicates"],
            off_by_more_than_001=t["off"],
            pairs_without_truth=pairs.without_truth,
            raw_sum_min=self.raw_min if t["with"] else math.nan,
            raw_sum_max=self.raw_max if t["with"] else math.nan,
        )

        # Views of the arrays' buffers, not copies (the arrays never grow again).
        def ints(name: str) -> np.ndarray:
            column = self.ints[name]
            return np.frombuffer(column, dtype=np.dtype(f"i{column.itemsize}"))

        def floats(name: str) -> np.ndarray:
            return np.frombuffer(self.rows[name], dtype=np.float64)

        paths = self.paths
        # Unit columns in their smallest integer types (codes, depths, counts: 409,600 units
        # at 100×); the statistics cast before building keys from them.
        units = {k: narrow(v) if v.dtype.kind == "i" else v for k, v in paths.unit.items()}
        return AnswerLog(
            units=units,
            names=paths.names,
            pair_first=narrow(paths.pair_first),
            pair_second=narrow(paths.pair_second),
            pair_depth=narrow(paths.pair_depth),
            outputs_read=paths.outputs_read,
            not_intervals=paths.not_intervals,
            q_unit=ints("unit"),
            q_depth=ints("depth"),
            q_options=ints("options"),
            q_selected=floats("selected"),
            q_true=floats("true"),
            q_holds=ints("holds"),
            q_entropy=floats("entropy"),
            q_first=ints("first").astype(bool),
            pair_id=narrow(pairs.pair_id),
            pair_first_right=pairs.first_right,
            pair_second_right=pairs.second_right,
            pair_averaged_right=pairs.averaged_right,
            counts=counts,
        )


def order_pair(orders: tuple[str, ...]) -> tuple[str, str]:
    """The two option orders to pair: ascending and reversed, else a run's only two."""
    if len(orders) == 2 and not {"ascending", "reversed"} <= set(orders):
        return orders[0], orders[1]
    return "ascending", "reversed"


def load_answers(
    run_dir: Path | str, orders: tuple[str, str] = ("ascending", "reversed")
) -> AnswerLog:
    """Stream outputs.jsonl, then requests.jsonl, of ``run_dir`` into an AnswerLog.

    ``orders`` names the two option orders whose identical questions are compared.
    """
    folder = Path(run_dir)
    join = AnswersJoin(read_paths(folder / "outputs.jsonl", orders))
    requests = folder / "requests.jsonl"
    if stored(requests).is_file():
        for record in JsonlReader[RequestLine](requests):
            join.line(record)
    return join.result(stored(requests).is_file())
