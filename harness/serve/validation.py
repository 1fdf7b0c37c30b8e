"""FastAPI-style validation of System One request bodies, as the hosted API answers 422s."""

from __future__ import annotations

from typing import Any

QUESTION_TYPES = ("noul", "choice", "score", "box")
MAX_OPTIONS = 255  # wire.md: at most 255 options per choice question
SCORE_LEVELS = (2, 10)  # wire.md: a score question has 2-10 levels


def _missing(loc: list[Any], value: Any = None) -> dict[str, Any]:
    return {"type": "missing", "loc": loc, "msg": "Field required", "input": value}


def validation_errors(body: Any) -> list[dict[str, Any]]:
    """FastAPI/pydantic-style errors for a request body; empty when it is acceptable."""
    if not isinstance(body, dict):
        return [
            {
                "type": "model_attributes_type",
                "loc": ["body"],
                "input": body,
                "msg": "Input should be a valid dictionary or object to extract fields from",
            }
        ]
    errors = []
    if "model" not in body:
        errors.append(_missing(["body", "model"], body))
    elif not isinstance(body["model"], str):
        errors.append(
            {
                "type": "string_type",
                "loc": ["body", "model"],
                "msg": "Input should be a valid string",
                "input": body["model"],
            }
        )
    if "state" not in body:
        errors.append(_missing(["body", "state"], body))
    elif not isinstance(body["state"], str | dict | list):
        errors.append(
            {
                "type": "string_type",
                "loc": ["body", "state"],
                "msg": "Input should be a valid string, object or array",
                "input": body["state"],
            }
        )
    questions = body.get("questions")
    if "questions" not in body:
        errors.append(_missing(["body", "questions"], body))
    elif not isinstance(questions, dict):
        errors.append(
            {
                "type": "dict_type",
                "loc": ["body", "questions"],
                "msg": "Input should be a valid dictionary",
                "input": questions,
            }
        )
    elif not questions:
        errors.append(
            {
                "type": "too_short",
                "loc": ["body", "questions"],
                "input": questions,
                "msg": "Dictionary should have at least 1 item after validation, not 0",
            }
        )
    else:
        for qid, question in questions.items():
            errors.extend(_question_errors(["body", "questions", qid], question))
    return errors


def _question_errors(loc: list[Any], question: Any) -> list[dict[str, Any]]:
    kind = question.get("type") if isinstance(question, dict) else None
    if kind not in QUESTION_TYPES:
        return [
            {
                "type": "union_tag_invalid",
                "loc": loc,
                "input": question,
                "msg": f"Input tag {kind!r} found using 'type' does not match any of the "
                f"expected tags: {', '.join(map(repr, QUESTION_TYPES))}",
            }
        ]
    criteria = question.get("criteria")
    if kind == "choice":
        if "criteria" not in question:
            return [_missing([*loc, kind, "criteria"], question)]
        if not isinstance(criteria, dict):
            return [
                {
                    "type": "dict_type",
                    "loc": [*loc, kind, "criteria"],
                    "msg": "Input should be a valid dictionary",
                    "input": criteria,
                }
            ]
        if len(criteria) > MAX_OPTIONS:
            return [
                {
                    "type": "too_long",
                    "loc": [*loc, kind, "criteria"],
                    "input": len(criteria),
                    "msg": f"a choice question takes at most {MAX_OPTIONS} options",
                }
            ]
    if kind == "noul" and criteria is not None and not isinstance(criteria, dict):
        return [
            {
                "type": "model_type",
                "loc": [*loc, kind, "criteria"],
                "msg": "Input should be a valid dictionary or instance of NoulCriteria",
                "input": criteria,
            }
        ]
    if kind == "score":
        if "criteria" not in question:
            return [_missing([*loc, kind, "criteria"], question)]
        if not isinstance(criteria, list):
            return [
                {
                    "type": "list_type",
                    "loc": [*loc, kind, "criteria"],
                    "msg": "Input should be a valid list",
                    "input": criteria,
                }
            ]
        low, high = SCORE_LEVELS
        if not low <= len(criteria) <= high:
            return [
                {
                    "type": "too_short" if len(criteria) < low else "too_long",
                    "loc": [*loc, kind, "criteria"],
                    "input": len(criteria),
                    "msg": f"a score question takes {low} to {high} levels",
                }
            ]
    return []
