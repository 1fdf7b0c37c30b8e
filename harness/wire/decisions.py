"""The ``openai-decisions`` wire format: System One bodies to OpenAI's Decisions shape and back.

OpenAI's Decisions API (``POST /v1/decisions``, public beta) asks the questions of a System
One request with other names. The shape here follows the public references found for it
(third-party typed clients verified against ``openai-python``'s ``decision_create_params``
and ``decision`` types, and the providers' docs that serve the route):

=====================  ======================================================================
System One             Decisions
=====================  ======================================================================
``state``              ``input``: a string as it is; an object or array as JSON text
``questions`` (map)    ``questions`` (ordered list); each question's id is its ``name``
``choice`` criteria    ``choices``: ``[{"value": label, "description": text}]`` in criteria
                       order (no ``description`` when the criterion's is null)
``noul``               ``predicate``; its criteria, which the shape has no field for, are
                       appended to the instructions as ``True when: ...`` / ``False when: ...``
``score`` levels       ``levels``: ``[{"label": level text}]`` in order
answers (map)          ``answers`` (list, in question order, each with its ``name``)
``noul`` answer        ``predicate`` answer, field ``probability``
``choice`` answer      ``choice``, ``confidence``, ``probabilities``: ``[{"value", "probability"}]``
``score`` answer       ``score``, ``confidence``, ``probabilities``: ``[{"label", "value": level
                       index, "probability"}]``; the legend is rebuilt from the request
(none)                 ``refusal`` answer: this question was declined
=====================  ======================================================================

Where the public references are silent this module follows wire.md and says so:

- The text of a refusal: OpenAI's other refusal objects carry it in a ``refusal`` field;
  it is read from there when present, and a fixed message stands in otherwise.
- Whether OpenAI shows a question's ``name`` to the model is not documented; the ids the
  harness uses mean nothing (wire.md), so showing them would do no harm.
- Usage: ``input_tokens`` and ``output_tokens`` are read as on System One; an optional
  ``cost`` (some proxies add one) is kept.

Text fields are strings in the Decisions shape: instructions and descriptions that are JSON
objects or arrays travel as JSON text (``text_of``) and come back as text; null
instructions travel as ``""``. Everything the harness sends is a string, and for strings
(without the noul marker lines) the request translation is exact both ways.

A client sends ``to_decisions_request`` and reads ``from_decisions_response``; serve-sim
reads ``from_decisions_request`` and answers ``to_decisions_response``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.wire.common import (
    REFUSAL,
    WireError,
    list_at,
    mapping_at,
    refusal_answer,
    state_from_text,
    state_text,
    text_of,
)

_TRUE, _FALSE = "True when: ", "False when: "
_BOTH_RE = re.compile(r"\n\nTrue when: (.*)\nFalse when: (.*)\Z", re.S)
_ONE_RE = re.compile(r"\n\n(True|False) when: (.*)\Z", re.S)


def _noul_instructions(instructions: Any, criteria: Any) -> str:
    """A noul's instructions with its criteria appended (the predicate has no criteria)."""
    text = text_of(instructions)
    if not isinstance(criteria, Mapping):
        return text
    lines = [
        prefix + text_of(criteria[key])
        for prefix, key in ((_TRUE, "true"), (_FALSE, "false"))
        if criteria.get(key) is not None
    ]
    return text + "\n\n" + "\n".join(lines) if lines else text


def _split_noul(text: str) -> tuple[str, dict[str, str | None] | None]:
    """The inverse of ``_noul_instructions``: instructions and criteria (None if none)."""
    both = _BOTH_RE.search(text)
    if both is not None:
        return text[: both.start()], {"true": both.group(1), "false": both.group(2)}
    one = _ONE_RE.search(text)
    if one is not None:
        key = one.group(1).lower()
        criteria = {"true": None, "false": None} | {key: one.group(2)}
        return text[: one.start()], criteria
    return text, None


def to_decisions_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A System One request body as a Decisions request body (questions in their order).

    Raises WireError for a question the Decisions API cannot ask (a ``box`` question).
    """
    questions = []
    for qid, question in mapping_at(body, "questions").items():
        if not isinstance(question, Mapping):
            raise WireError(f"questions.{qid} must be an object")
        kind = question.get("type")
        instructions = question.get("instructions")
        if kind == "choice":
            choices = [
                {"value": label} if text is None else {"value": label, "description": text_of(text)}
                for label, text in mapping_at(question, "criteria").items()
            ]
            out = {"type": "choice", "instructions": text_of(instructions), "choices": choices}
        elif kind == "noul":
            text = _noul_instructions(instructions, question.get("criteria"))
            out = {"type": "predicate", "instructions": text}
        elif kind == "score":
            levels = [{"label": text_of(level)} for level in list_at(question, "criteria")]
            out = {"type": "score", "instructions": text_of(instructions), "levels": levels}
        else:
            raise WireError(f"questions.{qid}: the Decisions API has no {kind!r} questions")
        questions.append({"name": qid, **out})
    return {
        "model": body.get("model"),
        "input": state_text(body.get("state")),
        "questions": questions,
    }


def from_decisions_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The System One request body a Decisions request asks (serve-sim's half), each
    question's id its ``name`` (else ``q<position>``); WireError naming the field otherwise."""
    model = body.get("model")
    if not isinstance(model, str):
        raise WireError("model must be a string")
    text = body.get("input")
    if not isinstance(text, str):
        raise WireError("input must be a string (serve-sim reads text input only)")
    questions: dict[str, Any] = {}
    for i, question in enumerate(list_at(body, "questions")):
        if not isinstance(question, Mapping):
            raise WireError(f"questions[{i}] must be an object")
        name = question.get("name")
        qid = name if isinstance(name, str) else f"q{i + 1}"
        if qid in questions:
            raise WireError(f"questions[{i}].name {qid!r} names another question too")
        instructions = question.get("instructions")
        if not isinstance(instructions, str):
            raise WireError(f"questions[{i}].instructions must be a string")
        kind = question.get("type")
        if kind == "choice":
            criteria = {}
            for j, choice in enumerate(list_at(question, "choices")):
                value = choice.get("value") if isinstance(choice, Mapping) else None
                if not isinstance(value, str):
                    raise WireError(f"questions[{i}].choices[{j}].value must be a string")
                criteria[value] = choice.get("description")
            questions[qid] = {"type": "choice", "instructions": instructions, "criteria": criteria}
        elif kind == "predicate":
            instructions, noul = _split_noul(instructions)
            questions[qid] = {"type": "noul", "instructions": instructions}
            if noul is not None:
                questions[qid]["criteria"] = noul
        elif kind == "score":
            levels = []
            for j, level in enumerate(list_at(question, "levels")):
                label = level.get("label") if isinstance(level, Mapping) else None
                if not isinstance(label, str):
                    raise WireError(f"questions[{i}].levels[{j}].label must be a string")
                described = level.get("description")
                levels.append(label if described is None else f"{label}: {text_of(described)}")
            questions[qid] = {"type": "score", "instructions": instructions, "criteria": levels}
        else:
            raise WireError(f"questions[{i}].type must be predicate, choice or score; got {kind!r}")
    return {"model": model, "state": state_from_text(text), "questions": questions}


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    keys = ("input_tokens", "output_tokens", "cost")
    return {key: usage[key] for key in keys if key in usage}


def to_decisions_response(
    request: Mapping[str, Any], response: Mapping[str, Any]
) -> dict[str, Any]:
    """A System One response as the Decisions response to ``request`` (its System One
    body), in question order; a missing answer or a bad label stays so (a fault stays one)."""
    answers = response.get("answers") or {}
    out = []
    for qid, question in mapping_at(request, "questions").items():
        answer = answers.get(qid)
        if not isinstance(answer, Mapping):
            continue
        kind = answer.get("type")
        if kind == "noul":
            out.append({"type": "predicate", "name": qid, "probability": answer["noul"]})
        elif kind == "choice":
            given = answer.get("probabilities") or {}
            # Criteria order first, as the Decisions API lists them; then any stray label.
            order = [*(label for label in question.get("criteria") or {} if label in given)]
            order += [label for label in given if label not in order]
            probabilities = [{"value": label, "probability": given[label]} for label in order]
            out.append(
                {"type": "choice", "name": qid, "choice": answer.get("choice"),
                 "confidence": answer.get("confidence"), "probabilities": probabilities}
            )  # fmt: skip
        elif kind == "score":
            levels = question.get("criteria") or []
            probabilities = [
                {"label": text_of(levels[int(level)]) if int(level) < len(levels) else level,
                 "value": int(level), "probability": p}
                for level, p in (answer.get("probabilities") or {}).items()
            ]  # fmt: skip
            out.append(
                {"type": "score", "name": qid, "score": answer.get("score"),
                 "confidence": answer.get("confidence"), "probabilities": probabilities}
            )  # fmt: skip
        elif kind == REFUSAL:
            out.append({"type": REFUSAL, "name": qid, REFUSAL: answer.get(REFUSAL)})
    usage = _usage(response.get("usage"))
    if "input_tokens" in usage and "output_tokens" in usage:
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return {"model": response.get("model"), "answers": out, "usage": usage}


def _answer(question: Mapping[str, Any], raw: Mapping[str, Any]) -> Any:
    """One Decisions answer as a System One answer (an unknown type passes as it is)."""
    kind = raw.get("type")
    if kind == "predicate":
        return {"type": "noul", "noul": raw.get("probability")}
    if kind == "choice":
        entries = raw.get("probabilities")
        probabilities = {
            entry.get("value"): entry.get("probability")
            for entry in (entries if isinstance(entries, list) else [])
            if isinstance(entry, Mapping)
        }
        return {"type": "choice", "choice": raw.get("choice"),
                "confidence": raw.get("confidence"), "probabilities": probabilities}  # fmt: skip
    if kind == "score":
        entries = raw.get("probabilities")
        probabilities = {
            str(entry.get("value")): entry.get("probability")
            for entry in (entries if isinstance(entries, list) else [])
            if isinstance(entry, Mapping)
        }
        levels = question.get("criteria")
        legend = {
            str(i): level for i, level in enumerate(levels if isinstance(levels, list) else [])
        }
        return {"type": "score", "score": raw.get("score"), "confidence": raw.get("confidence"),
                "legend": legend, "probabilities": probabilities}  # fmt: skip
    if kind == REFUSAL:
        text = raw.get(REFUSAL)
        return refusal_answer(text if isinstance(text, str) else "the model declined to answer")
    return raw


def from_decisions_response(request: Mapping[str, Any], body: Any) -> dict[str, Any]:
    """A Decisions response as the System One response to ``request`` (its System One body):
    answers matched by ``name``, an unnamed one by position when there is one per question
    (OpenAI documents question order); one unanswered is left out (the caller reports it).
    WireError for a body without an ``answers`` list."""
    questions = mapping_at(request, "questions")
    raw_answers = list_at(body, "answers")
    named = {
        raw.get("name"): raw
        for raw in raw_answers
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str)
    }
    positional = len(raw_answers) == len(questions)
    answers = {}
    for i, (qid, question) in enumerate(questions.items()):
        raw = named.get(qid)
        if raw is None and positional:
            candidate = raw_answers[i]
            if isinstance(candidate, Mapping) and candidate.get("name") is None:
                raw = candidate
        if raw is not None:
            answers[qid] = _answer(question, raw)
    return {"model": body.get("model"), "answers": answers, "usage": _usage(body.get("usage"))}
