"""What every wire translation shares: its error, text renderings of JSON values, refusals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

REFUSAL = "refusal"


class WireError(ValueError):
    """A body that lacks the shape its wire format requires; the message names the field
    (a client's malformed exchange, serve-sim's 4xx)."""


def text_of(value: Any) -> str:
    """A JSON value as text: a string as it is, ``None`` as ``""``, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def state_text(state: Any) -> str:
    """A System One state (string, object or array) as the text input other formats take."""
    return state if isinstance(state, str) else orjson.dumps(state).decode()


def state_from_text(text: str) -> Any:
    """The inverse of ``state_text``: a JSON object or array back as itself (so is a string
    state that holds one: the text formats cannot tell them apart), else the text."""
    if text[:1] in ("{", "["):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        if isinstance(value, dict | list):
            return value
    return text


def refusal_answer(message: str, reason: str = REFUSAL) -> dict[str, Any]:
    """A System One answer slot that holds no answer, saying why: ``reason`` ``refusal`` (the
    model declined) or ``no_label`` (a chat model's likely tokens named no option)."""
    return {"type": REFUSAL, REFUSAL: message, "reason": reason}


def is_refusal(answer: Any) -> bool:
    """Whether a translated answer is a refusal (see ``refusal_answer``)."""
    return isinstance(answer, Mapping) and answer.get("type") == REFUSAL


def mapping_at(body: Any, field: str) -> Mapping[str, Any]:
    """``body[field]`` when it is an object; else WireError naming the field."""
    value = body.get(field) if isinstance(body, Mapping) else None
    if not isinstance(value, Mapping):
        raise WireError(f"{field} must be an object; got {_shown(value)}")
    return value


def list_at(body: Any, field: str) -> list[Any]:
    """``body[field]`` when it is an array; else WireError naming the field."""
    value = body.get(field) if isinstance(body, Mapping) else None
    if not isinstance(value, list):
        raise WireError(f"{field} must be an array; got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__
