"""The default HTTP sender (``harness.backends.http.http11``) against real loopback servers
that answer byte for byte as each test scripts: framing, keep-alive, codings, failures."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest
import trustme
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.http.classify import classify
from harness.backends.http.http11 import (
    Headers,
    Http11Sender,
    HttpConnectionError,
    UnusableUrl,
    _Connection,
)
from harness.backends.http.senders import RawResponse

Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]  # True: keep the connection


class Script:
    """A loopback server: reads each request whole, lets ``reply`` answer it."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = asyncio.Event()  # set whenever a connection ends

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                if not await self.reply(request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.closed.set()


@asynccontextmanager
async def scripted(
    reply: Reply, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, Script]]:
    """Serve ``reply`` on a free loopback port; yields the POST URL and the script."""
    script = Script(reply)
    server = await asyncio.start_server(script.handle, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/v1/systemone", script
    finally:
        server.close()


def sender(timeout_s: float = 5.0, trust: ssl.SSLContext | None = None) -> Http11Sender:
    return Http11Sender(
        {"Content-Type": "application/json", "Authorization": "Bearer sk-secret"},
        concurrency=4,
        timeout_s=timeout_s,
        connect_timeout_s=timeout_s,
        ssl_context=trust,
    )


def sized(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def echo(request: bytes, writer: asyncio.StreamWriter) -> bool:
    """200 with the request body and an id header."""
    body = request.split(b"\r\n\r\n", 1)[1]
    writer.write(sized(body, "X-Request-Id: r1", "Content-Type: application/json"))
    await writer.drain()
    return True


async def test_posts_reuse_one_keep_alive_connection() -> None:
    async with scripted(echo) as (url, script):
        s = sender()
        for i in range(5):
            reply = await s.post(url, b'{"n": %d}' % i)
            assert reply == RawResponse(200, reply.headers, b'{"n": %d}' % i)
            assert reply.headers.get("x-request-id") == reply.headers["X-REQUEST-ID"] == "r1"
        await s.aclose()
    assert script.connections == 1
    head = script.requests[0].split(b"\r\n\r\n")[0].decode()
    assert head.startswith("POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1:")
    assert "Content-Length: 8" in head and "Authorization: Bearer sk-secret" in head
    assert "User-Agent: numericjev" in head
    assert "sk-secret" not in repr(s)


async def test_https_verifies_the_server_certificate() -> None:
    ca = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(served)
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with scripted(echo, tls=served) as (url, script):
        s = sender(trust=trusting)
        for _ in range(3):
            assert (await s.post(url, b"{}")).content == b"{}"
        await s.aclose()
        assert script.connections == 1
        strict = sender()  # the system's CAs: this throwaway CA is not among them
        with pytest.raises(HttpConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            await strict.post(url, b"{}")


async def test_chunked_and_close_delimited_bodies_arrive_whole() -> None:
    async def chunked(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b'{"a":', b" 1", b"}"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        return True

    async def until_close(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"b": 2}')
        await writer.drain()
        return False  # the body ends where the connection does

    for reply, expected in ((chunked, b'{"a": 1}'), (until_close, b'{"b": 2}')):
        async with scripted(reply) as (url, script):
            s = sender()
            assert (await s.post(url, b"{}")).content == expected
            assert (await s.post(url, b"{}")).content == expected
            await s.aclose()
        assert script.connections == (1 if reply is chunked else 2)


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers
    ],
)
async def test_compressed_replies_are_decoded(coding: str, encode: Callable) -> None:
    payload = b'{"answers": "' + b"x" * 5000 + b'"}'

    async def compressed(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(sized(encode(payload), f"Content-Encoding: {coding}"))
        return True

    async with scripted(compressed) as (url, script):
        s = sender()
        assert (await s.post(url, b"{}")).content == payload
        await s.aclose()
    assert b"Accept-Encoding: gzip, deflate" in script.requests[0]


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def once(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(sized(b"{}"))
        await writer.drain()
        return False  # closes without saying so (no Connection: close)

    async with scripted(once) as (url, script):
        s = sender()
        for _ in range(3):
            script.closed.clear()
            assert (await s.post(url, b"{}")).status == 200
            await script.closed.wait()
            await asyncio.sleep(0.01)  # the FIN reaches the client's loop
        await s.aclose()
    assert script.connections == 3


@pytest.mark.parametrize("extra", [sized(b'{"stale": 1}'), b"HTTP/1.1 200 OK\r\nContent-Le"])
async def test_bytes_after_the_reply_retire_the_connection(extra: bytes) -> None:
    async def chatty(request: bytes, writer: asyncio.StreamWriter) -> bool:
        body = request.split(b"\r\n\r\n", 1)[1]
        writer.write(sized(body) + extra)  # one write: the extra bytes arrive with the reply
        await writer.drain()
        return True

    async with scripted(chatty) as (url, script):
        s = sender()
        for body in (b'{"n": 1}', b'{"n": 2}', b'{"n": 3}'):
            assert (await s.post(url, body)).content == body
        await s.aclose()
    assert script.connections == 3


async def test_interim_replies_are_skipped_and_headers_are_case_insensitive() -> None:
    async def continued(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(sized(b"{}", "Retry-After: 3", "Vary: a", "vary: b", status="429 Slow"))
        return True

    async with scripted(continued) as (url, _):
        s = sender()
        reply = await s.post(url, b"{}")
        await s.aclose()
    assert reply.status == 429 and reply.headers["VARY"] == "a, b"
    assert classify(429, None, reply.headers).wait_s == 3.0


@pytest.mark.parametrize(
    "broken",
    [
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"cut',  # closed mid-body
        b"HTTP/1.1 200 OK\r\nContent-Le",  # closed mid-headers
        b"SSH-2.0-OpenSSH_9.6\r\n",  # not HTTP
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: gzip\r\n\r\nnope",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Encoding: br\r\n\r\n{}",
    ],
)
async def test_broken_replies_are_connection_errors_and_never_reused(broken: bytes) -> None:
    async def garbled(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(broken)
        await writer.drain()
        return False

    async with scripted(garbled) as (url, script):
        s = sender()
        for _ in range(2):
            with pytest.raises(HttpConnectionError) as caught:
                await s.post(url, b"{}")
            decision = classify(None, caught.value)
            assert (decision.retry, decision.kind) == (True, "connection")
        await s.aclose()
    assert script.connections == 2


async def test_the_deadline_covers_the_whole_attempt_and_closes_the_connection() -> None:
    async def trickle(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n")
        for _ in range(50):  # every byte in time for a per-read timeout, never for the total
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.02)
        return True

    async with scripted(trickle) as (url, script):
        s = sender(timeout_s=0.2)
        with pytest.raises(TimeoutError):
            await s.post(url, b"{}")
        assert classify(None, TimeoutError()).kind == "timeout"
        await s.aclose()
        with anyio.fail_after(5):
            await script.closed.wait()


async def test_a_cancelled_attempt_never_hands_its_reply_to_the_next() -> None:
    gate = asyncio.Event()

    async def late(request: bytes, writer: asyncio.StreamWriter) -> bool:
        body = request.split(b"\r\n\r\n", 1)[1]
        if body == b"first":
            await gate.wait()
        writer.write(sized(body))
        await writer.drain()
        return True

    async with scripted(late) as (url, script):
        s = sender()
        with anyio.move_on_after(0.1):
            await s.post(url, b"first")
        gate.set()
        assert (await s.post(url, b"second")).content == b"second"
        await s.aclose()
    assert script.connections == 2


async def test_no_server_and_unusable_urls() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now
    s = sender()
    with pytest.raises(HttpConnectionError, match="cannot connect"):
        await s.post(f"http://127.0.0.1:{port}/v1/systemone", b"{}")
    for url in ("ftp://example.com/x", "127.0.0.1:8000/v1", "http://[::1/x", "http:///path"):
        with pytest.raises(UnusableUrl) as caught:
            await s.post(url, b"{}")
        assert (classify(None, caught.value).retry, str(caught.value).count(url)) == (False, 1)


def test_headers_are_a_case_insensitive_mapping() -> None:
    headers = Headers({"content-type": "application/json"})
    assert headers.get("Content-Type") == headers["CONTENT-TYPE"] == "application/json"
    assert "Content-Type" in headers and "x" not in headers and 1 not in headers
    assert headers.get("x", "none") == "none"


class _Transport(asyncio.Transport):
    """Records closing; sends nothing (the parser is fed by hand)."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True


@given(
    body=st.binary(max_size=3000),
    chunked=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_any_body_split_anywhere_is_read_whole(body: bytes, chunked: bool, cuts: list[int]) -> None:
    if chunked:
        parts = [body[i : i + 700] for i in range(0, len(body), 700)]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + framed
    else:
        raw = sized(body)
    loop = asyncio.new_event_loop()
    try:
        conn = _Connection()
        conn.connection_made(_Transport())
        waiter = conn.waiter = loop.create_future()
        edges = sorted({0, len(raw), *(c for c in cuts if c < len(raw))})
        for start, end in itertools.pairwise(edges):
            conn.data_received(raw[start:end])
        assert waiter.result() == RawResponse(200, waiter.result().headers, body)
        assert conn.waiter is None and conn.open  # ready for the next request
    finally:
        loop.close()
