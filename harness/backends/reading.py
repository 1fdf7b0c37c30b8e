"""What the built-in models read from a request body: the target and each question's meaning."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

import orjson

from harness.errors import BackendError, ConfigError
from harness.prompts import Meaning, interpret
from suites.arith import evaluate


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


def meanings(body: Mapping[str, Any]) -> dict[str, Meaning]:
    """Each question's meaning; raises BackendError("bad_request") for a question we cannot read."""
    questions = body.get("questions")
    if not is_mapping(questions) or not questions:
        raise BackendError("bad_request", "request has no questions", status=422)
    out = {}
    for qid, question in questions.items():
        criteria = question.get("criteria") if is_mapping(question) else None
        if not is_mapping(criteria) or not criteria:
            raise BackendError("bad_request", f"question {qid!r} has no criteria", status=422)
        meaning = interpret(str(question.get("instructions") or ""), criteria)
        if meaning is None:
            raise BackendError(
                "bad_request", f"question {qid!r} is not one this model can read", status=400
            )
        out[qid] = meaning
    return out


def usage_of(body: Mapping[str, Any]) -> dict[str, int]:
    """Simulated token counts: about four characters a token in, three tokens per answer out."""
    return {
        "input_tokens": max(1, len(orjson.dumps(body)) // 4),
        "output_tokens": 3 * len(body.get("questions") or {}),
    }


def choice_answer(label: str, labels: list[str], confidence: float) -> dict[str, Any]:
    """A wire choice answer: ``confidence`` on ``label``, the rest spread evenly."""
    rest = round((1.0 - confidence) / max(1, len(labels) - 1), 2)
    probabilities = dict.fromkeys(labels, rest)
    probabilities[label] = round(confidence, 2)
    return {
        "type": "choice",
        "choice": label,
        "confidence": round(confidence, 2),
        "probabilities": probabilities,
    }
