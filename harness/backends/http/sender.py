"""The one HTTP sender: POSTs through an aiohttp session, and the ``Sender`` interface.

Why aiohttp and not httpx over ``httpx-aiohttp`` (CPU per request, proxies from the
environment, TLS against the system's trust store, HTTP/2 on neither): docs/performance.md
("Which sender, and why").

Every attempt returns a ``RawResponse`` or raises aiohttp's own exception (or
``TimeoutError``), which ``classify`` turns into a log kind. Nothing else in the harness
touches the library. Runs on asyncio only, as aiohttp does.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Mapping
from typing import NamedTuple, Protocol
from urllib.parse import urlsplit

import aiohttp

from harness.backends.base import Transport

# aiohttp names itself "Python/3.x aiohttp/3.x"; ours says who sends (some gateways log it).
USER_AGENT = "numericjev"


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


class HttpSender:
    """One aiohttp session over a keep-alive pool, made on first use (it needs a running loop)."""

    def __init__(
        self,
        headers: Mapping[str, str],
        transport: Transport,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``headers`` go with every request (the key among them: never printed); at most
        ``transport.concurrency`` connections are open; ``ssl_context`` replaces the
        system's trust (tests: a throwaway CA)."""
        self._headers = {"User-Agent": USER_AGENT, **headers}
        self.transport = transport
        # ``total`` bounds the whole attempt (connect, send, wait, read); ``sock_connect``
        # the connection alone, so an unreachable host fails fast within the attempt.
        self._timeout = aiohttp.ClientTimeout(
            total=transport.timeout_s, sock_connect=transport.connect_timeout_s
        )
        self._ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}  # URL -> the proxy the environment names

    def __repr__(self) -> str:
        return f"HttpSender({self.transport})"

    def _open(self) -> aiohttp.ClientSession:
        # Made here, not at import: SSL_CERT_FILE and the system store are read when the run
        # starts (aiohttp's own default context is built once, when aiohttp is imported).
        context = self._ssl or ssl.create_default_context()
        connector = aiohttp.TCPConnector(
            limit=self.transport.concurrency, limit_per_host=0, ssl=context
        )
        self._session = aiohttp.ClientSession(
            connector=connector, headers=self._headers, timeout=self._timeout
        )
        return self._session

    async def post(self, url: str, content: bytes) -> RawResponse:
        """POST once; redirects are not followed (a POST's redirect means a wrong base URL)."""
        session = self._session or self._open()
        if url not in self._proxies:
            # Read once per URL, when the run first sends: aiohttp's ``trust_env`` reads the
            # environment (and ~/.netrc) again on every request, measured at ~0.6 ms of CPU each.
            self._proxies[url] = proxy_for(url)
        proxy = self._proxies[url]
        async with session.post(url, data=content, proxy=proxy, allow_redirects=False) as response:
            body = await response.read()
            return RawResponse(response.status, response.headers, body)

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY`` for https, ``HTTP_PROXY``
    for http, else ``ALL_PROXY``), or None where there is none or ``NO_PROXY`` exempts it."""
    try:
        parts = urlsplit(url)
    except ValueError:  # aiohttp says what is wrong with the URL when it is used
        return None
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.netloc.rpartition("@")[2]):
        return None
    return proxy
