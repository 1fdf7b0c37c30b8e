"""What ``serve-sim`` answers: routes, the key, content codings, the model, and faults.

Pure and synchronous: ``SimApp.handle(method, path, body, headers)`` returns an
``Outcome`` that the HTTP layer (``server.py``) sends, after sleeping ``delay_s`` on the
event loop. The answers come from the very ``respond(body)`` the in-process model uses,
so a run against the loopback server matches an in-process run exactly, on every wire
format (``harness.wire`` translates the others to System One and back).
"""

from __future__ import annotations

import hmac
import itertools
import math
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.backends.oracle import Oracle
from harness.backends.sim import SimModel, SimParams
from harness.errors import BackendError, ConfigError
from harness.serve.encoding import EncodingError, decode_body
from harness.serve.faults import FaultPlan, FaultSpec
from harness.serve.wires import (
    DECLINED,
    Asked,
    Refused,
    chat_fault,
    error_body,
    read_request,
    write_response,
)
from harness.wire import ROUTES, WIRES, refusal_answer

MODELS_ROUTE = "/v1/models"
# serve-sim's models were never released; the SDK's model list requires a date all the same.
RELEASE_DATE = "2000-01-01"


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
    wire: str = "systemone"  # the format served: systemone | openai-decisions | openai-chat
    key: str | None = field(default=None, repr=False)  # require "Authorization: Bearer KEY"

    def __post_init__(self) -> None:
        if self.model not in ("sim", "oracle"):
            raise ConfigError(f"serve-sim serves sim or oracle; got --model {self.model!r}")
        if self.wire not in WIRES:
            raise ConfigError(f"serve-sim --wire takes {', '.join(WIRES)}; got {self.wire!r}")
        if self.key is not None and not self.key.strip():
            raise ConfigError("serve-sim --key must not be empty (omit it to accept any key)")
        for name in ("latency_ms", "slow_s", "retry_after_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"serve-sim {name} must be a number >= 0; got {value}")

    @property
    def route(self) -> str:
        """The path the configured wire format answers at."""
        return ROUTES[self.wire]


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


# The faults that are an error status: the status, the error's type and its message.
STATUS_FAULTS = {
    "429": (429, "rate_limited", "rate limit exceeded; retry later"),
    "500": (500, "internal_error", "internal server error"),
    "503": (503, "unavailable_error", "service unavailable"),
    "529": (529, "overloaded_error", "the model is overloaded"),
}
HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
Handler = Callable[[bytes, Mapping[str, str]], Outcome]


class SimApp:
    """Routes requests to the model and, when the fault plan says so, fails them."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.model: SimModel | Oracle = SimModel(config.sim) if config.model == "sim" else Oracle()
        self.plan = FaultPlan(config.faults, config.fault_seed, config.max_faults_per_body)
        self._boot = secrets.token_hex(3)
        self._ids = itertools.count(1)
        # path -> (methods, handler); a GET route answers HEAD too.
        self.routes: dict[str, tuple[tuple[str, ...], Handler]] = {
            "/healthz": (("GET",), self.health),
            MODELS_ROUTE: (("GET",), self.models),
            config.route: (("POST",), self.answer),
        }

    def request_id(self) -> str:
        """A fresh ``x-typesafe-request-id`` value."""
        return f"sim-{self._boot}-{next(self._ids):08x}"

    def not_found(self) -> Outcome:
        """The reply to a path serve-sim does not serve."""
        return _json(404, {"detail": "Not Found"})

    def not_allowed(self, methods: tuple[str, ...]) -> Outcome:
        """The reply to a method a route does not take."""
        allowed = ", ".join((*methods, "HEAD") if "GET" in methods else methods)
        return _json(405, {"detail": "Method Not Allowed"}, headers=(("allow", allowed),))

    def handle(
        self, method: str, path: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> Outcome:
        """The reply to one request (``headers`` with lower-case names)."""
        route = self.routes.get(path.split("?", 1)[0])
        if route is None:
            return self.not_found()
        methods, handler = route
        if method not in methods and not (method == "HEAD" and "GET" in methods):
            return self.not_allowed(methods)
        return handler(body, headers or {})

    def health(self, body: bytes, headers: Mapping[str, str]) -> Outcome:
        """Liveness (no key needed): which model, and on which wire."""
        state = {"status": "ok", "model": self.config.model, "wire": self.config.wire}
        return _json(200, {**state, "simulated": True})

    def _unauthorized(self, headers: Mapping[str, str]) -> Outcome | None:
        """The 401 for a request without the configured key, or None to let it through."""
        key = self.config.key
        if key is None:
            return None
        given = headers.get("authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
            return None
        # No "Bearer <...>" here: clients scrub whatever follows "Bearer" in what they show.
        message = (
            "missing or wrong API key: send the key serve-sim was started with (--key) "
            "in the Authorization header"
        )
        body = error_body(self.config.wire, "authentication_error", message)
        return _json(401, body, headers=(("www-authenticate", "Bearer"),))

    def models(self, body: bytes, headers: Mapping[str, str]) -> Outcome:
        """``GET /v1/models``: the TypeSafe list (``models``) and OpenAI's (``data``) in one."""
        refused = self._unauthorized(headers)
        if refused is not None:
            return refused
        name = self.config.model
        description = (
            f"NumericJev's built-in {name} model (simulated answers); "
            "any model name in a request is answered by it"
        )
        listed = {"name": name, "description": description, "release_date": RELEASE_DATE}
        openai = {"id": name, "object": "model", "created": 0, "owned_by": "numericjev"}
        return _json(200, {"object": "list", "data": [openai], "models": [listed]})

    def answer(self, raw: bytes, headers: Mapping[str, str]) -> Outcome:
        """Answer a request on the configured wire, or fail it as the fault plan says."""
        refused = self._unauthorized(headers)
        if refused is not None:
            return refused
        wire = self.config.wire
        try:
            body = decode_body(raw, headers.get("content-encoding"), self.config.max_body_bytes)
            asked = read_request(wire, body)
            response = self.model.respond(asked.request)
        except EncodingError as exc:
            return _json(exc.status, error_body(wire, "invalid_request_error", str(exc)))
        except Refused as exc:
            return _json(exc.status, exc.body)
        except BackendError as exc:
            return _json(exc.status or 400, error_body(wire, exc.kind, str(exc)))
        delay = self.config.latency_ms / 1000.0
        fault = self.plan.decide(body)
        if fault is None:
            return _json(200, write_response(wire, asked, response), delay_s=delay)
        return self._fault(fault, asked, response, delay)

    def _fault(self, fault: str, asked: Asked, response: dict[str, Any], delay: float) -> Outcome:
        """Fail the exchange as ``fault`` says, never handing out a wrong valid answer."""
        cfg = self.config
        if fault in STATUS_FAULTS:
            status, kind, message = STATUS_FAULTS[fault]
            body: dict[str, Any] = {"detail": {"error_type": kind, "message": message}}
            if fault == "503":  # the OpenAI-style shape llama.cpp and OpenRouter use
                body = {"error": {"code": 503, "type": kind, "message": message}}
            wait = cfg.retry_after_s
            retry = (
                ("retry-after", str(math.ceil(wait))),
                ("retry-after-ms", str(round(wait * 1000))),
            )
            return _json(status, body, headers=retry if fault == "429" else (), delay_s=delay)
        if fault == "html":
            return Outcome(502, HTML_502, "text/html", delay_s=delay)
        if fault == "reset":
            return Outcome(reset=True, delay_s=delay)
        wire = cfg.wire
        if fault == "slow":
            return _json(200, write_response(wire, asked, response), delay_s=delay + cfg.slow_s)
        if fault in ("truncated", "malformed"):
            full = orjson.dumps(write_response(wire, asked, response))
            if fault == "truncated":
                return Outcome(200, full[: len(full) // 2], delay_s=delay)
            # Python-repr-looking text, as a buggy proxy might send
            return Outcome(200, full.replace(b'"', b"'"), delay_s=delay)
        if asked.chat is not None:  # one question per request: fail it in the chat shape
            completion = chat_fault(fault, write_response(wire, asked, response))
            return _json(200, completion, delay_s=delay)
        answers = dict(response["answers"])
        questions = asked.request["questions"]
        if fault == "refusal":  # the model declines the first question
            answers[next(iter(questions))] = refusal_answer(DECLINED)
            faulty = {**response, "answers": answers}
            return _json(200, write_response(wire, asked, faulty), delay_s=delay)
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
        faulty = {**response, "answers": answers}
        return _json(200, write_response(wire, asked, faulty), delay_s=delay)
