"""One HTTP endpoint as every HTTP backend uses it: POST bytes, get a 2xx or a typed failure.

A backend for a wire format only translates: its body into bytes, the 2xx's bytes into a
``Reply``. Everything about HTTP lives here, once:

- posting with headers, per-phase timeouts and one deadline for the whole attempt, and
  reading status, headers, body and the server's request id;
- non-2xx and transport errors as the typed failure ``classify`` decides, with
  ``Retry-After`` and an excerpt of the error body;
- the API key in one private attribute, scrubbed (with any bearer token or URL
  credentials) from every message, error body and 2xx body that leaves this module.

Sending itself is ``sender.py``'s (aiohttp): with ``classify.py`` the only modules that touch
an HTTP library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

import aiohttp
import yarl

from harness.backends.base import Transport
from harness.backends.http.classify import classify, error_excerpt
from harness.backends.http.sender import HttpSender, Sender
from harness.errors import BackendError, ConfigError

ERROR_BODY_CHARS = 1000  # what a failed attempt's log line keeps of the raw error body


class HttpResponse(NamedTuple):  # a NamedTuple for speed, as ``RawResponse``
    """A 2xx response: its status, headers (case-insensitive), body bytes and request id."""

    status: int
    headers: Mapping[str, str]
    content: bytes
    request_id: str | None


def shown_url(url: str) -> str:
    """``url`` as an error message may show it: everything before its last ``@`` (short of a
    query or fragment) replaced, since an unparseable URL's credentials may run past a ``/``,
    and any query string or fragment too (``?api_key=...`` is a key)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    head = rest.partition("?")[0].partition("#")[0]
    tail = "?***" if len(head) < len(rest) else ""
    if "@" in head:
        head = f"***@{head[head.rindex('@') + 1 :]}"
    return f"{scheme}{sep}{head}{tail}"


def checked_url(url: str) -> str:
    """``url`` if aiohttp can POST to it, else a one-line ``ConfigError`` that never shows its
    credentials: unparseable (a bad port or IPv6 address), not http(s), no host, or a query
    string or fragment (a wire's route is appended to the base URL)."""
    shown = shown_url(url)
    try:
        parsed = yarl.URL(url)
        parsed.port  # noqa: B018 (an unusable port raises when it is read)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"base URL {shown} cannot be read ({exc}); check --base-url") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"base URL must start with http:// or https:// and name a host; got {shown}"
        )
    if parsed.query_string or parsed.fragment:
        raise ConfigError(
            f"base URL {shown} has a query string or fragment (?... or #...), which may hold a "
            "key and is never sent: pass the server's address and path only, and the key in "
            "its variable (a profile's key_env)"
        )
    return url


class HttpEndpoint:
    """POSTs to one URL over a shared keep-alive pool; one call is one attempt."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str = "",
        key_variable: str = "TYPESAFE_API_KEY",
        request_id_header: str = "x-request-id",
        transport: Transport = Transport(),
    ) -> None:
        """``key_variable`` names where users set the key (for the 401 message)."""
        self.__key = api_key.strip()
        self.url = checked_url(url)
        parsed = yarl.URL(url)
        if self.__key and (parsed.user is not None or parsed.password is not None):
            # Basic auth beside a key: aiohttp would refuse every request (one Authorization).
            raise ConfigError(
                f"the server URL {shown_url(url)} carries credentials (basic auth) and "
                f"{key_variable} is set too: a request has one Authorization header; drop the "
                f"credentials from the URL or unset {key_variable}"
            )
        self.transport = transport
        self._key_bytes = self.__key.encode()
        self._key_variable = key_variable
        self._request_id_header = request_id_header
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        self._sender: Sender = HttpSender(headers, transport)

    def __repr__(self) -> str:
        return f"HttpEndpoint({self.scrub(self.url)!r})"

    @property
    def has_key(self) -> bool:
        """Whether requests carry an API key."""
        return bool(self.__key)

    def scrub(self, text: str) -> str:
        """``text`` without the key, any bearer token, or URL credentials."""
        if self.__key:
            text = text.replace(self.__key, "***")
        text = re.sub(r"(?i)(bearer\s+)\S+", r"\1***", text)
        # Up to the authority's last "@": a password may hold an "@" of its own.
        return re.sub(r"(?i)(https?://)[^/?#\s]*@", r"\1***@", text)

    async def post(self, content: bytes) -> HttpResponse:
        """POST ``content`` once: a 2xx, else ``TransientError`` (429, 408, 5xx, connection,
        timeout), ``AuthError`` (401/403) or ``BackendError`` (others, an unusable URL)."""
        unchained: BackendError | None = None
        try:
            response = await self._sender.post(self.url, content)
        except (aiohttp.ClientError, ConnectionError, TimeoutError) as exc:
            decision = classify(None, exc)
            what = str(exc) or type(exc).__name__
            if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
                what = "the URL must start http:// or https:// and name a host"
            error = decision.error(self.scrub(f"{decision.kind} at {self.url}: {what}"))
            if self.scrub(what) == what:
                raise error from exc
            unchained = error  # its cause names the key: raise it outside, with no context
        if unchained is not None:
            raise unchained
        status = response.status
        request_id = response.headers.get(self._request_id_header)
        if 200 <= status < 300:
            body = response.content
            if self._key_bytes and self._key_bytes in body:  # a server echoing the key
                body = body.replace(self._key_bytes, b"***")
            return HttpResponse(status, response.headers, body, request_id)
        text = response.content.decode("utf-8", errors="replace")
        decision = classify(status, None, response.headers)
        excerpt = error_excerpt(status, response.headers.get("content-type", ""), text)
        if decision.fatal:
            what = "refused the API key" if self.__key else "requires an API key"
            message = (
                f"the server {what} ({status}): set {self._key_variable} to a valid key"
                f" (server said: {excerpt})"
            )
        else:
            message = f"HTTP {status} from {self.url}: {excerpt}"
        raise decision.error(
            self.scrub(message),
            status=status,
            body=self.scrub(text[:ERROR_BODY_CHARS]),
            request_id=request_id,
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._sender.aclose()
