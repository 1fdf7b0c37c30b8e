"""What ``serve-sim`` answers: routing, FastAPI-style validation, the model, and faults.

Pure and synchronous: ``SimApp.handle(method, path, body)`` returns an ``Outcome`` that
the HTTP layer (``server.py``) sends, after sleeping ``delay_s`` on the event loop. The
answers come from the very ``respond(body)`` the in-process model uses, so a run against
the loopback server matches an in-process run exactly.
"""

from __future__ import annotations

import itertools
import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from harness.backends.oracle import Oracle
from harness.backends.sim import SimModel, SimParams
from harness.errors import BackendError, ConfigError
from harness.serve.faults import FaultPlan, FaultSpec

QUESTION_TYPES = ("noul", "choice", "score", "box")
MAX_OPTIONS = 255  # wire.md: at most 255 options per choice question


class Responder(Protocol):
    """The sync core of the built-in models."""

    def respond(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for a request body."""
        ...


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``serve-sim`` can be asked to do."""

    host: str = "127.0.0.1"
    port: int = 8377
    model: str = "sim"  # sim | oracle
    latency_ms: float = 0.0
    sim: SimParams = field(default_factory=SimParams)
    faults: FaultSpec = field(default_factory=FaultSpec)
    fault_seed: int = 0
    slow_s: float = 35.0  # a "slow" reply waits this long: past the client's 30 s default
    retry_after_s: float = 0.05  # what an injected 429 asks for (short: keeps soak runs fast)
    max_faults_per_body: int = 3
    allow_remote: bool = False
    max_body_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.model not in ("sim", "oracle"):
            raise ConfigError(f"serve-sim serves sim or oracle; got --model {self.model!r}")
        for name in ("latency_ms", "slow_s", "retry_after_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"serve-sim {name} must be a number >= 0; got {value}")


@dataclass(frozen=True)
class Outcome:
    """One reply (or a dropped connection) for the HTTP layer to deliver."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    reset: bool = False


def _json(status: int, obj: Any, **kw: Any) -> Outcome:
    return Outcome(status, orjson.dumps(obj), **kw)


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
    return []


def _detail(status: int, error_type: str, message: str, **kw: Any) -> Outcome:
    return _json(status, {"detail": {"error_type": error_type, "message": message}}, **kw)


HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


class SimApp:
    """Routes requests to the model and, when the fault plan says so, fails them."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.model: Responder = SimModel(config.sim) if config.model == "sim" else Oracle()
        self.plan = FaultPlan(config.faults, config.fault_seed, config.max_faults_per_body)
        self._boot = secrets.token_hex(3)
        self._ids = itertools.count(1)
        self.served = 0

    def request_id(self) -> str:
        """A fresh ``x-typesafe-request-id`` value."""
        return f"sim-{self._boot}-{next(self._ids):08x}"

    def handle(self, method: str, path: str, body: bytes) -> Outcome:
        """The reply to one request."""
        path = path.split("?", 1)[0]
        if path == "/healthz":
            if method not in ("GET", "HEAD"):
                return _json(405, {"detail": "Method Not Allowed"})
            return _json(200, {"status": "ok", "model": self.config.model, "simulated": True})
        if path != "/v1/systemone":
            return _json(404, {"detail": "Not Found"})
        if method != "POST":
            return _json(405, {"detail": "Method Not Allowed"}, headers=(("allow", "POST"),))
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _json(
                422,
                {
                    "detail": [
                        {
                            "type": "json_invalid",
                            "loc": ["body", 0],
                            "msg": "JSON decode error",
                            "input": {},
                            "ctx": {"error": str(exc)},
                        }
                    ]
                },
            )
        errors = validation_errors(request)
        if errors:
            return _json(422, {"detail": errors})
        try:
            response = self.model.respond(request)
        except BackendError as exc:
            return _detail(exc.status or 400, exc.kind, str(exc))
        self.served += 1
        delay = self.config.latency_ms / 1000.0
        fault = self.plan.decide(body)
        if fault is None:
            return _json(200, response, delay_s=delay)
        return self._fault(fault, request, response, delay)

    def _fault(
        self, fault: str, request: dict[str, Any], response: dict[str, Any], delay: float
    ) -> Outcome:
        """Fail the exchange as ``fault`` says, never handing out a wrong valid answer."""
        cfg = self.config
        if fault == "429":
            wait = cfg.retry_after_s
            headers = (
                ("retry-after", str(math.ceil(wait))),
                ("retry-after-ms", str(round(wait * 1000))),
            )
            return _detail(
                429,
                "rate_limited",
                "rate limit exceeded; retry later",
                headers=headers,
                delay_s=delay,
            )
        if fault == "500":
            return _detail(500, "internal_error", "internal server error", delay_s=delay)
        if fault == "503":  # the OpenAI-style shape llama.cpp and OpenRouter use
            return _json(
                503,
                {
                    "error": {
                        "code": 503,
                        "type": "unavailable_error",
                        "message": "service unavailable",
                    }
                },
                delay_s=delay,
            )
        if fault == "529":
            return _detail(529, "overloaded_error", "the model is overloaded", delay_s=delay)
        if fault == "html":
            return Outcome(502, HTML_502, "text/html", delay_s=delay)
        if fault == "reset":
            return Outcome(reset=True, delay_s=delay)
        if fault == "slow":
            return _json(200, response, delay_s=delay + cfg.slow_s)
        full = orjson.dumps(response)
        if fault == "truncated":
            return Outcome(200, full[: len(full) // 2], delay_s=delay)
        if fault == "malformed":  # Python-repr-looking text, as a buggy proxy might send
            return Outcome(200, full.replace(b'"', b"'"), delay_s=delay)
        answers = dict(response["answers"])
        questions = request["questions"]
        # A wrong label is only detectable on a choice question; else drop an answer.
        choice = next((q for q in questions if questions[q].get("type") == "choice"), None)
        if fault == "badlabel" and choice is not None:
            criteria = questions[choice].get("criteria") or {}
            label = "-1"
            while label in criteria:
                label += "x"
            answers[choice] = {**answers[choice], "choice": label}
        else:  # missing
            answers.pop(next(iter(questions)), None)
        return _json(200, {**response, "answers": answers}, delay_s=delay)
