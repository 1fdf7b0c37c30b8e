"""The System One backend: any ``/v1/systemone`` server, as a translation over ``http``.

One ``answer`` is one POST of the body exactly as given (serialised with orjson, so criteria
keep their insertion order) and one reading of the reply: a 2xx whose body is a JSON object
becomes a ``Reply`` with the served model, usage, cost and request id. Whether it answers
every question is checked by the caller, as for every backend. A 2xx that is not a JSON
object is a ``TransientError("malformed")``; everything about HTTP (timeouts, statuses,
``Retry-After``, the key and its scrubbing) is ``HttpEndpoint``'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
import orjson

from harness.backends.base import Reply
from harness.backends.http.endpoint import ERROR_BODY_CHARS, HttpEndpoint
from harness.backends.pricing import cost_usd, price_for, price_record
from harness.errors import BackendError, ConfigError, TransientError

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "jev-latest"
ENDPOINT = "/v1/systemone"


def normalise_base_url(url: str) -> str:
    """``https://host[/prefix]`` without a trailing ``/``, ``/v1`` or ``/v1/systemone``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base URL must start with http:// or https://; got {url!r}")
    for suffix in (ENDPOINT, "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url


def _to_json(obj: Any) -> Any:
    if isinstance(obj, Mapping):  # orjson serialises dict only; keep insertion order
        return dict(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} in a request body")


class SystemOneBackend:
    """Any ``/v1/systemone`` server: TypeSafe's hosted Jev, OpenRouter, LiteLLM, llama.cpp."""

    simulated = False

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 64,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        price_per_million: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """None for ``model``, ``base_url`` or ``api_key`` reads ``TYPESAFE_DEFAULT_MODEL``,
        ``TYPESAFE_BASE_URL`` or ``TYPESAFE_API_KEY`` from ``env`` (default ``os.environ``);
        ``api_key=""`` sends no key. ``transport`` is for tests."""
        environ = os.environ if env is None else env
        self.model = model or environ.get("TYPESAFE_DEFAULT_MODEL") or DEFAULT_MODEL
        self.name = self.model
        self.base_url = normalise_base_url(
            base_url or environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
        )
        self.concurrency = concurrency
        self._override = price_per_million
        # The price table applies at the hosted API only (harness.backends.pricing).
        self._price = price_for(self.model, self.base_url, price_per_million)
        self.price_per_million = None if self._price is None else self._price.input_per_million
        self._http = HttpEndpoint(
            self.base_url + ENDPOINT,
            api_key=environ.get("TYPESAFE_API_KEY", "") if api_key is None else api_key,
            key_variable="TYPESAFE_API_KEY",
            request_id_header="x-typesafe-request-id",
            concurrency=concurrency,
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            transport=transport,
        )

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return self._http.url

    def __repr__(self) -> str:
        return (
            f"SystemOneBackend(model={self.model!r}, base_url={self._http.scrub(self.base_url)!r})"
        )

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec: endpoint, timeouts and price, never the key."""
        return {
            "name": self.model,
            "backend": "systemone",
            "wire": "systemone",
            "simulated": False,
            "base_url": self._http.scrub(self.base_url),
            "params": {
                "timeout_s": self._http.timeout_s,
                "connect_timeout_s": self._http.connect_timeout_s,
                "concurrency": self.concurrency,
                "price": price_record(self.model, self.base_url, self._override),
                "api_key_set": self._http.has_key,
            },
        }

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """POST ``body`` once and read the reply (see the module docstring)."""
        try:
            content = orjson.dumps(body, default=_to_json)
        except TypeError as exc:
            raise BackendError("bad_body", f"request body is not JSON: {exc}") from exc
        response = await self._http.post(content)
        status, request_id = response.status, response.request_id
        try:
            parsed = orjson.loads(response.content)
            problem = None if isinstance(parsed, dict) else "response body is not a JSON object"
        except orjson.JSONDecodeError as exc:
            problem = str(exc)
        if problem is not None:
            raise TransientError(
                "malformed",
                f"malformed response (status {status}) from {self.url}: {problem}",
                status=status,
                body=self._http.text(response)[:ERROR_BODY_CHARS],
                request_id=request_id,
            )
        usage = parsed.get("usage") if isinstance(parsed.get("usage"), Mapping) else None
        served = parsed.get("model") if isinstance(parsed.get("model"), str) else None
        cost = cost_usd(usage, response.headers, self._price)
        return Reply(parsed, status, served, usage, cost, request_id)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> SystemOneBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
