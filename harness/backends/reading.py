"""What the built-in models read from a request body: the target and each question's meaning."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

import orjson

from harness.errors import BackendError, ConfigError
from harness.protocol.arith import evaluate
from harness.protocol.meaning import Meaning, interpret


def state_key(state: Any) -> str:
    """A canonical text for a state, used to look targets up."""
    return orjson.dumps(state, option=orjson.OPT_SORT_KEYS).decode()


@lru_cache(maxsize=16384)
def _decimal_fraction(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def target_of(state: Any, known: Mapping[str, Fraction] | None = None) -> Fraction | None:
    """The exact target of a state: its ``result``, a known table entry, or its expression."""
    if not isinstance(state, Mapping):
        return None
    if "result" in state:
        return _decimal_fraction(str(state["result"]))
    if known:
        base = {k: v for k, v in state.items() if k != "result"}
        hit = known.get(state_key(base))
        if hit is not None:
            return hit
    expression = state.get("expression")
    if isinstance(expression, str):
        try:
            return evaluate(expression)
        except ConfigError:
            return None
    return None


def is_mapping(value: object) -> bool:
    """``isinstance(value, Mapping)``, with the common case (a dict) checked first: the ABC
    check costs about a microsecond, and a request has hundreds of objects to check."""
    return isinstance(value, (dict, Mapping))


NOUL_LABELS = ("true", "false")


def as_choice(question: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The question as the choice it amounts to (None: no options): a noul between ``true``
    and ``false`` in that order (a wire may not keep its criteria's order), a score between
    its levels ``"0"``, ``"1"``, ..."""
    kind = question.get("type")
    if kind == "noul":
        criteria = question.get("criteria")
        described = criteria if isinstance(criteria, Mapping) else {}
        options = {label: described.get(label) for label in NOUL_LABELS}
        return {"instructions": question.get("instructions"), "criteria": options}
    if kind == "score":
        levels = question.get("criteria")
        if not isinstance(levels, list) or not levels:
            return None
        options = {str(i): level for i, level in enumerate(levels)}
        return {"instructions": question.get("instructions"), "criteria": options}
    criteria = question.get("criteria")
    return question if is_mapping(criteria) and criteria else None


def read_questions(body: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], Meaning | None]]:
    """Each question as a choice (``as_choice``) with its meaning (``read_question``)."""
    questions = body_questions(body)
    return {qid: read_question(qid, question) for qid, question in questions.items()}


def body_questions(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The body's ``questions`` object; BackendError("bad_request") when it has none."""
    questions = body.get("questions")
    if not is_mapping(questions) or not questions:
        raise BackendError("bad_request", "request has no questions", status=422)
    return questions


def read_question(qid: str, question: Any) -> tuple[Mapping[str, Any], Meaning | None]:
    """One question as a choice, with its meaning: None for a noul or score question the
    model cannot read (it then guesses); BackendError("bad_request") for an unreadable
    choice question or one with no options."""
    if not is_mapping(question):
        raise BackendError("bad_request", f"question {qid!r} has no criteria", status=422)
    kind = question.get("type")
    # Choice questions (every question the suites ask) take the short way.
    choice = as_choice(question) if kind == "noul" or kind == "score" else question
    criteria = choice.get("criteria") if choice is not None else None
    if kind == "box":
        message = f"question {qid!r} is a box question, which needs an image"
        raise BackendError("bad_request", message, status=400)
    if choice is None or not is_mapping(criteria) or not criteria:
        raise BackendError("bad_request", f"question {qid!r} has no criteria", status=422)
    meaning = interpret(str(choice.get("instructions") or ""), criteria)
    if choice is not question and meaning is not None and set(meaning.options) != set(criteria):
        meaning = None  # read as something whose options are not this question's
    if meaning is None and choice is question:
        raise BackendError(
            "bad_request", f"question {qid!r} is not one this model can read", status=400
        )
    return choice, meaning


def json_size(body: Mapping[str, Any], question_sizes: Mapping[str, int]) -> int:
    """``len(orjson.dumps(body))`` given the length of each question's own JSON text:
    compact JSON is ``{`` + ``"key":value`` pairs joined by commas + ``}``."""
    size = 2 + max(len(body) - 1, 0)  # the braces and the commas between members
    for key, value in body.items():
        size += _key_size(key) + 1  # the key and its colon
        if key == "questions" and isinstance(value, dict):
            size += 2 + max(len(value) - 1, 0)
            for qid in value:
                size += _key_size(qid) + 1 + question_sizes[qid]
        else:
            size += len(orjson.dumps(value))
    return size


@lru_cache(maxsize=4096)
def _key_size(key: str) -> int:
    """The length of a key's JSON text (``model``, ``q1``, ...: a few, over and over)."""
    return len(orjson.dumps(key))


def choice_answer(label: str, labels: list[str], confidence: float) -> dict[str, Any]:
    """A wire choice answer: ``confidence`` on ``label``, the rest spread evenly."""
    rest = round((1.0 - confidence) / max(1, len(labels) - 1), 2)
    probabilities = dict.fromkeys(labels, rest)
    shown = probabilities[label] = round(confidence, 2)
    return {"type": "choice", "choice": label, "confidence": shown, "probabilities": probabilities}


def typed_answer(question: Mapping[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    """The wire answer of ``question``'s type from its answer as a choice (``as_choice``):
    noul, P(true); score, the probability-weighted mean level, with confidence and legend."""
    kind = question.get("type")
    if kind == "noul":
        return {"type": "noul", "noul": choice["probabilities"]["true"]}
    if kind == "score":
        probabilities = choice["probabilities"]
        expected = sum(int(level) * p for level, p in probabilities.items())
        return {
            "type": "score",
            "score": round(expected, 2),
            "confidence": choice["confidence"],
            "legend": {str(i): level for i, level in enumerate(question["criteria"])},
            "probabilities": probabilities,
        }
    return choice
