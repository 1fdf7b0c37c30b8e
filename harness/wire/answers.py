"""Reading a response body against the request it answers: valid answers or a clear error.

A 200 whose body lacks an answer for a question, or names a label outside the criteria,
is a malformed response (docs/wire.md): an error for that exchange, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.decoders import Answer
from harness.errors import TransientError

# A JSON object as orjson returns it (a dict, checked first: the ABC check is slower), or
# any other mapping.
_OBJECT = (dict, Mapping)


def _probabilities(raw: Any) -> Mapping[str, float] | None:
    # Kept as sent (labels to numbers); decoders that use probabilities read them with
    # ``answer_probability``, which tolerates missing labels. Converting all 100 entries of
    # every direct-choice answer up front cost more than the rest of the parsing.
    return raw if isinstance(raw, _OBJECT) else None


def parse_answers(questions: Mapping[str, Any], body: Any) -> dict[str, Answer]:
    """The answer to every question of the request, validated.

    Raises ``TransientError("malformed")``: another attempt may well be answered correctly.
    """
    if not isinstance(body, _OBJECT) or not isinstance(body.get("answers"), _OBJECT):
        raise TransientError("malformed", "response has no 'answers' object")
    answers = body["answers"]
    parsed: dict[str, Answer] = {}
    for qid, question in questions.items():
        raw = answers.get(qid)
        if not isinstance(raw, _OBJECT):
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
            shown = repr(choice)[:40]
            raise TransientError(
                "malformed", f"answer to {qid!r} names label {shown}, not one of the criteria"
            )
        parsed[qid] = Answer(choice, _probabilities(raw.get("probabilities")))
    return parsed
