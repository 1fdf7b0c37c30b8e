"""The ``openai-decisions`` backend: OpenAI's Decisions API (``POST /v1/decisions``).

A translation at the backend's edge (``harness.wire.decisions``): the decoders and the log
see System One; the log line also keeps the exact body sent (``sent``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Unpack

from harness.backends.base import Reply, ServerOptions
from harness.backends.remote import RemoteBackend, dumps, openai_settings
from harness.errors import BackendError, TransientError
from harness.wire import WireError, from_decisions_response, to_decisions_request

WIRE = "openai-decisions"


class OpenAIDecisionsBackend(RemoteBackend):
    """Any server of OpenAI's Decisions shape: OpenAI, a proxy, or ``serve-sim --wire``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        env: Mapping[str, str] | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        """The server is ``base_url``, else ``OPENAI_BASE_URL``, else OpenAI's API; the key
        is ``OPENAI_API_KEY`` from ``env`` (default ``os.environ``)."""
        base, key = openai_settings(base_url, os.environ if env is None else env)
        super().__init__(model, WIRE, base, api_key=key, **options)

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Translate ``body``, POST it once, and translate the reply back."""
        try:
            sent = to_decisions_request(body)
        except WireError as exc:
            raise BackendError("bad_request", f"cannot ask on {WIRE}: {exc}") from exc
        try:
            response = await self.http.post(dumps(sent))
        except BackendError as error:
            error.sent = sent  # a failed attempt's line records what was sent, too
            raise
        parsed = self.parse(response, sent)
        usage = parsed.get("usage") if isinstance(parsed.get("usage"), Mapping) else None
        cost = self.cost(usage, response.headers)
        try:
            reply = from_decisions_response(body, parsed)
        except WireError as exc:
            raise TransientError(
                "malformed",
                f"malformed Decisions response (status {response.status}) from "
                f"{self.http.url}: {exc}",
                status=response.status,
                body=parsed,
                request_id=response.request_id,
                usage=usage,
                cost_usd=cost,
                sent=sent,
            ) from exc
        served = reply.get("model") if isinstance(reply.get("model"), str) else None
        usage = reply.get("usage") or None
        return Reply(reply, response.status, served, usage, cost, response.request_id, sent)
