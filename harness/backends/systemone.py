"""The System One backend: any ``/v1/systemone`` server, as a translation over ``http``.

One ``answer`` is one POST of the body exactly as given (serialised with orjson, so criteria
keep their insertion order); the reply becomes a ``Reply`` with the served model, usage,
cost and request id. The rest is ``RemoteBackend``'s and ``HttpEndpoint``'s, as on every wire.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Unpack

from harness.backends.base import Reply, ServerOptions
from harness.backends.http.endpoint import checked_url
from harness.backends.remote import RemoteBackend, dumps
from harness.wire import ROUTES
from harness.wire.encoded import EncodedBody

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "jev-latest"
ENDPOINT = ROUTES["systemone"]


def normalise_base_url(url: str) -> str:
    """``https://host[/prefix]`` without a trailing ``/``, ``/v1`` or ``/v1/systemone``."""
    url = checked_url(url.strip()).rstrip("/")
    for suffix in (ENDPOINT, "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url


def _to_json(obj: Any) -> Any:
    if isinstance(obj, Mapping):  # orjson serialises dict only; keep insertion order
        return dict(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} in a request body")


class SystemOneBackend(RemoteBackend):
    """Any ``/v1/systemone`` server: TypeSafe's hosted Jev, OpenRouter, LiteLLM, llama.cpp."""

    # It sends a body's bytes as they are: the caller hands it an ``EncodedBody`` whose bytes
    # keyed the request cache, serialised once (``harness.wire.encoded``).
    sends_body_json = True

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        """None for ``model``, ``base_url`` or ``api_key`` reads ``TYPESAFE_DEFAULT_MODEL``,
        ``TYPESAFE_BASE_URL`` or ``TYPESAFE_API_KEY`` from ``env`` (default ``os.environ``);
        ``api_key=""`` sends no key."""
        environ = os.environ if env is None else env
        model = model or environ.get("TYPESAFE_DEFAULT_MODEL") or DEFAULT_MODEL
        base = base_url or environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
        # The price table applies at the hosted API only (harness.backends.pricing).
        super().__init__(
            model,
            "systemone",
            normalise_base_url(base),
            api_key=environ.get("TYPESAFE_API_KEY", "") if api_key is None else api_key,
            key_variable="TYPESAFE_API_KEY",
            request_id_header="x-typesafe-request-id",
            **options,
        )

    def __repr__(self) -> str:
        scrubbed = self.http.scrub(self.base_url)
        return f"SystemOneBackend(model={self.name!r}, base_url={scrubbed!r})"

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """POST ``body`` once and read the reply (see the module docstring)."""
        content = body.json if type(body) is EncodedBody else dumps(body, _to_json)
        response = await self.http.post(content)
        parsed = self.parse(response, None)
        usage, served = parsed.get("usage"), parsed.get("model")
        if type(usage) is not dict and not isinstance(usage, Mapping):  # the ABC check is slow
            usage = None
        if type(served) is not str:
            served = None
        cost = self.cost(usage, response.headers)
        return Reply(
            parsed, response.status, served, usage, cost, response.request_id, None, content,
            response.content,
        )  # fmt: skip

    async def __aenter__(self) -> SystemOneBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
