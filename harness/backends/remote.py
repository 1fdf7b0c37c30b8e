"""What the HTTP backends share besides the transport: server, key, price, manifest.

``RemoteBackend`` is one model at one endpoint: the ``HttpEndpoint`` that POSTs (the shared
HTTP layer, ``harness.backends.http``), the price that applies there
(``harness.backends.pricing``), the JSON reading of a 2xx, and the manifest description. A
backend for a wire format (``systemone``, ``decisions``, ``chat``) subclasses it and only
translates bodies.

Keys and URLs of the OpenAI wires (``openai_settings``; the table in docs/models.md): the
key ``OPENAI_API_KEY`` goes to whichever server ``--base-url``, ``OPENAI_BASE_URL`` or
OpenAI's API names; OpenAI's own API without a key is refused before a run folder exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Unpack
from urllib.parse import urlsplit

import orjson

from harness.backends.base import ServerOptions, Transport
from harness.backends.http.endpoint import ERROR_BODY_CHARS, HttpEndpoint, HttpResponse, checked_url
from harness.backends.pricing import cost_usd, price_for, price_record
from harness.errors import BackendError, ConfigError, TransientError
from harness.wire import ROUTES

OPENAI_BASE_URL = "https://api.openai.com"
OPENAI_HOST = "api.openai.com"
OPENAI_KEY_VARIABLE = "OPENAI_API_KEY"
OPENAI_URL_VARIABLE = "OPENAI_BASE_URL"


def server_base_url(url: str) -> str:
    """``https://host[/prefix]`` without a trailing ``/``, ``/v1`` (as ``OPENAI_BASE_URL``
    ends) or any wire's route (a pasted endpoint URL): the wire adds its route."""
    url = checked_url(url.strip()).rstrip("/")
    for suffix in (*ROUTES.values(), "/v1"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def openai_server(base_url: str | None, environ: Mapping[str, str]) -> tuple[str, bool]:
    """The server an OpenAI-wire backend calls (``base_url``, else ``OPENAI_BASE_URL``, else
    OpenAI's API; checked), and whether it is OpenAI's own API."""
    base = server_base_url(base_url or environ.get(OPENAI_URL_VARIABLE) or OPENAI_BASE_URL)
    return base, (urlsplit(base).hostname or "").lower() == OPENAI_HOST


def openai_settings(
    base_url: str | None, environ: Mapping[str, str]
) -> tuple[str, str]:  # (base URL, key)
    """The server and key of an OpenAI-wire backend; refuses OpenAI's API without a key."""
    base, hosted = openai_server(base_url, environ)
    key = environ.get(OPENAI_KEY_VARIABLE, "").strip()
    if hosted and not key:
        # Fail before a run folder exists: every request to OpenAI would be a 401.
        raise ConfigError(
            f"{base} is OpenAI's API, which needs a key: set {OPENAI_KEY_VARIABLE}, or pass "
            "--base-url for another server (e.g. a local vLLM or serve-sim)"
        )
    return base, key


def dumps(body: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """A request body as JSON bytes (``default`` as orjson takes it); else ``bad_body``."""
    try:
        return orjson.dumps(body, default=default)
    except TypeError as exc:
        raise BackendError("bad_body", f"request body is not JSON: {exc}") from exc


class RemoteBackend:
    """One model at one endpoint of one wire format: all of a backend but the translation of
    bodies, which each wire's subclass adds (``answer``)."""

    simulated = False

    def __init__(
        self,
        model: str,
        wire: str,
        base_url: str,
        *,
        api_key: str,
        key_variable: str = OPENAI_KEY_VARIABLE,
        request_id_header: str = "x-request-id",
        **options: Unpack[ServerOptions],
    ) -> None:
        self.name = model
        self.wire = wire
        self.base_url = base_url
        self.key_env = options.get("key_env")
        override = options.get("price_per_million")
        self._overridden = override is not None  # a price given, not the table's
        self.price = price_for(model, base_url, override, options.get("price_per_million_output"))
        self.http = HttpEndpoint(
            base_url + ROUTES[wire],
            api_key=api_key,
            key_variable=key_variable,
            request_id_header=request_id_header,
            transport=options.get("transport", Transport()),
        )

    @property
    def price_per_million(self) -> float | None:
        """USD per million input tokens where a price applies here (None: unknown)."""
        return None if self.price is None else self.price.input_per_million

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.name!r}, url={self.http!r})"

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec: wire, endpoint, timeouts and price, never the key."""
        return {
            "name": self.name,
            "backend": self.wire,
            "wire": self.wire,
            "simulated": False,
            "base_url": self.http.scrub(self.base_url),
            "params": {
                "timeout_s": self.http.transport.timeout_s,
                "connect_timeout_s": self.http.transport.connect_timeout_s,
                "concurrency": self.http.transport.concurrency,
                "price": price_record(self.price, self._overridden),
                "api_key_set": self.http.has_key,
                **({} if self.key_env is None else {"key_env": self.key_env}),
            },
        }

    def cost(self, usage: Mapping[str, Any] | None, headers: Mapping[str, str]) -> float | None:
        """An exchange's cost: the server's own figure, else the price here, else None."""
        return cost_usd(usage, headers, self.price)

    def parse(self, response: HttpResponse, sent: Any) -> dict[str, Any]:
        """A 2xx body as a JSON object; else a retryable ``malformed`` failure."""
        try:
            parsed = orjson.loads(response.content)
            problem = None if isinstance(parsed, dict) else "response body is not a JSON object"
        except orjson.JSONDecodeError as exc:
            problem = str(exc)
        if problem is not None:
            raise TransientError(
                "malformed",
                f"malformed response (status {response.status}) from {self.http.url}: {problem}",
                status=response.status,
                body=response.content.decode("utf-8", errors="replace")[:ERROR_BODY_CHARS],
                request_id=response.request_id,
                sent=sent,
            )
        return parsed

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()
