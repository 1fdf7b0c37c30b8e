"""FastAPI-style validation of System One request bodies, as the hosted API answers 422s."""

from __future__ import annotations

from typing import Any

QUESTION_TYPES = ("noul", "choice", "score", "box")
MAX_OPTIONS = 255  # wire.md: at most 255 options per choice question
SCORE_LEVELS = (2, 10)  # wire.md: a score question has 2-10 levels


def _error(kind: str, loc: list[Any], msg: str, value: Any) -> dict[str, Any]:
    """One pydantic-style error: its type, where, what is wrong, and the input found."""
    return {"type": kind, "loc": loc, "msg": msg, "input": value}


def _missing(loc: list[Any], value: Any = None) -> dict[str, Any]:
    return _error("missing", loc, "Field required", value)


def validation_errors(body: Any) -> list[dict[str, Any]]:
    """FastAPI/pydantic-style errors for a request body; empty when it is acceptable."""
    if not isinstance(body, dict):
        msg = "Input should be a valid dictionary or object to extract fields from"
        return [_error("model_attributes_type", ["body"], msg, body)]
    errors = []
    if "model" not in body:
        errors.append(_missing(["body", "model"], body))
    elif not isinstance(body["model"], str):
        msg = "Input should be a valid string"
        errors.append(_error("string_type", ["body", "model"], msg, body["model"]))
    if "state" not in body:
        errors.append(_missing(["body", "state"], body))
    elif not isinstance(body["state"], str | dict | list):
        msg = "Input should be a valid string, object or array"
        errors.append(_error("string_type", ["body", "state"], msg, body["state"]))
    questions = body.get("questions")
    if "questions" not in body:
        errors.append(_missing(["body", "questions"], body))
    elif not isinstance(questions, dict):
        msg = "Input should be a valid dictionary"
        errors.append(_error("dict_type", ["body", "questions"], msg, questions))
    elif not questions:
        msg = "Dictionary should have at least 1 item after validation, not 0"
        errors.append(_error("too_short", ["body", "questions"], msg, questions))
    else:
        for qid, question in questions.items():
            errors.extend(_question_errors(["body", "questions", qid], question))
    return errors


def _question_errors(loc: list[Any], question: Any) -> list[dict[str, Any]]:
    kind = question.get("type") if isinstance(question, dict) else None
    if kind not in QUESTION_TYPES:
        msg = (
            f"Input tag {kind!r} found using 'type' does not match any of the "
            f"expected tags: {', '.join(map(repr, QUESTION_TYPES))}"
        )
        return [_error("union_tag_invalid", loc, msg, question)]
    criteria = question.get("criteria")
    at = [*loc, kind, "criteria"]
    if kind in ("choice", "score") and "criteria" not in question:
        return [_missing(at, question)]
    if kind == "choice":
        if not isinstance(criteria, dict):
            return [_error("dict_type", at, "Input should be a valid dictionary", criteria)]
        if len(criteria) > MAX_OPTIONS:
            msg = f"a choice question takes at most {MAX_OPTIONS} options"
            return [_error("too_long", at, msg, len(criteria))]
    if kind == "noul" and criteria is not None and not isinstance(criteria, dict):
        msg = "Input should be a valid dictionary or instance of NoulCriteria"
        return [_error("model_type", at, msg, criteria)]
    if kind == "score":
        if not isinstance(criteria, list):
            return [_error("list_type", at, "Input should be a valid list", criteria)]
        low, high = SCORE_LEVELS
        if not low <= len(criteria) <= high:
            short = "too_short" if len(criteria) < low else "too_long"
            msg = f"a score question takes {low} to {high} levels"
            return [_error(short, at, msg, len(criteria))]
    return []
