"""The one interface every model implements: a request body in, ONE attempt, a reply out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypedDict

from harness.errors import ConfigError

# The transport's defaults, said once: Transport, ModelSpec, Limits, CompareOptions and the
# command line's options default to these.
DEFAULT_CONCURRENCY = 64  # requests in flight
DEFAULT_TIMEOUT_S = 30.0  # seconds per HTTP attempt
DEFAULT_CONNECT_TIMEOUT_S = 10.0  # seconds to open a connection
# And the model's own, said once for ModelSpec, RetrySettings, CompareOptions, the options
# and a resumed run's manifest: attempts per request (the first included), and openai-chat's
# alternatives per completion (OpenAI's maximum; harness.wire.chat.TOP_LOGPROBS, below).
DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_TOP_LOGPROBS = 20


@dataclass(frozen=True)
class Transport:
    """How an HTTP backend reaches its server, one value (as httpx's ``Timeout`` and
    ``Limits``): built once by ``make_backend`` from the spec and the run's concurrency and
    handed, unchanged, through the backend and its endpoint to the sender."""

    concurrency: int = DEFAULT_CONCURRENCY  # connections in the pool
    timeout_s: float = DEFAULT_TIMEOUT_S  # the whole attempt
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S  # opening a connection, within it

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1; got {self.concurrency}")
        if not self.timeout_s > 0:
            raise ConfigError(f"--timeout must be positive; got {self.timeout_s}")
        if self.connect_timeout_s > self.timeout_s:  # the connection is part of the attempt
            object.__setattr__(self, "connect_timeout_s", self.timeout_s)


class ServerOptions(TypedDict, total=False):
    """What every HTTP backend takes besides its model, server and key, named once
    (``make_backend`` fills them from the ``ModelSpec``)."""

    transport: Transport  # how the server is reached (default ``Transport()``)
    price_per_million: float | None  # USD per million input tokens (None: the table's, if any)
    price_per_million_output: float | None  # USD per million output tokens
    key_env: str | None  # the NAME of the key's variable (a profile's), never the key


# A NamedTuple rather than a frozen dataclass: one is built per attempt (see ``Attempt``).
class Reply(NamedTuple):
    """A model's response body plus what the log records about the exchange."""

    body: Mapping[str, Any]
    status: int = 200
    model: str | None = None  # the model the server says answered
    usage: Mapping[str, int] | None = None
    cost_usd: float | None = None  # None: the backend does not know
    request_id: str | None = None
    # The exact body sent when the backend translated the System One body to another wire
    # format (None: the body itself was sent, or nothing was: an in-process model).
    sent: Any = None
    # The request and response bodies as JSON bytes exactly as sent and received, when
    # ``body`` is the response's parse and nothing was translated (System One): the log
    # writes these bytes rather than serialising both objects again.
    request_json: bytes | None = None
    response_json: bytes | None = None


class Backend(Protocol):
    """A model the caller (``harness.calling.Caller``) can ask.

    ``answer`` makes exactly ONE attempt and classifies its own failures: it raises
    ``TransientError`` for what another attempt may fix, ``AuthError`` when every request
    would fail, ``BackendError`` otherwise (each carrying what the failed attempt's log line
    records). Retries, pacing, validation of the answers, timing and the log are the
    caller's, the same for every backend.
    """

    name: str  # the model name the manifest and the run folder's name use
    simulated: bool  # True for the built-in sim: every output is labelled simulated

    @property
    def price_per_million(self) -> float | None:
        """USD per million input tokens, to price a reply that carries no cost (None: unknown)."""
        ...

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Send one request body once and return the reply."""
        ...

    def describe(self) -> dict[str, Any]:
        """The model spec for the manifest (never a key)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
