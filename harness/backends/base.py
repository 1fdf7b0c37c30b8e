"""One small async interface for every model: a request body in, a reply out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Reply:
    """A model's response body plus what the log records about the exchange."""

    body: Mapping[str, Any]
    status: int = 200
    model: str | None = None
    usage: Mapping[str, int] | None = None
    cost_usd: float | None = None
    request_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    """A model the scheduler can ask; raises ``BackendError`` for a failed exchange."""

    name: str
    simulated: bool

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Send one request body and return the reply."""
        ...

    def describe(self) -> dict[str, Any]:
        """The model spec for the manifest (never a key)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
