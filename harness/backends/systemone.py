"""The System One HTTP backend: any ``/v1/systemone`` server over one shared httpx client.

Each call POSTs the body exactly as given (serialised with orjson, so criteria keep their
insertion order) and retries transient failures through the ONE policy in ``retry.py``;
every attempt, failed or not, is reported to ``on_attempt`` so the scheduler can log one
``requests.jsonl`` line per attempt.

A 200 is checked against the request with ``parse_answers`` before it is returned: a
body that is not JSON, lacks an answer or names a label outside the criteria is a
retryable "malformed" attempt (a sampling server or a flaky proxy usually answers
correctly the next time), and after the last attempt it raises ``BackendError("malformed")``.
So a ``Reply`` from this backend always answers every question of its request.

The API key lives in one private attribute; ``_scrub`` removes it (and any bearer token)
from every message, record and ``describe()`` output that leaves this module.
"""

from __future__ import annotations

import inspect
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import anyio
import httpx
import orjson

from harness.backends.base import Reply
from harness.backends.pricing import cost_usd, price_for
from harness.backends.retry import (
    Decision,
    RateController,
    RetrySettings,
    Sleep,
    TransientError,
    build_retrying,
    classify,
    error_excerpt,
)
from harness.errors import AuthError, BackendError, ConfigError
from harness.wire.answers import parse_answers

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "jev-latest"
ENDPOINT = "/v1/systemone"
ERROR_BODY_CHARS = 1000  # what an attempt record keeps of a failed response's raw body


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt as the log records it (never holds the key)."""

    attempt: int
    t: float  # epoch seconds when the attempt started
    latency_ms: float
    status: int | None
    kind: str | None  # None for a successful attempt
    message: str | None
    retryable: bool
    request_id: str | None
    body: str | None  # a failed response's body, truncated (the log's "response")
    model: str | None = None
    usage: Mapping[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """A plain dict for a JSONL record."""
        return asdict(self)


OnAttempt = Callable[[Attempt], Awaitable[None] | None]


def normalise_base_url(url: str) -> str:
    """``https://host[/prefix]`` without a trailing ``/``, ``/v1`` or ``/v1/systemone``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base URL must start with http:// or https://; got {url!r}")
    for suffix in (ENDPOINT, "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url


class _ReleasingStream(httpx.AsyncByteStream):
    """A response stream that gives its shard slot back when closed."""

    def __init__(self, stream: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            if self._release is not None:
                self._release()
                self._release = None


class ShardedTransport(httpx.AsyncBaseTransport):
    """A pool of ``concurrency`` keep-alive connections, split into tiny httpcore pools.

    httpcore re-checks EVERY connection of a pool (a ``getpeername`` call and a dict of
    socket attributes each) whenever a request starts or ends, so the cost per request
    grows with the pool. Measured on loopback at concurrency 64 (client CPU per request):
    one pool of 64, 5.8 ms; pools of 16, 2.3 ms; pools of 4, 1.1 ms, the same as a single
    connection. Each request goes to the least-loaded shard, so none queues while another
    has room.
    """

    def __init__(self, concurrency: int, shard_size: int = 4) -> None:
        shards = max(1, -(-concurrency // shard_size))
        per = -(-concurrency // shards)
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        # One TLS context for all shards: loading the CA bundle costs ~70 ms a time.
        tls = httpx.create_ssl_context()
        self._shards = [httpx.AsyncHTTPTransport(verify=tls, limits=limits) for _ in range(shards)]
        self._load = [0] * shards

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the least-loaded shard."""
        i = min(range(len(self._load)), key=self._load.__getitem__)
        self._load[i] += 1

        def release() -> None:
            self._load[i] -= 1

        try:
            response = await self._shards[i].handle_async_request(request)
        except BaseException:
            release()
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _ReleasingStream(stream, release)
        return response

    async def aclose(self) -> None:
        """Close every shard."""
        for shard in self._shards:
            await shard.aclose()


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
        retry: RetrySettings | None = None,
        max_attempts: int | None = None,
        price_per_million: float | None = None,
        on_attempt: OnAttempt | None = None,
        rate: RateController | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep = anyio.sleep,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """None for ``model``, ``base_url`` or ``api_key`` reads ``TYPESAFE_DEFAULT_MODEL``,
        ``TYPESAFE_BASE_URL`` or ``TYPESAFE_API_KEY`` from ``env`` (default ``os.environ``);
        ``api_key=""`` sends no key. ``max_attempts`` overrides ``retry.max_attempts``.
        ``rate`` may be shared with the scheduler (see ``RateController.slot``);
        ``transport`` and ``sleep`` are for tests."""
        environ = os.environ if env is None else env
        self.model = model or environ.get("TYPESAFE_DEFAULT_MODEL") or DEFAULT_MODEL
        self.name = self.model
        self.base_url = normalise_base_url(
            base_url or environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
        )
        self.__key = (environ.get("TYPESAFE_API_KEY", "") if api_key is None else api_key).strip()
        if concurrency < 1 or not timeout_s > 0:
            raise ConfigError(
                f"concurrency must be >= 1 and the timeout > 0; got {concurrency}, {timeout_s}"
            )
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.connect_timeout_s = min(connect_timeout_s, timeout_s)
        self.retry = retry or RetrySettings()
        if max_attempts is not None:
            if max_attempts < 1:
                raise ConfigError(f"max attempts must be at least 1; got {max_attempts}")
            self.retry = replace(self.retry, max_attempts=max_attempts)
        self.price_per_million = price_per_million
        self.on_attempt = on_attempt
        self.rate = rate or RateController(concurrency, sleep=sleep)
        self._sleep = sleep
        self._url = self.base_url + ENDPOINT
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s),
            transport=transport or ShardedTransport(concurrency),
        )

    def __repr__(self) -> str:
        return f"SystemOneBackend(model={self.model!r}, base_url={self._scrub(self.base_url)!r})"

    def _scrub(self, text: str) -> str:
        """``text`` without the key, any bearer token, or URL credentials."""
        if self.__key:
            text = text.replace(self.__key, "***")
        text = re.sub(r"(?i)(bearer\s+)\S+", r"\1***", text)
        return re.sub(r"(https?://)[^/@\s]+@", r"\1***@", text)

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec: endpoint, timeouts, retries and price, never the key."""
        price = price_for(self.model, self.price_per_million)
        priced = None
        if price is not None:
            priced = {
                "input_usd_per_million": price.input_per_million,
                "output_usd_per_million": price.output_per_million,
                "source": "override" if self.price_per_million is not None else "table",
            }
        return {
            "name": self.model,
            "backend": "systemone",
            "simulated": False,
            "base_url": self._scrub(self.base_url),
            "params": {
                "timeout_s": self.timeout_s,
                "connect_timeout_s": self.connect_timeout_s,
                "concurrency": self.concurrency,
                "retries": asdict(self.retry),
                "price": priced,
                "api_key_set": bool(self.__key),
            },
        }

    async def answer(
        self, body: Mapping[str, Any], *, on_attempt: OnAttempt | None = None
    ) -> Reply:
        """POST ``body`` with retries; ``on_attempt`` (else the constructor's) hears each try.

        Raises ``AuthError`` on 401/403 and ``BackendError`` (its ``kind`` for the log)
        otherwise. A raised error also carries ``attempts`` (every attempt as a dict, the
        last one included), ``body`` (the last error body, truncated) and ``request_id``.
        """
        try:
            content = orjson.dumps(body, default=_to_json)
        except TypeError as exc:
            raise BackendError("bad_body", f"request body is not JSON: {exc}") from exc
        notify = on_attempt or self.on_attempt
        tried: list[Attempt] = []
        try:
            async for attempt in build_retrying(self.retry, sleep=self._sleep):
                with attempt:
                    reply = await self._attempt(body, content, len(tried) + 1, notify, tried)
        except BackendError as exc:
            last = tried[-1] if tried else None
            exc.attempts = [a.as_dict() for a in tried]  # type: ignore[attr-defined]
            exc.body = last.body if last else None  # type: ignore[attr-defined]
            exc.request_id = last.request_id if last else None  # type: ignore[attr-defined]
            raise
        extra = {
            "attempts": len(tried),
            "retries": [a.as_dict() for a in tried[:-1]],
            "latency_ms": tried[-1].latency_ms,
        }
        return replace(reply, extra=extra)

    async def _attempt(
        self,
        body: Mapping[str, Any],
        content: bytes,
        number: int,
        notify: OnAttempt | None,
        tried: list[Attempt],
    ) -> Reply:
        """One POST, classified and reported; raises TransientError for what may be retried."""
        unchained: BackendError | None = None
        async with self.rate.slot() as generation:
            started_at, started = time.time(), time.perf_counter()
            try:
                # httpx's timeouts bound each phase; fail_after bounds the whole attempt.
                with anyio.fail_after(self.timeout_s):
                    response = await self._client.post(self._url, content=content)
            except (httpx.TransportError, TimeoutError) as exc:
                decision = classify(None, exc)
                what = str(exc) or type(exc).__name__
                message = f"{decision.kind} at {self._url}: {what}"
                record = self._record(number, started_at, started, decision, message)
                error = await self._failed(decision, record, notify, tried)
                if self._scrub(what) == what:
                    raise error from exc
                unchained = error  # its cause names the key: raise it outside, unchained
        if unchained is not None:
            raise unchained
        status = response.status_code
        request_id = response.headers.get("x-typesafe-request-id")
        if not 200 <= status < 300:
            text = response.text
            decision = classify(status, None, response.headers)
            if decision.kind == "rate_limited":
                self.rate.on_rate_limited(generation, decision.wait_s)
            excerpt = error_excerpt(status, response.headers.get("content-type", ""), text)
            if decision.fatal:
                what = "refused the API key" if self.__key else "requires an API key"
                message = (
                    f"the server {what} ({status}): set TYPESAFE_API_KEY to a valid key"
                    f" (server said: {excerpt})"
                )
            else:
                message = f"HTTP {status} from {self._url}: {excerpt}"
            record = self._record(
                number, started_at, started, decision, message, status, request_id, text
            )
            raise await self._failed(decision, record, notify, tried)
        try:
            parsed = orjson.loads(response.content)
            if not isinstance(parsed, dict):
                raise BackendError("malformed", "response body is not a JSON object")
            parse_answers(body.get("questions") or {}, parsed)
        except (orjson.JSONDecodeError, BackendError) as exc:
            decision = classify(None, BackendError("malformed", str(exc)))
            message = f"malformed response (status {status}) from {self._url}: {exc}"
            record = self._record(
                number, started_at, started, decision, message, status, request_id, response.text
            )
            raise await self._failed(decision, record, notify, tried) from exc
        self.rate.on_success()
        usage = parsed.get("usage") if isinstance(parsed.get("usage"), Mapping) else None
        served = parsed.get("model") if isinstance(parsed.get("model"), str) else None
        cost = cost_usd((served, self.model), usage, response.headers, self.price_per_million)
        latency_ms = (time.perf_counter() - started) * 1000.0
        record = Attempt(
            number, started_at, latency_ms, status, None, None, False, request_id, None,
            served, usage,
        )  # fmt: skip
        tried.append(record)
        await _notify(notify, record)
        return Reply(parsed, status, served, usage, cost, request_id)

    def _record(
        self,
        number: int,
        started_at: float,
        started: float,
        decision: Decision,
        message: str,
        status: int | None = None,
        request_id: str | None = None,
        raw: str | None = None,
    ) -> Attempt:
        """A failed attempt's record, scrubbed of the key."""
        latency_ms = (time.perf_counter() - started) * 1000.0
        body = None if raw is None else self._scrub(raw[:ERROR_BODY_CHARS])
        return Attempt(
            number, started_at, latency_ms, status, decision.kind, self._scrub(message),
            decision.retry, request_id, body,
        )  # fmt: skip

    async def _failed(
        self,
        decision: Decision,
        record: Attempt,
        notify: OnAttempt | None,
        tried: list[Attempt],
    ) -> BackendError:
        """Report a failed attempt and build the error the retry policy will see."""
        tried.append(record)
        await _notify(notify, record)
        message = record.message or decision.kind
        if decision.fatal:
            return AuthError("auth", message, status=record.status)
        if decision.retry:
            return TransientError(decision, message, status=record.status)
        return BackendError(decision.kind, message, status=record.status)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> SystemOneBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _notify(notify: OnAttempt | None, record: Attempt) -> None:
    if notify is not None:
        result = notify(record)
        if inspect.isawaitable(result):
            await result
