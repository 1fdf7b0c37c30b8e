"""The question rows ``asked.AskedReader`` builds from a plan kept per (question set, qmap)
equal a row-by-row reading of each line (the reading before the plans): the same ids, the
same tables in the same order, the same chunks (question sets whose digests collide too), for random qmaps (targets that are not
strings among them), answers (absent ones too), question sets and a cap small enough that
answers get ids past it."""

from __future__ import annotations

from array import array
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.logs.request_parts import decode_parts
from analysis.loading.probabilities import asked
from analysis.loading.probabilities.asked import AskedChunk, AskedReader

QIDS = ("q1", "q2", "q3", "q4")
targets = st.one_of(
    st.sampled_from(["tree2/1", "tree2/2", "tree10/1", "direct/1", "bits/b4"]),
    st.integers(-2, 2),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, width=32),
)
answers = st.one_of(
    st.fixed_dictionaries({"choice": st.sampled_from("01"), "probabilities": st.none()}),
    st.fixed_dictionaries(
        {
            "choice": st.sampled_from("01"),
            "probabilities": st.dictionaries(
                st.sampled_from("01"), st.sampled_from([0.25, 0.5, 1])
            ),
        }
    ),
    st.integers(0, 3),
)
question_sets = st.sampled_from(
    [
        {"q1": {"criteria": {"0": "a", "1": "b"}}},
        {"q1": {"criteria": {"0": "a", "1": "b"}}, "q2": {"criteria": {"0": "c"}}},
        {"q2": {"criteria": {"1": "b"}}, "q3": {}},
    ]
)
lines = st.lists(
    st.fixed_dictionaries(
        {
            "job": st.sampled_from(["a", "b", "c"]),
            "qmap": st.dictionaries(st.sampled_from(QIDS), targets, max_size=4),
            "request": st.fixed_dictionaries({"questions": question_sets}),
            "response": st.fixed_dictionaries(
                {"answers": st.dictionaries(st.sampled_from(QIDS), answers, max_size=4)}
            ),
        }
    ),
    max_size=25,
)


class RowByRow:
    """The reading before the plans: each qmap entry looked up in full, row after row."""

    def __init__(self, kept: int, rows: int) -> None:
        self.kept, self.rows = kept, rows
        self.jobs: dict[str, int] = {}
        self.targets: dict[str, int] = {}
        self.answers: dict[bytes, int] = {}
        self.sets: dict[bytes, int] = {}
        self.questions: dict[tuple[int, str], int] = {}
        self.fresh: dict[bytes, int] = {}
        self.fresh_from = kept
        self.pending: list[tuple[int, int, int, int, int]] = []
        self.chunks: list[list[tuple[int, int, int, int, int]]] = []
        self.lines = 0

    def line(self, record: dict[str, Any]) -> None:
        job = self.jobs.setdefault(record["job"], len(self.jobs))
        said = {q: orjson.dumps(a) for q, a in record["response"]["answers"].items()}
        known = self.sets.setdefault(orjson.dumps(record["request"]["questions"]), len(self.sets))
        for qid, where in record["qmap"].items():
            if not isinstance(where, str):
                continue
            target = self.targets.setdefault(where, len(self.targets))
            answer = said.get(qid)
            a = -1 if answer is None else self._answer(answer)
            q = self.questions.setdefault((known, qid), len(self.questions))
            self.pending.append((self.lines, job, target, a, q))
        self.lines += 1
        if len(self.pending) >= self.rows:
            self.flush()

    def _answer(self, said: bytes) -> int:
        if said in self.answers:
            return self.answers[said]
        if len(self.answers) < self.kept:
            return self.answers.setdefault(said, len(self.answers))
        return self.fresh.setdefault(said, self.fresh_from + len(self.fresh))

    def flush(self) -> None:
        if self.pending:
            self.chunks.append(self.pending)
            self.pending = []
            self.fresh_from += len(self.fresh)
            self.fresh = {}


@settings(max_examples=150, deadline=None)
@given(lines, st.integers(0, 4), st.integers(1, 6), st.booleans())
def test_the_planned_rows_equal_the_row_by_row_reading(
    records: list[dict[str, Any]], kept: int, rows: int, collide: bool
) -> None:
    digest = asked._digest
    if collide:  # every question set's digest one of two: sets told apart by their bytes
        asked._digest = lambda raw: len(raw) % 2
    try:
        check_rows(records, kept, rows)
    finally:
        asked._digest = digest


def check_rows(records: list[dict[str, Any]], kept: int, rows: int) -> None:
    """The reader's chunks and tables equal ``RowByRow``'s, lines given as parts or whole."""
    expected = RowByRow(kept, rows)
    for record in records:
        expected.line(record)
    expected.flush()
    for whole in (False, True):  # lines as RequestParts (plans kept), and decoded whole
        chunks: list[AskedChunk] = []
        reader = AskedReader(chunks.append, rows=rows, kept=kept)
        for record in records:
            if whole:
                reader.line(record)  # type: ignore[arg-type]
            else:
                parts = decode_parts(orjson.dumps(record))
                assert parts is not None
                reader.parts(parts)
        reader.flush()
        found = [
            list(
                zip(
                    *(c.tolist() for c in (k.line, k.job, k.target, k.answer, k.question)),
                    strict=True,
                )
            )
            for k in chunks
        ]
        assert found == expected.chunks
        assert reader.targets == list(expected.targets)
        assert reader.answers == list(expected.answers)
        assert reader.question_sets == list(expected.sets)
        assert reader.questions == [(s, q) for s, q in expected.questions]
        for chunk in chunks:  # the rows' answers are the lines' bytes, past the cap too
            for a in chunk.answer[chunk.answer >= 0].tolist():
                assert chunk.answer_bytes(a) in expected.answers or a >= kept


def test_a_plan_is_kept_per_question_set_and_qmap() -> None:
    """Lines that share a question set and a qmap share one plan; another qmap, another."""
    reader = AskedReader(lambda chunk: None)
    base = {
        "job": "j",
        "request": {"questions": {"q1": {}, "q2": {}}},
        "response": {"answers": {"q1": {"choice": "0"}}},
    }
    for qmap in ({"q1": "tree2/1"}, {"q1": "tree2/1"}, {"q1": "tree2/1", "q2": 3}):
        parts = decode_parts(orjson.dumps(dict(base, qmap=qmap)))
        assert parts is not None
        reader.parts(parts)
    (plans,) = reader.set_plans
    assert len(plans) == 2
    assert [p[0] for p in plans.values()] == [("q1",), ("q1",)]
    assert all(isinstance(p[1], array) for p in plans.values())
    assert reader.answer_col == [0, 0, 0]
