"""The exact oracle: answers every question with the label that holds the true target."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from harness.backends.base import Reply
from harness.backends.reading import (
    choice_answer,
    read_questions,
    target_of,
    typed_answer,
)
from harness.errors import BackendError
from harness.protocol.meaning import exact_label
from harness.wire.usage import wire_usage


class Oracle:
    """Exact labels from the state's result, expression, or a table of known targets."""

    name = "oracle"
    # Exact labels are not the simulator's answers: outputs and manifest say "oracle"
    # (harness.running.recorder), never "simulated"; neither describes any real model.
    simulated = False
    price_per_million = 0.0  # runs in process: nothing is billed

    def __init__(self, known: Mapping[str, Fraction] | None = None) -> None:
        self.known = dict(known or {})

    def respond(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for ``body`` (sync: also used by the loopback server)."""
        target = target_of(body.get("state"), self.known)
        if target is None:
            raise BackendError(
                "bad_request", "the oracle cannot find the target in this state", status=400
            )
        answers = {}
        questions = body["questions"]
        for qid, (_, meaning) in read_questions(body).items():
            if meaning is None:
                raise BackendError(
                    "bad_request", f"question {qid!r} is not one this model can read", status=400
                )
            label = exact_label(meaning, target)
            answer = choice_answer(label, list(meaning.options), 1.0)
            answers[qid] = typed_answer(questions[qid], answer)
        return {"model": "oracle", "answers": answers, "usage": wire_usage("systemone", body)}

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Answer in process."""
        response = self.respond(body)
        return Reply(response, model="oracle", usage=response["usage"])

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec."""
        return {
            "name": "oracle",
            "backend": "oracle",
            "simulated": False,
            "oracle": True,
            "base_url": None,
            "params": {},
        }

    async def aclose(self) -> None:
        """Nothing to release."""
