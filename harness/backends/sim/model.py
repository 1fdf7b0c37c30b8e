"""The built-in simulated model: reads only the wire body, answers with seeded draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import orjson

from harness.backends.base import Reply
from harness.backends.reading import body_questions, json_size, state_key, typed_answer
from harness.backends.sim.answering import answer, reported
from harness.backends.sim.draws import uniforms
from harness.backends.sim.params import SimParams
from harness.backends.sim.perception import Seen, perceive
from harness.backends.sim.questions import Asked
from harness.wire.usage import wire_usage

PERCEIVED_CACHE = 8192  # states remembered (jobs in flight share a few hundred)
QUESTIONS_CACHE = 16384  # question objects remembered (the affine suite asks ~3,000)


class SimModel:
    """A seeded, deterministic, fallible stand-in for a decision model (its results are
    simulated; the mechanics are the package docstring's)."""

    name = "sim"
    simulated = True
    price_per_million = 0.0  # runs in process: nothing is billed

    def __init__(
        self,
        params: SimParams | None = None,
        *,
        shared_questions: bool = False,
    ) -> None:
        """``shared_questions``: the caller hands the same, never mutated, question objects
        to every request (a run in process does: ``Question.wire``), so each is read once
        and remembered by identity; a server, whose every body is new, leaves it off."""
        self.params = params or SimParams()
        self._perceived: dict[str, tuple[Seen, bytes]] = {}
        self._asked: dict[int, tuple[Any, Asked]] | None = {} if shared_questions else None
        self._asked_by_text: dict[bytes, Asked] = {}
        self._repeats: dict[bytes, int] = {}  # fresh_repeats: how often each was asked

    def _seen(self, state: Any) -> tuple[Seen, bytes]:
        """The state's reading and the start of every answer draw's text (remembered)."""
        key = state_key(state)
        hit = self._perceived.get(key)
        if hit is None:
            if len(self._perceived) >= PERCEIVED_CACHE:
                self._perceived.clear()
            seen = perceive(state, key, self.params)
            prefix = b'["answer",' + orjson.dumps(self.params.seed) + b"," + orjson.dumps(key)
            hit = self._perceived[key] = (seen, prefix)
        return hit

    def _read(self, qid: str, question: Any) -> Asked:
        """``Asked.read``, remembered by identity with ``shared_questions``, else by text."""
        remembered = self._asked
        if remembered is not None:
            hit = remembered.get(id(question))
            if hit is not None and hit[0] is question:
                return hit[1]
            asked = Asked.read(qid, question, self.params)
            if len(remembered) >= QUESTIONS_CACHE:
                remembered.clear()
            remembered[id(question)] = (question, asked)
            return asked
        text = orjson.dumps(question)
        asked_or_none = self._asked_by_text.get(text)
        if asked_or_none is None:
            if len(self._asked_by_text) >= QUESTIONS_CACHE:
                self._asked_by_text.clear()
            asked_or_none = self._asked_by_text[text] = Asked.read(qid, question, self.params)
        return asked_or_none

    def _answer(self, asked: Asked, seen: Seen, prefix: bytes) -> dict[str, Any]:
        """One wire choice answer: the sim's choice and its belief (``answering``)."""
        text = prefix + b"," + asked.content
        if self.params.fresh_repeats:
            count = self._repeats.get(text, 0)
            self._repeats[text] = count + 1
            text += b"," + str(count).encode()
        label, belief = answer(asked, seen, self.params, uniforms(text + b"]"))
        shown = reported(belief, self.params.temperature)
        return {
            "type": "choice",
            "choice": label,
            "confidence": round(shown[label], 2),
            "probabilities": {lab: round(shown[lab], 2) for lab in asked.labels},
        }

    def respond(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for ``body`` (sync: also used by the loopback server)."""
        questions = body_questions(body)
        # Every question is read (and a bad one refused) before any is answered.
        asked = [(qid, self._read(qid, question)) for qid, question in questions.items()]
        seen, prefix = self._seen(body.get("state"))
        answers = {}
        for qid, one in asked:
            answer = self._answer(one, seen, prefix)
            answers[qid] = typed_answer(questions[qid], answer) if one.typed else answer
        size = None
        if self._asked is not None:  # remembered questions: their JSON length is known
            size = json_size(body, {qid: one.size for qid, one in asked})
        return {
            "model": "sim",
            "answers": answers,
            "usage": wire_usage("systemone", body, size=size),
        }

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Answer in process."""
        response = self.respond(body)
        # No cost of its own: the run prices its tokens (free unless --price-per-million).
        return Reply(response, model="sim", usage=response["usage"])

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec; ``label`` names the knobs set (``sim:seed=7``), as
        ``--model`` takes them, so that ``list`` tells two simulated "versions" apart."""
        return {
            "name": "sim",
            "label": self.params.label(),
            "backend": "sim",
            "simulated": True,
            "base_url": None,
            "params": asdict(self.params),
        }

    async def aclose(self) -> None:
        """Nothing to release."""
