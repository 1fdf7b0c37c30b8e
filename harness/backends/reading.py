"""What the built-in models read from a request body: the target and each question's meaning."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from itertools import pairwise
from typing import Any

import orjson

from harness.arith import evaluate
from harness.errors import BackendError, ConfigError
from harness.prompts import Meaning, interpret


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
    """The question as the choice question it amounts to; None when it has no options.

    A choice question is itself. A ``noul`` question is a choice between ``true`` and
    ``false`` (its optional criteria describe them; always in that order, so every wire
    format, which may not keep the order of a noul's criteria, asks the same question). A
    ``score`` question is a choice between its levels, labelled ``"0"``, ``"1"``, ...
    """
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
    """Each question as a choice (see ``as_choice``) with its meaning.

    The meaning of a noul or score question is None when the model cannot read it (it then
    guesses); an unreadable choice question raises BackendError("bad_request"), as does a
    question with no options.
    """
    questions = body_questions(body)
    return {qid: read_question(qid, question) for qid, question in questions.items()}


def body_questions(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The body's ``questions`` object; BackendError("bad_request") when it has none."""
    questions = body.get("questions")
    if not is_mapping(questions) or not questions:
        raise BackendError("bad_request", "request has no questions", status=422)
    return questions


def read_question(qid: str, question: Any) -> tuple[Mapping[str, Any], Meaning | None]:
    """One question of ``read_questions``: as a choice, with its meaning (or the error)."""
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


def meanings(body: Mapping[str, Any]) -> dict[str, Meaning]:
    """Each question's meaning; raises BackendError("bad_request") for a question we cannot read."""
    out = {}
    for qid, (_, meaning) in read_questions(body).items():
        if meaning is None:
            raise BackendError(
                "bad_request", f"question {qid!r} is not one this model can read", status=400
            )
        out[qid] = meaning
    return out


def usage_of(body: Mapping[str, Any], size: int | None = None) -> dict[str, int]:
    """Simulated token counts: about four characters a token in, three tokens per answer out.

    ``size`` is ``len(orjson.dumps(body))`` when the caller knows it (``json_size``)."""
    if size is None:
        size = len(orjson.dumps(body))
    return {
        "input_tokens": max(1, size // 4),
        "output_tokens": 3 * len(body.get("questions") or {}),
    }


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


def informed_answer(
    label: str,
    labels: list[str],
    confidence: float,
    belief: Mapping[str, float],
    zeros: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A wire choice answer whose probabilities carry the answerer's belief.

    ``confidence`` goes to the selected ``label`` and the rest, ``1 - confidence``, is
    spread by ``belief`` (a distribution over labels, the selected one included) rather
    than evenly: ``p = confidence * [label] + (1 - confidence) * belief``. The selected
    label therefore keeps the largest probability whenever ``confidence >= 1/2``.
    Probabilities are rounded to 2 decimals, as Jev sends them; ``confidence`` is sent as is.
    ``zeros`` is ``dict.fromkeys(labels, 0.0)`` kept by the caller (copying it is faster).
    """
    rest = 1.0 - confidence
    probabilities = zeros.copy() if zeros is not None else dict.fromkeys(labels, 0.0)
    for option, mass in belief.items():
        share = rest * mass
        if not 0.0 <= share < 0.005:  # else round(share, 2) is the 0.0 already there
            probabilities[option] = round(share, 2)
    probabilities[label] = round(confidence + rest * belief.get(label, 0.0), 2)
    return {
        "type": "choice",
        "choice": label,
        "confidence": round(confidence, 2),
        "probabilities": probabilities,
    }


# Beyond this many standard deviations a Gaussian mass rounds to 0.00 on the wire.
_REACH = 8.0


@lru_cache(maxsize=4096)
def _edges(kind: str, lows: tuple[float, ...]) -> tuple[float, ...]:
    """Where one ranked option's region ends and the next one's begins.

    An interval ends where the next begins (its lower bound); a value's region ends halfway
    to the next value, as the sim answers a value question with the nearest value. The
    first and last regions are open-ended: an out-of-range reading lands on an end option.
    """
    if kind == "value":
        return tuple((a + b) / 2 for a, b in pairwise(lows))
    return lows[1:]


def region_edges(kind: str, lows: tuple[float, ...]) -> tuple[float, ...]:
    """``_edges``, for a caller that keeps them with the question (``perception_masses``)."""
    return _edges(kind, lows)


def perception_masses(
    kind: str,
    labels: Sequence[str],
    lows: tuple[float, ...],
    seen: float,
    sigma: float,
    edges: tuple[float, ...] | None = None,
) -> dict[str, float]:
    """The belief ``x ~ Normal(seen, sigma)`` spread over ranked options' regions.

    ``labels`` and ``lows`` are the options in ascending order (``Meaning.labels`` and
    ``Meaning.lows_f``). With ``sigma == 0`` all mass is on the option holding ``seen``.
    Options further than ``_REACH`` standard deviations away are left out (mass 0).
    ``edges`` is ``region_edges(kind, lows)`` when the caller has it already (looking it up
    hashes every bound).
    """
    if edges is None:
        edges = _edges(kind, lows)
    if not sigma > 0:
        return {labels[bisect_right(edges, seen)]: 1.0}
    first = bisect_right(edges, seen - _REACH * sigma)
    last = bisect_right(edges, seen + _REACH * sigma)
    scale = sigma * math.sqrt(2.0)
    masses = {}
    below = 0.0 if first == 0 else 0.5 * math.erfc((seen - edges[first - 1]) / scale)
    for i in range(first, last + 1):
        above = 1.0 if i == len(edges) else 0.5 * math.erfc((seen - edges[i]) / scale)
        masses[labels[i]] = max(above - below, 0.0)
        below = above
    total = sum(masses.values())
    if not total > 0:  # every mass underflowed: the belief sits on the option holding seen
        return {labels[bisect_right(edges, seen)]: 1.0}
    return {lab: m / total for lab, m in masses.items()}


def typed_answer(question: Mapping[str, Any], choice: dict[str, Any]) -> dict[str, Any]:
    """The wire answer of ``question``'s type from its answer as a choice (see ``as_choice``).

    noul: the probability of ``true``. score: the wire's expected level (the
    probability-weighted mean of the level indices), the choice's confidence, the levels as
    the legend, and each level's probability.
    """
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
