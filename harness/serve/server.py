"""The HTTP/1.1 layer of ``serve-sim``: anyio TCP listeners and h11, keep-alive, no new deps.

One task per connection reads a request with h11, asks ``SimApp`` for the reply, sleeps
any latency on the event loop (never blocking it), and writes the whole response in one
send. Hundreds of keep-alive connections cost one small task each.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import struct
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from http import HTTPStatus

import anyio
import anyio.from_thread
import h11
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from anyio.streams.stapled import MultiListener

from harness.errors import ConfigError
from harness.serve.app import Outcome, ServerConfig, SimApp

SERVER_HEADER = b"numericjev-serve-sim"
_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus} | {529: b"Site Overloaded"}
READ_CHUNK = 65536


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse to listen beyond loopback unless ``allow_remote`` says so."""
    if allow_remote or host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"serve-sim listens on loopback only; refusing --host {host} "
            "(pass --allow-remote to serve other machines)"
        )


def _reset(stream: SocketStream) -> None:
    """Arrange for close() to send a TCP RST instead of a FIN (the 'reset' fault)."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    if raw is not None:
        with suppress(OSError):
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class SimServer:
    """Serves one ``SimApp`` on anyio listeners."""

    def __init__(self, config: ServerConfig) -> None:
        check_host(config.host, config.allow_remote)
        self.config = config
        self.app = SimApp(config)

    async def _read(
        self, conn: h11.Connection, stream: SocketStream
    ) -> tuple[h11.Request, bytes] | None:
        request: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if conn.they_are_waiting_for_100_continue:  # curl does, for large bodies
                    continue_ = h11.InformationalResponse(status_code=100, headers=[])
                    await stream.send(conn.send(continue_) or b"")
                try:
                    data = await stream.receive(READ_CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                    data = b""
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > self.config.max_body_bytes:
                    raise _TooLarge
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, b"".join(chunks)
            else:  # ConnectionClosed or PAUSED: the client is gone or misbehaving
                return None

    async def _send(
        self, conn: h11.Connection, stream: SocketStream, out: Outcome, head: bool = False
    ) -> None:
        headers = [
            (b"content-type", out.content_type.encode()),
            (b"content-length", str(len(out.body)).encode()),
            (b"x-typesafe-request-id", self.app.request_id().encode()),
            (b"server", SERVER_HEADER),
        ]
        headers.extend((k.encode(), v.encode()) for k, v in out.headers)
        reason = _REASONS.get(out.status, b"")
        data = conn.send(h11.Response(status_code=out.status, headers=headers, reason=reason))
        if not head:  # a reply to HEAD has the headers of the GET reply and no body
            data += conn.send(h11.Data(data=out.body)) or b""
        data += conn.send(h11.EndOfMessage()) or b""
        await stream.send(data)

    async def handle_connection(self, stream: SocketStream) -> None:
        """Serve requests on one connection until the client closes it."""
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                try:
                    got = await self._read(conn, stream)
                except _TooLarge:
                    await self._send(conn, stream, Outcome(413, b'{"detail":"body too large"}'))
                    return
                except h11.RemoteProtocolError:
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        await self._send(conn, stream, Outcome(400, b'{"detail":"bad request"}'))
                    return
                if got is None:
                    return
                request, body = got
                out = self.app.handle(request.method.decode(), request.target.decode(), body)
                if out.delay_s > 0:
                    await anyio.sleep(out.delay_s)
                if out.reset:
                    _reset(stream)
                    return
                await self._send(conn, stream, out, head=request.method == b"HEAD")
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return  # the client asked to close, or left part of a request unread
                conn.start_next_cycle()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass  # the client went away (e.g. it timed out on a "slow" reply)
        except h11.LocalProtocolError:
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def bind(self) -> MultiListener[SocketStream]:
        """Open the listening socket(s); raises OSError here, outside any task group."""
        return await anyio.create_tcp_listener(
            local_host=self.config.host, local_port=self.config.port
        )

    async def serve(self, listener: MultiListener[SocketStream]) -> None:
        """Accept connections until cancelled, then close the listening sockets."""
        try:
            async with anyio.create_task_group() as tg:
                await listener.serve(self.handle_connection, tg)
        finally:
            with anyio.CancelScope(shield=True):
                await listener.aclose()

    async def listen(self, task_group: TaskGroup) -> int:
        """Start accepting connections in ``task_group``; returns the bound port."""
        listener = await self.bind()
        task_group.start_soon(self.serve, listener)
        return listener.extra(SocketAttribute.local_port)


class _TooLarge(Exception):
    """A request body over ``max_body_bytes``."""


def base_url(host: str, port: int) -> str:
    """``http://host:port`` with IPv6 literals bracketed."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@asynccontextmanager
async def serve_sim_in_background(config: ServerConfig | None = None) -> AsyncIterator[str]:
    """Run serve-sim in a task group for the duration of the block; yields its base URL.

    The default config binds 127.0.0.1 on an ephemeral port (``port=0``).
    """
    config = config or ServerConfig(port=0)
    server = SimServer(config)
    async with anyio.create_task_group() as tg:
        port = await server.listen(tg)
        try:
            yield base_url(config.host, port)
        finally:
            tg.cancel_scope.cancel()


@contextmanager
def serve_sim_in_thread(config: ServerConfig | None = None) -> Iterator[str]:
    """serve-sim on its own event loop in a background thread (for sync and CLI tests)."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_sim_in_background(config)) as url,
    ):
        yield url


async def serve_forever(config: ServerConfig, *, stop_signals: tuple[int, ...] = ()) -> None:
    """Serve until cancelled or one of ``stop_signals`` arrives, printing the address."""
    server = SimServer(config)
    listener = await server.bind()
    port = listener.extra(SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, listener)
        faults = config.faults.describe()
        print(
            f"serve-sim: {config.model} model (simulated) on "
            f"{base_url(config.host, port)}/v1/systemone; latency {config.latency_ms:g} ms; "
            f"faults {faults}" + (f" (seed {config.fault_seed})" if faults != "none" else ""),
            flush=True,
        )
        if stop_signals:
            signals = [signal.Signals(number) for number in stop_signals]
            with anyio.open_signal_receiver(*signals) as received:
                async for _ in received:
                    break
            tg.cancel_scope.cancel()
