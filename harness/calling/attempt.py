"""One attempt at one exchange, as its ``requests.jsonl`` line records it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, cast

from harness.errors import BackendError
from harness.protocol.decoders import Answer
from harness.wire.answers import Refusal
from runfolder import ErrorKind, Usage, error_kind


# A NamedTuple rather than a frozen dataclass: one is built per attempt on the hot path, and
# a tuple is built in a fraction of the time a frozen dataclass's __init__ takes.
class Attempt(NamedTuple):
    """What one attempt did, with its own start time and latency.

    ``kind`` is None when every question was answered, and ``"refusal"`` when the attempt
    was answered but the model declined some questions: ``answers`` (validated) holds what
    the decoders read, ``refused`` the declined questions. Any other kind is a failed
    attempt. ``response`` is the parsed body when one came back, else the failed response's
    body (truncated) or None. ``sent`` is the exact body sent on a wire other than System One.
    """

    number: int  # 1-based, within the exchange
    t: float  # epoch seconds when this attempt started
    latency_ms: float  # this attempt's own time, no pacing or retry waits
    status: int | None  # HTTP status (200 in process); None: no response
    kind: ErrorKind | None
    message: str | None
    response: Any
    model: str | None  # the model the server says answered
    usage: Usage | None
    cost_usd: float | None  # None: unknown
    request_id: str | None
    answers: Mapping[str, Answer] | None = None
    refused: Mapping[str, Refusal] | None = None
    sent: Any = None
    request_json: bytes | None = None  # the bodies as sent and received (``Reply``)
    response_json: bytes | None = None
    # Served from the request cache: {hit, from_run (the run that paid), saved_usd}.
    cached: Mapping[str, Any] | None = None

    @property
    def answered(self) -> bool:
        """Whether the exchange was answered (every question, or all but refused ones)."""
        return self.answers is not None

    @classmethod
    def failed(cls, number: int, t: float, latency_ms: float, error: BackendError) -> Attempt:
        """A failed attempt from the typed failure its backend (or the caller) raised."""
        usage = cast(Usage, dict(error.usage)) if error.usage else None
        return cls(
            number, t, latency_ms, error.status, error_kind(error.kind), str(error),
            error.body, error.model, usage, error.cost_usd, error.request_id, None, None,
            error.sent,
        )  # fmt: skip
