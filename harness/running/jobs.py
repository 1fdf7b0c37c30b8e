"""A job runs all of a suite's decoders on one case × condition × order × repeat.

Each round it batches every ready question of its unfinished decoders into ONE request.
Question ids on the wire are opaque (``q1``, ``q2``, ...) because some servers show them
to the model; ``qmap`` records which decoder and step each id stands for.

A question the model declined (a refusal, ``harness.wire.answers``) fails the decoder that
asked it, for good: that decoder's output is failed with error ``refusal`` and it asks
nothing more, while the job's other decoders go on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from harness.protocol.cases import JobSpec
from harness.protocol.decoders import Answer, Decoder, decoder_factory
from harness.protocol.grid import fmt, to_decimal
from harness.wire.answers import Refusal
from runfolder import ErrorKind, OutputIdentity, OutputRecord, OutputResult

_QIDS = tuple(f"q{i}" for i in range(1, 257))  # wire ids, built once


class Job:
    """The decoders of one job and the round they have reached."""

    def __init__(self, spec: JobSpec, decoders: tuple[str, ...]) -> None:
        self.spec = spec
        case = spec.case
        grid, subject = case.grid, case.subject
        self.decoders: dict[str, Decoder] = {
            name: decoder_factory(name)(grid, subject) for name in decoders
        }
        self.state = case.state_for(spec.condition)
        self._reverse = spec.order == "reversed"
        # The decoders that may still ask (a finished one is dropped by ``next_request``).
        self._active = list(self.decoders.items())
        # The last request's question map, and where each of its answers goes (``apply``).
        self._asked: tuple[dict[str, str], list[tuple[str, Decoder, str, str]]] | None = None
        self.round = 0
        self.served: set[str] = set()  # models that answered, as the server named them
        self.refused: set[str] = set()  # decoders failed by a refused question (final)
        # Decoders whose ok output an earlier session recorded (a failed job being resumed):
        # replay gives them the same answers, and their line is not written twice.
        self.recorded_ok: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        """The job's stable id."""
        return self.spec.id

    @property
    def done(self) -> bool:
        """True once every decoder has its value, or failed for good (a refusal)."""
        return all(d.done or name in self.refused for name, d in self.decoders.items())

    def next_request(self, model: str) -> tuple[dict[str, Any], dict[str, str]] | None:
        """The next round's request body and its question map, or None when finished."""
        reverse = self._reverse
        refused = self.refused
        questions: dict[str, Any] = {}
        qmap: dict[str, str] = {}
        routes: list[tuple[str, Decoder, str, str]] = []
        active = []
        for name, decoder in self._active:
            if refused and name in refused:
                continue
            ready = decoder.ready()
            if not ready and decoder.done:
                continue  # it asks nothing again: not asked from now on
            active.append((name, decoder))
            for question in ready:
                n = len(questions)
                qid = _QIDS[n] if n < len(_QIDS) else f"q{n + 1}"
                questions[qid] = question.wire(reverse)
                key = question.key
                qmap[qid] = f"{name}/{key}"
                routes.append((qid, decoder, key, name))
        self._active = active
        if not questions:
            self._asked = None
            return None
        self._asked = (qmap, routes)
        return {"model": model, "state": self.state, "questions": questions}, qmap

    def apply(
        self,
        qmap: Mapping[str, str],
        answers: Mapping[str, Answer],
        refused: Mapping[str, Refusal] | None = None,
    ) -> None:
        """Hand each answer to its decoder and advance the round; a decoder with a refused
        question gets none of this round's answers and fails with error ``refusal``."""
        if refused:
            self.refused.update(qmap[qid].split("/", 1)[0] for qid in refused)
        asked = self._asked
        self._asked = None
        if asked is not None and asked[0] is qmap:  # the map this job just made: no parsing
            skip = self.refused
            for qid, decoder, key, name in asked[1]:
                if not skip or name not in skip:
                    decoder.give(key, answers[qid])
        else:
            for qid, target in qmap.items():
                name, key = target.split("/", 1)
                if name not in self.refused:
                    self.decoders[name].give(key, answers[qid])
        self.round += 1

    def outputs(self, simulated: bool, error: ErrorKind | None = None) -> list[OutputRecord]:
        """One output record per decoder (the ``outputs.jsonl`` contract).

        ``error`` is the kind of the attempt that failed the job; it is recorded on the
        decoders that did not finish (a decoder failed by a refusal records ``refusal``).
        """
        grid = self.spec.case.grid
        refused = self.refused
        records: list[OutputRecord] = []
        # The identity differs between decoders in the decoder only: build it once a job
        # ("decoder" keeps its place in the key order when replaced).
        common = output_identity(self.spec, "")
        for name, decoder in self.decoders.items():
            if not decoder.done or name in refused:
                failed: OutputResult = {
                    **common,
                    "decoder": name,
                    "value": None,
                    "cell": None,
                    "rounds": None,
                    "trace": [],
                }
                why: ErrorKind | None = "refusal" if name in refused else error
                if why is None:
                    records.append({**failed, "status": "failed", "simulated": simulated})
                else:
                    records.append(
                        {**failed, "status": "failed", "simulated": simulated, "error": why}
                    )
                continue
            result = decoder.result()
            q = result.grid_index
            if q is not None:  # a cell's bounds: the grid's memoised texts
                value, cell = grid.value_text(q), [grid.bound_text(q), grid.bound_text(q + 1)]
            else:
                quantum = to_decimal(1).scaleb(-grid.places)
                value = format(result.value.quantize(quantum), "f")
                cell = [fmt(result.cell[0]), fmt(result.cell[1])]
            # One dict each, in the order on disk ("decoder" keeps its place in ``common``).
            record: dict[str, Any] = {
                **common,
                "decoder": name,
                "value": value,
                "cell": cell,
                "rounds": result.rounds,
                "trace": list(result.trace),  # the decoders' steps: TraceStep's keys and more
            }
            if result.extra:
                record["extra"] = dict(result.extra)
            record["status"] = "ok"
            record["simulated"] = simulated
            records.append(cast(OutputRecord, record))
        return records


def output_identity(spec: JobSpec, decoder: str) -> OutputIdentity:
    """The fields that say which job, case and decoder an output line belongs to."""
    case = spec.case
    target, lo, eps = case.texts
    return {
        "job": spec.id,
        "suite": spec.suite,
        "case": case.id,
        "family": case.family,
        "domain": case.domain,
        "condition": spec.condition,
        "order": spec.order,
        "repeat": spec.repeat,
        "decoder": decoder,
        "target": target,
        "L": lo,
        "eps": eps,
        "N": case.grid.n,
    }
