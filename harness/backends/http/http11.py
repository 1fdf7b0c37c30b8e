"""HTTP/1.1 POSTs over keep-alive asyncio connections, parsed by llhttp (``httptools``).

The default sender of ``HttpEndpoint``. Why not aiohttp, which it replaced: against one
serve-sim (``make bench``, 2026-11-23, four runs), a bare loop of aiohttp POSTs spends
2.1-3.8x the CPU per request of a bare loop over this module (aiohttp builds a request, a
response, a timer context, a trace context, URL and header objects for every call); that
was most of the harness's client CPU. What a POST here costs: one prepared header block and one ``transport.write``, a C
parser fed each chunk the socket delivers, a future resolved when the message is complete.

What it does, and no more, because nothing else is asked of it:

- POST to a fixed ``http://`` or ``https://`` URL (TLS with the system's default
  certificates); redirects are not followed (``classify`` reads a 3xx as a wrong base URL);
- one deadline per attempt (connect, send, wait and read together; checked by a sweep every
  tenth of the timeout, at most every second), plus a connect timeout;
- keep-alive: a finished response's connection goes back to an idle list, unless either side
  asked to close; a connection the server closed while idle is dropped when it is next taken;
- response bodies framed by ``Content-Length``, chunked, or (HTTP/1.0 style) the close of the
  connection; ``gzip`` and ``deflate`` content codings are decoded (both are asked for, as
  aiohttp and httpx ask);
- a cancelled or timed-out attempt closes its connection (its reply may still arrive) and
  never returns it to the pool.

Failures are raised as ``HttpConnectionError`` (a ``ConnectionError``: connection refused,
reset, closed mid-reply, a reply that is not HTTP), ``TimeoutError``, or ``UnusableUrl``;
``classify`` reads them as the aiohttp and httpx exceptions they stand for. Runs on asyncio
only, as aiohttp did.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httptools

from harness.backends.http.senders import RawResponse

ACCEPT_ENCODING = "gzip, deflate"
# aiohttp and httpx name themselves; a request with no User-Agent at all is refused by some
# proxies and bot filters in front of APIs.
USER_AGENT = "numericjev"


class HttpConnectionError(ConnectionError):
    """The exchange failed below HTTP: no connection, a reset, a reply cut short or garbled."""


class UnusableUrl(ValueError):
    """A URL this sender cannot POST to (not http:// or https://, or no host)."""


class Headers(dict[str, str]):
    """Response headers, looked up case-insensitively (names are stored lower-case)."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value of header ``key`` (any case), or ``default``."""
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


class _Target:
    """Where one URL's POSTs go: host, port, TLS, the prepared header block, idle connections."""

    __slots__ = ("head", "host", "idle", "port", "ssl")

    def __init__(self, url: str, headers: Mapping[str, str], context: ssl.SSLContext | None):
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UnusableUrl(f"cannot use the URL {url!r}: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UnusableUrl(f"cannot use the URL {url!r}: it must start http:// or https://")
        tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = port or (443 if tls else 80)
        self.ssl = (context or ssl.create_default_context()) if tls else None
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = self.host if ":" not in self.host else f"[{self.host}]"
        netloc = host if port is None else f"{host}:{port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {netloc}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        # Latin-1, as HTTP/1.1 header bytes are; the body's length ends the block per request.
        self.head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self.idle: list[_Connection] = []


class _Connection(asyncio.Protocol):
    """One keep-alive connection: feeds what arrives to the parser, resolves the waiter."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.open = True
        self.waiter: asyncio.Future[RawResponse] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._chunks: list[bytes] = []
        self._headers_done = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: the connection cannot be trusted
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(HttpConnectionError(f"the server sent a reply that is not HTTP: {exc}"))
            self.close()

    def on_message_begin(self) -> None:
        if self.waiter is None:  # a reply after the reply, in the same bytes: never reuse
            self.open = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
            waiter = self.waiter
            self._reset()
            self.waiter = waiter
            return
        if not self.parser.should_keep_alive():
            self.open = False  # handed back to nobody; closed once the reply is read
        self._resolve(status)

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if self.waiter is None or self.waiter.done():
            return
        if self._headers_done and not self._framed():  # a body that ends with the connection
            self._resolve(self.parser.get_status_code())
            return
        what = "closed the connection" if exc is None else f"dropped the connection ({exc})"
        self._fail(HttpConnectionError(f"the server {what} before the reply was complete"))

    def _framed(self) -> bool:
        """Whether the reply's length is known (Content-Length, chunked): then it does not end
        with the connection. Read only when a connection ends mid-reply, not per header."""
        for name, value in self._headers:
            lower = name.lower()
            if lower == b"content-length" or (
                lower == b"transfer-encoding" and b"chunked" in value.lower()
            ):
                return True
        return False

    def close(self) -> None:
        """Close it: never reused (an attempt given up, a reply that broke the framing)."""
        self.open = False
        if self.transport is not None:
            self.transport.close()

    def _resolve(self, status: int) -> None:
        waiter, headers, chunks = self.waiter, self._headers, self._chunks
        self._reset()
        if waiter is None or waiter.done():
            return
        table = Headers()
        for name, value in headers:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            earlier = dict.get(table, key)  # a repeated header: its values joined, as RFC 9110
            table[key] = text if earlier is None else f"{earlier}, {text}"
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        coding = table.get("content-encoding")
        if coding and body:
            try:
                body = _decoded(coding, body)
            except (zlib.error, ValueError) as exc:
                self.close()
                waiter.set_exception(HttpConnectionError(f"cannot decode the reply body: {exc}"))
                return
        waiter.set_result(RawResponse(status, table, body))

    def _fail(self, error: BaseException) -> None:
        waiter = self.waiter
        self._reset()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _reset(self) -> None:
        self.waiter = None
        self._headers = []
        self._chunks = []
        self._headers_done = False


def _decoded(coding: str, body: bytes) -> bytes:
    """``body`` without its content coding (gzip, deflate, identity)."""
    coding = coding.strip().lower()
    if coding in ("gzip", "x-gzip"):
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
        try:
            return zlib.decompress(body)
        except zlib.error:
            return zlib.decompress(body, -zlib.MAX_WBITS)
    if coding == "identity":
        return body
    raise ValueError(f"unsupported Content-Encoding {coding!r}")


class Http11Sender:
    """POSTs over a pool of keep-alive connections, made on first use in the running loop."""

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        concurrency: int,
        timeout_s: float,
        connect_timeout_s: float,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``headers`` go with every request (the key among them: never printed, never
        logged); at most ``concurrency`` idle connections are kept; ``ssl_context`` replaces
        the system's default TLS context (tests: a throwaway CA)."""
        self._headers = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING, **headers}
        self._keep = concurrency
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._ssl = ssl_context
        self._targets: dict[str, _Target] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # Deadlines are checked by one sweep every tick while anything is in flight, not by
        # a timer per attempt (side by side, that timer was 10% of a bare POST's CPU). An
        # attempt therefore fails at most one tick after its deadline: a tenth of the
        # timeout, at most a second (aiohttp rounds timeouts over 5 s up to the second).
        self._tick = min(1.0, max(0.01, timeout_s / 10))
        self._busy: dict[_Connection, float] = {}  # in flight: the attempt's deadline
        self._sweeper: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"Http11Sender(concurrency={self._keep}, timeout_s={self._timeout_s})"

    async def post(self, url: str, content: bytes) -> RawResponse:
        """POST ``content`` to ``url`` once; the whole attempt within the timeout."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop: the old one's connections are gone
            self._drop(closed_loop=True)
            self._loop, self._sweeper = loop, None
            self._busy.clear()
        target = self._targets.get(url) or self._target(url)
        deadline = loop.time() + self._timeout_s
        conn = _reusable(target.idle) or await self._connect(loop, target, deadline)
        waiter: asyncio.Future[RawResponse] = loop.create_future()
        conn.waiter = waiter
        assert conn.transport is not None
        conn.transport.write(b"%s%d\r\n\r\n%s" % (target.head, len(content), content))
        busy = self._busy
        busy[conn] = deadline
        if self._sweeper is None:
            self._sweeper = loop.call_later(self._tick, self._sweep)
        try:
            response = await waiter
        except BaseException:
            conn.close()  # cancelled, timed out or failed: its reply must not reach the next
            raise
        finally:
            busy.pop(conn, None)
        if conn.open and len(target.idle) < self._keep:
            target.idle.append(conn)
        else:
            conn.close()
        return response

    def _target(self, url: str) -> _Target:
        target = self._targets[url] = _Target(url, self._headers, self._ssl)
        return target

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, target: _Target, deadline: float
    ) -> _Connection:
        """A new connection to ``target``, within the connect timeout and the deadline."""
        wait = min(self._connect_timeout_s, max(0.0, deadline - loop.time()))
        try:
            async with asyncio.timeout(wait):
                _, conn = await loop.create_connection(
                    _Connection,
                    target.host,
                    target.port,
                    ssl=target.ssl,
                    server_hostname=target.host if target.ssl else None,
                )
        except TimeoutError:
            raise TimeoutError(
                f"no connection to {target.host}:{target.port} within {wait:g} s"
            ) from None
        except OSError as exc:  # refused, unreachable, a name that does not resolve, TLS
            raise HttpConnectionError(
                f"cannot connect to {target.host}:{target.port}: {exc}"
            ) from None
        return conn

    def _sweep(self) -> None:
        """Fail every attempt past its deadline (closing its connection); again in a tick
        while any is in flight."""
        loop = self._loop
        assert loop is not None
        now = loop.time()
        for conn, deadline in list(self._busy.items()):
            waiter = conn.waiter
            if deadline <= now and waiter is not None and not waiter.done():
                waiter.set_exception(
                    TimeoutError(f"no complete reply within {self._timeout_s:g} s")
                )
                conn.close()
        self._sweeper = loop.call_later(self._tick, self._sweep) if self._busy else None

    def _drop(self, *, closed_loop: bool = False) -> None:
        for target in self._targets.values():
            for conn in target.idle:
                try:
                    conn.close()
                except RuntimeError:  # its loop is closed: so is its socket, or GC closes it
                    if not closed_loop:
                        raise
            target.idle.clear()

    async def aclose(self) -> None:
        """Close every idle connection."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._drop()


def _reusable(idle: list[_Connection]) -> _Connection | None:
    """The most recently used idle connection that is still open (a plain call, not a
    coroutine: the common case of every POST)."""
    while idle:
        conn = idle.pop()
        # Not yet told of a close (connection_lost runs in a later callback) but closing.
        if conn.open and conn.transport is not None and not conn.transport.is_closing():
            return conn
    return None
