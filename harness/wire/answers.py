"""Reading a response body against the request it answers: valid answers, refusals, or an error.

A 200 whose body lacks an answer for a question, or names a label outside the criteria,
is a malformed response (docs/wire.md): an error for that exchange, never a crash, and
worth another attempt.

A **refusal** (``harness.wire.common.refusal_answer``; docs/models.md, "Refusals") is not
malformed: ``read_answers`` returns it beside the valid answers, and it is never retried
(the same model would most likely decline again, and the exchange was paid for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from harness.errors import BackendError, TransientError
from harness.protocol.decoders import Answer
from harness.wire.common import REFUSAL

# A JSON object as orjson returns it (a dict, checked first: the ABC check is slower), or
# any other mapping.
_OBJECT = (dict, Mapping)


class Refusal(NamedTuple):
    """A question the model declined: why (``refusal`` or ``no_label``) and what it said."""

    reason: str
    message: str


class ReadAnswers(NamedTuple):
    """A response read against its request: every question is in exactly one of the two."""

    answers: dict[str, Answer]
    refused: dict[str, Refusal]


def _probabilities(raw: Any) -> Mapping[str, float] | None:
    # Kept as sent (labels to numbers); decoders that use probabilities read them with
    # ``answer_probability``, which tolerates missing labels. Converting all 100 entries of
    # every direct-choice answer up front cost more than the rest of the parsing.
    return raw if isinstance(raw, _OBJECT) else None


def _refusal(raw: Mapping[str, Any]) -> Refusal | None:
    if raw.get("type") != REFUSAL:
        return None
    reason, message = raw.get("reason"), raw.get(REFUSAL)
    return Refusal(
        reason if isinstance(reason, str) and reason else REFUSAL,
        message if isinstance(message, str) else "the model declined to answer",
    )


def read_answers(questions: Mapping[str, Any], body: Any) -> ReadAnswers:
    """The answer (or refusal) to every question of the request, validated; else
    ``TransientError("malformed")`` (another attempt may well be answered correctly)."""
    if not isinstance(body, _OBJECT) or not isinstance(body.get("answers"), _OBJECT):
        raise TransientError("malformed", "response has no 'answers' object")
    answers = body["answers"]
    parsed: dict[str, Answer] = {}
    refused: dict[str, Refusal] = {}
    for qid, question in questions.items():
        raw = answers.get(qid)
        if type(raw) is dict:  # the common case first: a JSON object naming one of the labels
            choice = raw.get("choice")
            if (
                type(choice) is str
                and choice in question["criteria"]
                and question.get("type") != "noul"
            ):
                probabilities = raw.get("probabilities")
                if type(probabilities) is not dict:  # inlined: a call per answer is costly here
                    probabilities = _probabilities(probabilities)
                parsed[qid] = Answer(choice, probabilities)
                continue
        elif not isinstance(raw, _OBJECT):
            raise TransientError("malformed", f"response has no answer for question {qid!r}")
        labels = question["criteria"]
        choice = raw.get("choice")
        if (
            question.get("type") == "noul"
            and raw.get("type") == "noul"
            and isinstance(raw.get("noul"), int | float)
        ):
            p = float(raw["noul"])
            choice = "true" if p >= 0.5 else "false"
            parsed[qid] = Answer(choice, {"true": p, "false": 1.0 - p})
            continue
        if not isinstance(choice, str) or choice not in labels:
            # Checked only here, off the common path: a refusal names no label.
            refusal = _refusal(raw)
            if refusal is not None:
                refused[qid] = refusal
                continue
            shown = repr(choice)[:40]
            raise TransientError(
                "malformed", f"answer to {qid!r} names label {shown}, not one of the criteria"
            )
        parsed[qid] = Answer(choice, _probabilities(raw.get("probabilities")))
    return ReadAnswers(parsed, refused)


def refusal_summary(refused: Mapping[str, Refusal], asked: int, limit: int = 3) -> str:
    """One line for the log: how many of ``asked`` questions were refused, and why."""
    shown = "; ".join(
        f"{qid} ({r.reason}: {' '.join(r.message.split())[:120]})"
        for qid, r in list(refused.items())[:limit]
    )
    more = f"; and {len(refused) - limit} more" if len(refused) > limit else ""
    return f"the model declined {len(refused)} of {asked} questions: {shown}{more}"


def parse_answers(questions: Mapping[str, Any], body: Any) -> dict[str, Answer]:
    """The answer to every question, validated, for callers that cannot use a partial one
    (the oracle check, the dry run): ``read_answers``'s errors, and ``BackendError("refusal")``
    (not retried) when the model declined any question."""
    read = read_answers(questions, body)
    if read.refused:
        raise BackendError("refusal", refusal_summary(read.refused, len(questions)))
    return read.answers
