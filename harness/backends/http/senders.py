"""The ``Sender`` interface, and the two senders beside the default (``http11``): any httpx
transport, and aiohttp.

Every sender returns a ``RawResponse`` (status, case-insensitive headers, body bytes) or
raises its library's own exception, which ``classify`` turns into a log kind. Nothing else
in the harness touches these libraries.

The httpx sender is for what takes an ``httpx.AsyncBaseTransport``: the tests'
``httpx.MockTransport`` scripts and the bench's ``httpx-aiohttp`` comparison. The aiohttp
sender was the default until ``http11`` replaced it (``make bench``, section "loopback
HTTP": a bare loop of aiohttp POSTs spends 2.1-3.8x the CPU of one over ``http11``; httpx
spends several times aiohttp's, most of it in httpcore's pool bookkeeping); the bench still
runs the harness over it, beside the default, so that the two stay measured in one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, Protocol

import aiohttp
import anyio
import httpx


# NamedTuples rather than frozen dataclasses: one of each is built per attempt, and a tuple
# is built in a fraction of the time a frozen dataclass's __init__ takes.
class RawResponse(NamedTuple):
    """Any response: its status, headers (case-insensitive), and body bytes."""

    status: int
    headers: Mapping[str, str]
    content: bytes


class Sender(Protocol):
    """Sends one POST; raises the library's exception for a transport failure or timeout."""

    async def post(self, url: str, content: bytes) -> RawResponse:
        """POST ``content`` to ``url`` once."""
        ...

    async def aclose(self) -> None:
        """Close the pool."""
        ...


class AiohttpSender:
    """One aiohttp session, made on first use (aiohttp wants a running event loop)."""

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        concurrency: int,
        timeout_s: float,
        connect_timeout_s: float,
    ) -> None:
        self._headers = dict(headers)
        self._concurrency = concurrency
        # ``total`` bounds the whole attempt (connect, send, wait, read), as the docs promise.
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self._concurrency, limit_per_host=0)
        self._session = aiohttp.ClientSession(
            connector=connector, headers=self._headers, timeout=self._timeout
        )
        return self._session

    async def post(self, url: str, content: bytes) -> RawResponse:
        """POST once; redirects are not followed (a POST's base URL is wrong, not the request)."""
        session = self._session or self._open()
        async with session.post(url, data=content, allow_redirects=False) as response:
            body = await response.read()
            return RawResponse(response.status, response.headers, body)

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class HttpxSender:
    """An ``httpx.AsyncClient`` over a given transport (tests, comparisons)."""

    def __init__(
        self,
        headers: Mapping[str, str],
        transport: httpx.AsyncBaseTransport,
        *,
        timeout_s: float,
        connect_timeout_s: float,
    ) -> None:
        self._timeout_s = timeout_s
        self._client = httpx.AsyncClient(
            headers=dict(headers),
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=transport,
        )

    async def post(self, url: str, content: bytes) -> RawResponse:
        """POST once; httpx's timeouts bound each phase, ``fail_after`` the whole attempt."""
        with anyio.fail_after(self._timeout_s):
            response = await self._client.post(url, content=content)
        return RawResponse(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        """Close the client."""
        await self._client.aclose()
