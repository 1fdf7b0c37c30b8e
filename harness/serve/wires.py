"""serve-sim's side of each wire format: a request read as System One, the answer written back.

The sim always answers a System One body; ``harness.wire`` translates the other formats to
it and back, so every wire gives the answers of the same sim distributions. Errors take the
shape of the wire: FastAPI's ``{"detail": ...}`` on System One, OpenAI's ``{"error":
{...}}`` on the OpenAI formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from harness.serve.validation import validation_errors
from harness.wire import (
    ChatQuestion,
    WireError,
    from_chat_request,
    from_decisions_request,
    to_chat_completion,
    to_decisions_response,
    wire_usage,
)

OPENAI_WIRES = ("openai-decisions", "openai-chat")
DECLINED = "I can't help with that."  # what a ``refusal`` fault says


class Refused(Exception):
    """A request serve-sim will not answer: the status and body to reply with."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def error_body(wire: str, error_type: str, message: str) -> dict[str, Any]:
    """An error body in the shape ``wire``'s servers use."""
    if wire in OPENAI_WIRES:
        return {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return {"detail": {"error_type": error_type, "message": message}}


@dataclass(frozen=True)
class Asked:
    """A request as the sim answers it: a System One body, the chat question if any, and
    on the OpenAI wires what the body received bills (``wire_usage``: a server bills what
    it read, not the System One body the sim answers)."""

    request: dict[str, Any]
    chat: ChatQuestion | None = None
    usage: dict[str, int] | None = None


def _json_invalid(wire: str, exc: orjson.JSONDecodeError) -> Refused:
    if wire in OPENAI_WIRES:
        message = f"We could not parse the JSON body of your request: {exc}"
        return Refused(400, error_body(wire, "invalid_request_error", message))
    detail = {
        "type": "json_invalid",
        "loc": ["body", 0],
        "msg": "JSON decode error",
        "input": {},
        "ctx": {"error": str(exc)},
    }
    return Refused(422, {"detail": [detail]})


def read_request(wire: str, raw: bytes) -> Asked:
    """The System One request a body of ``wire`` asks; raises Refused with the reply."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _json_invalid(wire, exc) from None
    if wire == "systemone":
        errors = validation_errors(body)
        if errors:
            raise Refused(422, {"detail": errors})
        return Asked(body)
    if not isinstance(body, Mapping):
        raise Refused(400, error_body(wire, "invalid_request_error", "the body must be an object"))
    chat = None
    try:
        if wire == "openai-decisions":
            request = from_decisions_request(body)
        else:
            request, chat = from_chat_request(body)
    except WireError as exc:
        raise Refused(400, error_body(wire, "invalid_request_error", str(exc))) from None
    errors = validation_errors(request)
    if errors:
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"][1:])
        message = f"{where}: {first['msg']}"
        raise Refused(400, error_body(wire, "invalid_request_error", message))
    return Asked(request, chat, wire_usage(wire, body))


def write_response(wire: str, asked: Asked, response: Mapping[str, Any]) -> Any:
    """The sim's System One ``response`` in ``wire``'s shape."""
    if asked.usage is not None:
        response = {**response, "usage": asked.usage}
    if wire == "openai-decisions":
        return to_decisions_response(asked.request, response)
    if asked.chat is not None:
        return to_chat_completion(
            asked.chat,
            response["answers"][asked.chat.qid],
            model=str(response.get("model")),
            usage=response.get("usage"),
        )
    return response


def chat_fault(fault: str, completion: dict[str, Any]) -> dict[str, Any]:
    """A chat completion failed as ``fault`` says: ``badlabel`` (no token names an option),
    ``missing`` (no logprobs: malformed) or ``refusal`` (no content, a refusal message)."""
    choice = dict(completion["choices"][0])
    if fault == "refusal":
        choice["message"] = {"role": "assistant", "content": None, "refusal": DECLINED}
        choice["logprobs"] = {"content": None, "refusal": []}
        choice["finish_reason"] = "stop"
    elif fault == "badlabel":
        stray = {"token": "I", "logprob": 0.0, "bytes": [73]}
        choice["message"] = {**choice["message"], "content": "I"}
        choice["logprobs"] = {"content": [{**stray, "top_logprobs": [stray]}], "refusal": None}
    else:
        choice["logprobs"] = None
    return {**completion, "choices": [choice]}
