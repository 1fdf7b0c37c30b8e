"""The one HTTP sender (``harness.backends.http.sender``, aiohttp) against real loopback
servers that answer byte for byte as each test scripts, a TLS server with a throwaway CA, and
a loopback CONNECT proxy that a whole run reaches its server through."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import aiohttp
import anyio
import orjson
import pytest
import trustme

from harness import Limits, SystemOneBackend, load_suite, run_async
from harness.backends.base import Transport
from harness.backends.http.classify import classify
from harness.backends.http.sender import HttpSender, RawResponse
from harness.backends.sim import SimModel
from tests.loopback import Reply, Seen, scripted_server
from tests.runhelpers import records

Answer = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]  # True: keep the connection


class Script:
    """A loopback server: reads each request whole, lets ``reply`` answer it."""

    def __init__(self, reply: Answer) -> None:
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
    reply: Answer, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, Script]]:
    """Serve ``reply`` on a free loopback port; yields the POST URL and the script."""
    script = Script(reply)
    server = await asyncio.start_server(script.handle, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/v1/systemone", script
    finally:
        server.close()


def sender(timeout_s: float = 5.0, trust: ssl.SSLContext | None = None) -> HttpSender:
    return HttpSender(
        {"Content-Type": "application/json", "Authorization": "Bearer sk-secret"},
        Transport(4, timeout_s, timeout_s),
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
    head = script.requests[0].split(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("post /v1/systemone http/1.1\r\n") and "host: 127.0.0.1:" in head
    assert "content-length: 8" in head and "authorization: bearer sk-secret" in head
    assert "user-agent: numericjev" in head
    assert "sk-secret" not in repr(s)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def served_by(ca: trustme.CA) -> ssl.SSLContext:
    """A server's TLS context with a certificate for 127.0.0.1 from ``ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


async def test_https_verifies_the_server_certificate(
    ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with scripted(echo, tls=served_by(ca)) as (url, script):
        s = sender(trust=trusting)
        for _ in range(3):
            assert (await s.post(url, b"{}")).content == b"{}"
        await s.aclose()
        assert script.connections == 1
        strict = sender()  # the system's CAs: this throwaway CA is not among them
        with pytest.raises(aiohttp.ClientConnectorCertificateError) as caught:
            await strict.post(url, b"{}")
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
        assert classify(None, caught.value).kind == "connection"
        await strict.aclose()
        # SSL_CERT_FILE, as users behind a company CA set it, is read when a run starts.
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        from_env = sender()
        assert (await from_env.post(url, b"{}")).content == b"{}"
        await from_env.aclose()


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
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
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
    assert b"gzip" in script.requests[0].lower().split(b"accept-encoding:")[1].split(b"\r\n")[0]


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


async def test_interim_replies_are_skipped_and_headers_are_case_insensitive() -> None:
    async def continued(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(sized(b"{}", "Retry-After: 3", status="429 Slow"))
        return True

    async with scripted(continued) as (url, _):
        s = sender()
        reply = await s.post(url, b"{}")
        await s.aclose()
    assert reply.status == 429 and reply.headers["RETRY-AFTER"] == "3"
    assert classify(429, None, reply.headers).wait_s == 3.0


@pytest.mark.parametrize(
    "broken",
    [
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"cut',  # closed mid-body
        b"HTTP/1.1 200 OK\r\nContent-Le",  # closed mid-headers
        b"SSH-2.0-OpenSSH_9.6\r\n",  # not HTTP
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Encoding: gzip\r\n\r\nnope",
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
            with pytest.raises(aiohttp.ClientError) as caught:
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
        with pytest.raises(TimeoutError) as caught:
            await s.post(url, b"{}")
        assert classify(None, caught.value).kind == "timeout"
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
    with pytest.raises(aiohttp.ClientConnectorError, match="Cannot connect") as refused:
        await s.post(f"http://127.0.0.1:{port}/v1/systemone", b"{}")
    assert classify(None, refused.value).retry is True
    for url in ("ftp://example.com/x", "127.0.0.1:8000/v1", "http://[::1/x", "http:///path"):
        with pytest.raises(aiohttp.ClientError) as caught:
            await s.post(url, b"{}")
        assert (classify(None, caught.value).retry, str(caught.value).count(url)) == (False, 1)
    await s.aclose()


# --- through a proxy ------------------------------------------------------------------


class ConnectProxy:
    """A loopback HTTP proxy that tunnels CONNECT to 127.0.0.1 only, and counts tunnels."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ")
        host, port = target.rsplit(":", 1)
        if method != "CONNECT" or host != "127.0.0.1":
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        self.tunnels.append(target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        async with anyio.create_task_group() as pipes:
            pipes.start_soon(self._pipe, reader, upstream_writer)
            pipes.start_soon(self._pipe, upstream_reader, writer)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


@asynccontextmanager
async def proxy() -> AsyncIterator[tuple[str, ConnectProxy]]:
    """A ``ConnectProxy`` on a free loopback port; yields its URL and itself."""
    tunnel = ConnectProxy()
    server = await asyncio.start_server(tunnel.handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", tunnel
    finally:
        server.close()


async def test_https_proxy_and_no_proxy_come_from_the_environment(
    ca: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with scripted(echo, tls=served_by(ca)) as (url, script), proxy() as (via, tunnel):
        monkeypatch.setenv("HTTPS_PROXY", via)
        s = sender(trust=trusting)
        for _ in range(3):
            assert (await s.post(url, b"{}")).content == b"{}"
        await s.aclose()
        assert tunnel.tunnels == [url.split("/")[2]]  # one tunnel, kept alive
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = sender(trust=trusting)
        assert (await direct.post(url, b"{}")).content == b"{}"
        await direct.aclose()
    assert len(tunnel.tunnels) == 1 and script.connections == 2


async def test_a_run_reaches_its_server_through_https_proxy(
    ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A whole run as a user behind a company proxy makes it: HTTPS_PROXY and SSL_CERT_FILE
    # set in the environment, nothing on the command line.
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    sim = SimModel()

    def answer(request: Seen) -> Reply:
        return Reply.json(200, sim.respond(orjson.loads(request.content)))

    suite = load_suite("affine")
    small = replace(suite, cases=suite.cases[:4], decoders=("direct", "tree10"))
    async with scripted_server(answer, tls=served_by(ca)) as url, proxy() as (via, tunnel):
        monkeypatch.setenv("HTTPS_PROXY", via)
        model = SystemOneBackend("jev-sim", base_url=url, api_key="")
        result = await run_async(small, model, Limits(concurrency=4), folder=tmp_path / "r")
    exchanges = records(tmp_path / "r" / "requests.jsonl")
    assert result.counters.jobs_done == small.job_count() and exchanges
    assert all(e["error"] is None for e in exchanges)
    assert tunnel.tunnels and set(tunnel.tunnels) == {url.split("/")[2]}
