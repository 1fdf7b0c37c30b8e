"""The HTTP layer of ``serve-sim``: aiohttp's web server around the pure ``SimApp``.

aiohttp does the HTTP (its C parser, keep-alive, ``Expect: 100-continue``, the body limit,
routing with 404 and 405, HEAD). This module turns library errors into the FastAPI-style
JSON bodies the hosted API sends, stamps every reply with ``x-typesafe-request-id``, and
keeps the two faults that reach below HTTP, both of which a handler can still do:

- latency (and the ``slow`` fault) is an ``asyncio.sleep`` in the handler, so hundreds of
  connections wait at once on one event loop; a client that gives up closes its connection
  and ``handler_cancellation`` cancels the sleeping handler.
- the ``reset`` fault sets ``SO_LINGER`` to 0 on the connection's socket and aborts the
  transport: closing a socket that lingers 0 seconds sends a TCP RST instead of a FIN,
  which the client reads as a connection reset, as from the hand-written h11 layer before.

aiohttp's automatic request decompression is off: ``SimApp`` decodes gzip and zstd itself
(``encoding.py``), with a limit on the decoded size and a 415 for unknown codings.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress

import anyio
import anyio.from_thread
from aiohttp import web

from harness.errors import ConfigError
from harness.serve.app import Outcome, ServerConfig, SimApp

SERVER_HEADER = "numericjev-serve-sim"
_REASONS = {529: "Site Overloaded"}  # not in http.HTTPStatus
BACKLOG = 4096  # a benchmark opens hundreds of connections at once; 128 would drop SYNs
SHUTDOWN_S = 0.25  # how long stopping waits for replies in flight (e.g. a "slow" fault)
TOO_LARGE = Outcome(413, b'{"detail":"body too large"}')

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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


def _reset(request: web.Request) -> None:
    """Drop the connection with a TCP RST (the ``reset`` fault)."""
    transport = request.transport
    if transport is None:
        return
    raw = transport.get_extra_info("socket")
    if raw is not None:
        with suppress(OSError):
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def _response(out: Outcome) -> web.Response:
    headers = {"Content-Type": out.content_type, **dict(out.headers)}
    reason = _REASONS.get(out.status)
    return web.Response(body=out.body, status=out.status, reason=reason, headers=headers)


class SimServer:
    """Serves one ``SimApp`` with aiohttp; ``start`` and ``stop`` bracket its life."""

    def __init__(self, config: ServerConfig) -> None:
        check_host(config.host, config.allow_remote)
        self.config = config
        self.app = SimApp(config)
        self._runner: web.AppRunner | None = None

    def web_app(self) -> web.Application:
        """The aiohttp application: one route per ``SimApp`` route (GET routes take HEAD)."""
        app = web.Application(client_max_size=self.config.max_body_bytes, middlewares=[self._stamp])
        for path, (methods, _) in self.app.routes.items():
            for method in methods:
                if method == "GET":
                    app.router.add_get(path, self._handle)
                else:
                    app.router.add_route(method, path, self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            out = TOO_LARGE
        else:
            out = self.app.handle(request.method, request.path, body, request.headers)
        if out.delay_s > 0:
            await asyncio.sleep(out.delay_s)
        if out.reset:
            _reset(request)
        return _response(out)

    @web.middleware
    async def _stamp(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """Library errors as JSON bodies; the request id and server name on every reply."""
        try:
            response = await handler(request)
        except web.HTTPMethodNotAllowed as exc:
            response = _response(self.app.not_allowed(tuple(sorted(exc.allowed_methods))))
        except web.HTTPNotFound:
            response = _response(self.app.not_found())
        except web.HTTPException as exc:
            response = _response(Outcome(exc.status, b'{"detail":"%s"}' % exc.reason.encode()))
        response.headers["x-typesafe-request-id"] = self.app.request_id()
        response.headers["Server"] = SERVER_HEADER
        return response

    async def start(self) -> int:
        """Start listening; returns the bound port. Raises OSError (e.g. port taken)."""
        runner = web.AppRunner(
            self.web_app(),
            access_log=None,
            handler_cancellation=True,
            auto_decompress=False,
            shutdown_timeout=SHUTDOWN_S,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port, backlog=BACKLOG)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        return int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()


def base_url(host: str, port: int) -> str:
    """``http://host:port`` with IPv6 literals bracketed."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@asynccontextmanager
async def serve_sim_in_background(config: ServerConfig | None = None) -> AsyncIterator[str]:
    """Run serve-sim for the duration of the block; yields its base URL (asyncio only).

    The default config binds 127.0.0.1 on an ephemeral port (``port=0``).
    """
    config = config or ServerConfig(port=0)
    server = SimServer(config)
    port = await server.start()
    try:
        yield base_url(config.host, port)
    finally:
        with anyio.CancelScope(shield=True):
            await server.stop()


@contextmanager
def serve_sim_in_thread(config: ServerConfig | None = None) -> Iterator[str]:
    """serve-sim on its own event loop in a background thread (for sync and CLI tests)."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_sim_in_background(config)) as url,
    ):
        yield url


async def serve_forever(config: ServerConfig, *, stop_signals: tuple[int, ...]) -> None:
    """Serve until cancelled or one of ``stop_signals`` arrives, printing the address."""
    async with serve_sim_in_background(config) as url:
        faults = config.faults.describe()
        keyed = "; requires its --key" if config.key is not None else ""
        print(
            f"serve-sim: {config.model} model (simulated) on "
            f"{url}{config.route} ({config.wire}); "
            f"latency {config.latency_ms:g} ms; faults {faults}"
            + (f" (seed {config.fault_seed})" if faults != "none" else "")
            + keyed,
            flush=True,
        )
        signals = [signal.Signals(number) for number in stop_signals]
        with anyio.open_signal_receiver(*signals) as received:
            async for _ in received:
                break
