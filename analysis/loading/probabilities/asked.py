"""requests.jsonl's interval questions reduced to integers, a line at a time (no paths needed).

The Probabilities join (``answers.AnswersJoin``) needs, per question a line asked, only which
output and round it belongs to and which answer and question came back. This module does
the per-line part of the join in as little Python as it can: each ``qmap`` entry
``decoder/<round>`` becomes a row of ints (request, job, qmap value, answer, question), the
answers interned by their raw JSON bytes, the questions by their request's question set
(its raw bytes, known by a digest: a few thousand sets recur) and id, the job names and qmap
values by name. A qmap's targets and question ids depend only on the question set and the
qmap's bytes, so they are worked out once per such pair (a plan) and each line looks up only
its answers. It needs nothing from outputs.jsonl, so it runs in the side-by-side worker
(``side_by_side``) while this process reads the outputs; NumPy does the rest once the paths
exist. Rows are handed to ``sink`` in chunks that end at a line's end (a request's questions
are never split), so memory stays bounded on the serial path.

Interning keeps one copy of each distinct question, and of the first ``ANSWERS_KEPT``
distinct answers, until the read ends: on the simulator that is every answer (a few
thousand: its answers repeat). On a real model nearly every answer's probabilities differ,
so past that many an answer not kept gets an id of its chunk's own (ids only grow, so no
outcome key of ``outcome_table`` is ever met again for another answer), and its bytes are
dropped once the chunk is handed on: the answers held stay under ``ANSWERS_KEPT`` plus one
chunk's (~100 bytes each). What still grows with the questions is one row per distinct
outcome in ``outcome_table`` (61 bytes, plus 8 per raw probability) beside each question's
ids: measured on the simulator's 100× log with every answer's probabilities made distinct,
the serial join's peak grew ~130 bytes per answer (~560 before the cap), so ~1.8 GB for
the 13.7 million questions of a 1000× run (not measured on a real model). Without a sink, or with
``give_up`` (the side-by-side worker: its chunks wait in the other process while that one reads
the outputs, so none could be dropped), the reader gives up the rows once the answers pass the
cap (``over``) and the caller joins them serially.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import msgspec
import numpy as np
import orjson
import xxhash

from analysis.loading.logs.request_parts import RequestParts
from runfolder import RequestLine

__all__ = ["ANSWERS_KEPT", "ROWS", "AskedChunk", "AskedReader"]

ROWS = 1 << 18  # rows handed on at once: the join's temporaries stay under ~100 MB
# Distinct answers kept for the whole read (the old outcome cache kept 50,000 outcomes).
ANSWERS_KEPT = 100_000
# A qmap's rows but for their answers: the question ids asked (string targets only), and
# each one's target and question id (``AskedReader._plan``).
_Plan: TypeAlias = "tuple[tuple[str, ...], array[int], array[int]]"


@dataclass(frozen=True, eq=False)
class AskedChunk:
    """Rows of questions asked, in log order, and the tables their ids point into.

    ``line`` numbers the requests that passed the line checks; ``job`` is a code into
    ``job_codes`` when those (or ``resolve``) were given (the paths' codes; -1: none), else
    an index into ``jobs``;
    ``target`` indexes ``targets`` (qmap values); ``answer`` is an answer id (-1: absent):
    below ``fresh_from`` it indexes ``answers`` (raw JSON bytes, kept for the whole read),
    from there on ``fresh`` (this chunk's own answers, ids never used again); ``question``
    indexes ``questions``: (index into ``question_sets``, the raw JSON of a request's
    questions object; question id). The tables are shared with
    later chunks and only grow.
    """

    line: np.ndarray
    job: np.ndarray
    target: np.ndarray
    answer: np.ndarray
    question: np.ndarray
    jobs: list[str] | None
    targets: list[str]
    answers: list[bytes]
    questions: list[tuple[int, str]]
    question_sets: list[bytes]
    fresh: list[bytes]
    fresh_from: int

    def answer_bytes(self, a: int) -> bytes:
        """The raw JSON of answer id ``a`` (>= 0)."""
        return self.answers[a] if a < self.fresh_from else self.fresh[a - self.fresh_from]


class AskedReader:
    """Takes requests.jsonl lines (``parts`` or ``line``) and hands rows on to ``sink``."""

    def __init__(
        self,
        sink: Callable[[AskedChunk], None] | None = None,
        job_codes: Mapping[str, int] | None = None,
        rows: int = ROWS,
        kept: int | None = None,
        resolve: Callable[[list[str]], np.ndarray] | None = None,
        give_up: bool = False,
    ) -> None:
        self.sink, self.rows = sink, rows
        self.give_up = give_up or sink is None  # past ``kept``: no fresh ids, ``over``
        self.kept = ANSWERS_KEPT if kept is None else kept  # read at call time: patchable
        self.over = False  # ``give_up``: more distinct answers than ``kept``, rows given up
        self.job_codes = job_codes  # given: a job the paths do not know is skipped at once
        # Given: a chunk's job names are numbered within the chunk and coded all at once
        # when it is handed on (-1: not the paths'), so no name outlives its chunk.
        self.resolve = resolve
        self.job_ids: dict[str, int] = {}
        self.target_ids: dict[str, int] = {}
        self.answer_ids: dict[bytes, int] = {}
        self.set_ids: dict[int, int] = {}  # question set digest -> set id (``_set``)
        self.set_collided: dict[bytes, int] = {}  # sets whose digest an earlier set has
        self.set_questions: list[dict[str, int]] = []  # per set: question id -> row id
        # Per set: qmap's raw JSON -> its rows but for their answers (``_plan``). What a
        # qmap asks depends on the protocol and the grid, not on the model's answers, so the
        # few thousand (set, qmap) pairs recur on a real model too: per row only the answer
        # is looked up (at 100x, 2.3 million rows from ~N plans).
        self.set_plans: list[dict[bytes, _Plan]] = []
        self.question_sets: list[bytes] = []
        self.jobs: list[str] = []
        self.targets: list[str] = []
        self.answers: list[bytes] = []
        # Past ``kept``: the current chunk's answers, ids from ``fresh_from`` on.
        self.fresh_ids: dict[bytes, int] = {}
        self.fresh: list[bytes] = []
        self.fresh_from = self.kept
        self.questions: list[tuple[int, str]] = []
        # Per row since the last flush: its target and question (copied from the plans), and
        # its answer (a list: an array's append parses each int, a list's only links it).
        self.target_col, self.question_col = array("i"), array("i")
        self.answer_col: list[int] = []
        self.line_jobs: list[int] = []  # per line since the last flush: its job
        self.line_rows: list[int] = []  # and its rows
        self.lines = 0
        self.chunks: list[AskedChunk] = []  # without a sink

    def parts(self, record: RequestParts) -> None:
        """One line decoded as RequestParts (qmap, answers and questions as raw bytes)."""
        qmap = bytes(record.qmap)
        if record.error is not None or qmap[:1] != b"{":  # qmap not an object
            return
        response, request = record.response, record.request
        if response is None or request is None:
            return
        answers, asked = response.answers, bytes(request.questions)
        if answers is None or asked[:1] != b"{":  # no questions object
            return
        job = self._job(record.job)
        if job < 0 or self.over:
            return
        known = self._set(asked)
        plans = self.set_plans[known]
        plan = plans.get(qmap)
        if plan is None:  # decoded as a dict decode of the line gives it
            plan = plans[qmap] = self._plan(known, msgspec.json.decode(qmap))
        self._rows(job, plan, answers)

    def line(self, record: RequestLine) -> None:
        """One line decoded whole (another shape than the writer's): its answers and
        questions encoded again (orjson gives back the bytes of what it decoded)."""
        qmap, response, request = record.get("qmap"), record.get("response"), record.get("request")
        if record.get("error") is not None or not isinstance(qmap, dict):
            return
        if not isinstance(response, dict) or not isinstance(request, dict):
            return
        answers, questions = response.get("answers"), request.get("questions")
        if not isinstance(answers, dict) or not isinstance(questions, dict):
            return
        job = self._job(record.get("job"))
        if job < 0 or self.over:
            return
        said = {qid: orjson.dumps(answer) for qid, answer in answers.items()}
        # Lines of this shape are rare (or a test's): their plan is built and not kept.
        self._rows(job, self._plan(self._set(orjson.dumps(questions)), qmap), said)

    def _set(self, asked: bytes) -> int:
        """The id of the question set whose JSON is ``asked`` (registered when new).

        Known by a 64-bit digest of its bytes, checked against them: a set is ~1.4 kB, and
        Python's own hash of it was a fifth of the rows' cost (callgrind, 100x sim log);
        xxh3 reads it ~6x faster. Sets whose digests collide are told apart by their bytes.
        """
        digest = _digest(asked)
        known = self.set_ids.get(digest)
        if known is not None and self.question_sets[known] == asked:
            return known
        if known is not None:  # another set has this digest
            known = self.set_collided.get(asked)
            if known is not None:
                return known
        asked = _exact(asked)
        if digest in self.set_ids:
            self.set_collided[asked] = len(self.question_sets)
        else:
            self.set_ids[digest] = len(self.question_sets)
        self.question_sets.append(asked)
        self.set_questions.append({})
        self.set_plans.append({})
        return len(self.question_sets) - 1

    def _plan(self, known: int, qmap: dict[Any, Any]) -> _Plan:
        """The rows of a ``qmap`` over question set ``known`` but for their answers: the
        question ids with a string target, and each one's target and question id (tables
        grown in row order, as a row-by-row reading grows them)."""
        targets, seen_q = self.target_ids, self.set_questions[known]
        qids: list[str] = []
        rows = array("i")  # (target, question) per row
        for qid, where in qmap.items():
            target = targets.get(where)
            if target is None:
                if not isinstance(where, str):
                    continue
                target = targets[where] = len(self.targets)
                self.targets.append(where)
            # The set's question ``qid`` (absent from the set: found so when decoded).
            q = seen_q.get(qid, -1)
            if q < 0:
                q = seen_q[qid] = len(self.questions)
                self.questions.append((known, qid))
            qids.append(qid)
            rows.extend((target, q))
        return tuple(qids), rows[0::2], rows[1::2]

    def _rows(self, job: int, plan: _Plan, answers: Mapping[str, Any]) -> None:
        """A row per question of ``plan`` for one line that passed the checks (``answers``:
        raw JSON per question id): only its answers are looked up here."""
        self.lines += 1
        qids, targets, questions = plan
        seen_a, found = self.answer_ids, self.answer_col
        for qid in qids:
            answer = answers.get(qid)
            if answer is None:
                found.append(-1)
                continue
            said = bytes(answer)
            a = seen_a.get(said, -1)
            found.append(a if a >= 0 else self._answer(said))
        self.target_col.extend(targets)
        self.question_col.extend(questions)
        self.line_jobs.append(job)
        self.line_rows.append(len(qids))
        if len(found) >= self.rows:
            self.flush()

    def _answer(self, said: bytes) -> int:
        """The id of an answer not among the kept ones: kept while there is room, else the
        current chunk's own (no room and ``give_up``: the rows are given up, ``over``)."""
        said = _exact(said)
        if len(self.answers) < self.kept:
            a = self.answer_ids[said] = len(self.answers)
            self.answers.append(said)
            return a
        if self.give_up:
            self.over = True
            self.chunks = []
            return -1
        a = self.fresh_ids.setdefault(said, self.fresh_from + len(self.fresh))
        if a == self.fresh_from + len(self.fresh):
            self.fresh.append(said)
        return a

    def _job(self, name: Any) -> int:
        key = str(name)
        if self.job_codes is not None:
            return self.job_codes.get(key, -1)
        found = self.job_ids.get(key)
        if found is None:
            found = self.job_ids[key] = len(self.jobs)
            self.jobs.append(key)
        return found

    def flush(self) -> None:
        """Hand the rows gathered so far on (to ``sink``, else to ``chunks``)."""
        if self.over:  # given up: nothing is handed on
            self._restart()
        if not len(self.answer_col):
            return
        counts = np.array(self.line_rows, np.int32)
        first = self.lines - len(counts)
        jobs = np.array(self.line_jobs, np.int32)
        if self.resolve is not None:
            jobs = self.resolve(self.jobs).astype(np.int32)[jobs]
            self.job_ids, self.jobs = {}, []
        chunk = AskedChunk(
            line=np.repeat(np.arange(first, self.lines, dtype=np.int32), counts),
            job=np.repeat(jobs, counts),
            target=np.frombuffer(self.target_col, np.int32).copy(),
            answer=np.array(self.answer_col, np.int32),
            question=np.frombuffer(self.question_col, np.int32).copy(),
            jobs=None if self.job_codes is not None or self.resolve is not None else self.jobs,
            targets=self.targets,
            answers=self.answers,
            questions=self.questions,
            question_sets=self.question_sets,
            fresh=self.fresh,
            fresh_from=self.fresh_from,
        )
        del counts, jobs
        self._restart()
        # The chunk's own answers are forgotten once it is handed on; their ids never recur.
        self.fresh_from += len(self.fresh)
        self.fresh_ids, self.fresh = {}, []
        if self.sink is None:
            self.chunks.append(chunk)
        else:
            self.sink(chunk)

    def _restart(self) -> None:
        """No rows gathered: the columns start again."""
        self.target_col, self.question_col = array("i"), array("i")
        self.answer_col, self.line_jobs, self.line_rows = [], [], []

    def result(self) -> list[AskedChunk]:
        """Every chunk not yet handed on (all of them without a sink; none once ``over``)."""
        self.flush()
        chunks, self.chunks = self.chunks, []
        return chunks


_digest = xxhash.xxh3_64_intdigest  # a module name: a test makes every digest collide


def _exact(raw: bytes) -> bytes:
    """``raw`` in a bytes object of its own size: a result of orjson.dumps (a line decoded
    whole, encoded again) holds a ~4 kB allocation however short it is, so 100,000 kept
    answers took 0.5 GB (tracemalloc) where their JSON is ~10 MB."""
    return memoryview(raw).tobytes()
