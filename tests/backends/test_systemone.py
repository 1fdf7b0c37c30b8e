"""The System One HTTP backend against scripted loopback servers and the real serve-sim.

The backend makes one attempt; ``ask`` puts a ``Caller`` in front of it, as a run does, for
the retries, pacing and per-attempt records.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import anyio
import orjson
import pytest
from typesafe_sdk._schemas.models import SystemOneRequest, SystemOneResponse

from harness.backends import ModelSpec
from harness.backends.base import Transport
from harness.backends.http import error_excerpt
from harness.backends.oracle import Oracle
from harness.backends.pricing import JEV_INPUT_USD_PER_MILLION, cost_usd, price_for
from harness.backends.sim import SimModel
from harness.backends.systemone import SystemOneBackend, normalise_base_url
from harness.calling import Attempt, Caller, Pacer, RetrySettings
from harness.errors import AuthError, BackendError, BudgetExhausted, ConfigError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import ServerConfig, serve_sim_in_background
from harness.wire.answers import parse_answers
from tests.loopback import DROP, Handler, Reply, Seen, scripted_server, serve_post

KEY = "sk-planted-0123456789abcdef"


@functools.cache
def real_bodies(model: str = "jev-latest") -> tuple[dict[str, Any], ...]:
    """Request bodies of the affine suite: every round of a few jobs, answered by the oracle."""
    suite = load_suite("affine")
    oracle = Oracle()
    bodies = []
    for spec in suite.jobs()[::97][:8]:
        job = Job(spec, suite.decoders)
        while (step := job.next_request(model)) is not None:
            body, qmap = step
            bodies.append(body)
            job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
    return tuple(bodies)


BODY = real_bodies()[0]


class FakeSleep:
    """Records retry waits instead of sleeping; ``clock`` moves only when it sleeps."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


def ok_response(request: Seen, **headers: str) -> Reply:
    """What a well-behaved server says: the sim's answers, validated on the way in and out."""
    body = orjson.loads(request.content)
    SystemOneRequest.model_validate(body)
    response = SimModel().respond(body) | {"model": "jev-1.13.0"}
    SystemOneResponse.model_validate(response)
    return Reply.json(200, response, **{"x-typesafe-request-id": "req-ok", **headers})


def scripted(*steps: Handler | Reply) -> Handler:
    """A handler replaying ``steps`` in order; fails loudly when the script runs out."""
    queue = list(steps)

    def handler(request: Seen) -> Any:
        assert queue, "the server was asked more often than scripted"
        step = queue.pop(0)
        return step if isinstance(step, Reply) else step(request)

    return handler


@asynccontextmanager
async def backend(
    handler: Handler, *, key: str = KEY, **kw: Any
) -> AsyncIterator[SystemOneBackend]:
    """A System One backend whose server, on loopback, answers as ``handler`` says."""
    async with (
        scripted_server(handler) as url,
        SystemOneBackend("jev-latest", base_url=url, api_key=key, **kw) as b,
    ):
        yield b


async def ask(
    b: SystemOneBackend,
    body: dict[str, Any] = BODY,
    *,
    records: list[Attempt] | None = None,
    sleep: FakeSleep | None = None,
    max_attempts: int = 6,
    pacer: Pacer | None = None,
) -> Attempt:
    """One exchange through a Caller, as a run makes it; ``records`` hears every attempt."""
    sleep = sleep or FakeSleep()
    heard: list[Attempt] = [] if records is None else records
    # A 429 never fails an exchange; the ceiling on waiting for them ends an endless run.
    pacer = pacer or Pacer(
        b.http.transport.concurrency, sleep=sleep, clock=sleep.clock, max_wait_s=60.0
    )
    caller = Caller(b, pacer, RetrySettings(max_attempts=max_attempts), sleep=sleep)
    return await caller.call(body, heard.append)


def error(status: int, body: Any = None, text: str | None = None, **headers: str):
    headers = {"x-typesafe-request-id": f"req-{status}", **headers}
    if text is not None:
        return Reply.text(status, text, **headers)
    return Reply.json(status, body, **headers)


async def test_sends_the_body_exactly_with_the_key_and_reads_the_reply() -> None:
    seen: list[Seen] = []

    def handler(request: Seen) -> Reply:
        seen.append(request)
        return ok_response(request)

    records: list[Attempt] = []
    async with backend(handler) as b:
        reply = await ask(b, records=records)
    (request,) = seen
    assert request.path == "/v1/systemone"
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.content == orjson.dumps(BODY)
    sent = orjson.loads(request.content)
    for qid, question in BODY["questions"].items():  # criteria order kept end to end
        assert list(sent["questions"][qid]["criteria"]) == list(question["criteria"])
    assert reply.status == 200
    assert reply.model == "jev-1.13.0"
    assert reply.request_id == "req-ok"
    assert reply.usage == reply.response["usage"]
    assert reply.cost_usd is None  # a jev model at a server other than the hosted API
    assert len(records) == 1 and records[0] is reply  # one attempt, no retries
    assert [r.kind for r in records] == [None]
    assert records[0].request_id == "req-ok" and records[0].status == 200


async def test_no_authorization_header_without_a_key() -> None:
    seen: list[Seen] = []

    def handler(request: Seen) -> Reply:
        seen.append(request)
        return ok_response(request)

    async with backend(handler, key="") as b:
        await b.answer(BODY)
    assert "authorization" not in seen[0].headers


def test_settings_come_from_the_environment() -> None:
    env = {
        "TYPESAFE_API_KEY": KEY,
        "TYPESAFE_BASE_URL": "http://127.0.0.1:9/v1/",
        "TYPESAFE_DEFAULT_MODEL": "jev-1.13.0",
    }
    b = SystemOneBackend(env=env)
    assert (b.name, b.base_url) == ("jev-1.13.0", "http://127.0.0.1:9")
    assert b.describe()["params"]["api_key_set"] is True
    b = SystemOneBackend(env={})
    assert (b.name, b.base_url) == ("jev-latest", "https://api.typesafe.ai")
    assert b.describe()["params"]["api_key_set"] is False
    b = SystemOneBackend("typesafe/jev-1.13", base_url="https://openrouter.ai/api", env=env)
    assert b.http.url == "https://openrouter.ai/api/v1/systemone"


def test_base_url_is_normalised_or_refused() -> None:
    assert normalise_base_url("http://h:1/v1/systemone/") == "http://h:1"
    assert normalise_base_url(" https://h/api/v1 ") == "https://h/api"
    with pytest.raises(ConfigError, match="http:// or https://"):
        normalise_base_url("api.typesafe.ai")
    with pytest.raises(ConfigError, match="--max-attempts must be at least 1"):
        ModelSpec("jev-latest", max_attempts=0)


async def test_the_price_table_prices_the_hosted_api_only() -> None:
    hosted = SystemOneBackend("jev-latest", base_url="https://api.typesafe.ai/v1", api_key=KEY)
    usage = {"input_tokens": 1234, "output_tokens": 5}
    assert hosted.price is not None
    assert hosted.price.cost(usage) == pytest.approx(1234 * JEV_INPUT_USD_PER_MILLION / 1e6)
    assert hosted.price_per_million == JEV_INPUT_USD_PER_MILLION
    assert hosted.describe()["params"]["price"]["source"] == "table"
    loopback = SystemOneBackend("jev-latest", base_url="http://127.0.0.1:8377", env={})
    assert loopback.price_per_million is None and loopback.describe()["params"]["price"] is None
    await loopback.aclose()


def test_describe_is_the_manifest_spec() -> None:
    b = SystemOneBackend("jev-latest", base_url="https://user:pw@api.typesafe.ai", env={})
    spec = b.describe()
    assert spec["name"] == "jev-latest"
    assert (spec["backend"], spec["simulated"]) == ("systemone", False)
    assert spec["base_url"] == "https://***@api.typesafe.ai"
    assert spec["wire"] == "systemone"
    assert spec["params"]["timeout_s"] == 30.0
    assert spec["params"]["price"]["input_usd_per_million"] == 0.042
    assert SystemOneBackend("llama", env={}).describe()["params"]["price"] is None
    overridden = SystemOneBackend("llama", env={}, price_per_million=1.5).describe()
    assert overridden["params"]["price"]["source"] == "override"


def test_price_table() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 500}
    hosted = "https://api.typesafe.ai"
    for model in ("jev-latest", "jev-1.13.0", "typesafe/jev-1.13"):
        assert price_for(model, hosted).cost(usage) == pytest.approx(0.042)
    # The table prices the hosted API only: a jev name anywhere else is unknown.
    for elsewhere in (
        "http://127.0.0.1:8377",
        "https://openrouter.ai/api",
        "http://api.typesafe.ai",
    ):
        assert price_for("jev-latest", elsewhere) is None
    assert price_for("gpt-4o", hosted) is None
    assert price_for("gpt-4o", None, 2.0).cost(usage) == pytest.approx(2.0)
    assert cost_usd(usage, {}, None) is None  # unknown, not zero
    assert cost_usd({**usage, "cost": 0.5}, {}, None) == 0.5  # OpenRouter reports its own
    litellm = {"x-litellm-response-cost": "0.25"}
    assert cost_usd(usage, litellm, None) == 0.25
    assert cost_usd(usage, {}, price_for("jev-latest", hosted)) == pytest.approx(0.042)
    assert cost_usd(None, {}, price_for("jev-latest", hosted)) is None


async def test_reported_costs_win() -> None:
    def handler(request: Seen) -> Reply:
        return ok_response(request, **{"x-litellm-response-cost": "0.125"})

    async with backend(handler) as b:
        assert (await b.answer(BODY)).cost_usd == 0.125


async def test_429_then_success_honours_retry_after_and_halves_the_window() -> None:
    sleep = FakeSleep()
    records: list[Attempt] = []
    handler = scripted(error(429, {"detail": "slow down"}, **{"Retry-After": "2"}), ok_response)
    pacer = Pacer(8, sleep=sleep)
    async with backend(handler, transport=Transport(concurrency=8)) as b:
        reply = await ask(b, records=records, sleep=sleep, pacer=pacer)
        assert pacer.limit == 4 + 1  # halved by the 429, then one success added back
    assert 2.0 in sleep.waits  # the retry wait (the run-wide pause may also use it)
    assert len(records) == 2 and reply is records[-1]
    retry = records[0]
    assert (retry.kind, retry.status, retry.request_id) == ("rate_limited", 429, "req-429")
    assert [(r.number, r.kind) for r in records] == [(1, "rate_limited"), (2, None)]
    assert "slow down" in (records[0].message or "")


@pytest.mark.parametrize(
    ("status", "kind"),
    [(408, "timeout"), (500, "server_error"), (502, "server_error"), (503, "overloaded"),
     (529, "overloaded")],
)  # fmt: skip
async def test_transient_statuses_are_retried(status: int, kind: str) -> None:
    sleep = FakeSleep()
    records: list[Attempt] = []
    async with backend(scripted(error(status, {"detail": "x"}), ok_response)) as b:
        await ask(b, records=records, sleep=sleep)
    assert records[0].kind == kind
    assert len(sleep.waits) == 1 and 0.375 <= sleep.waits[0] <= 0.625


async def test_gives_up_after_max_attempts_with_every_attempt_attached() -> None:
    handler = scripted(*[error(503, {"error": {"message": "busy"}}) for _ in range(3)])
    records: list[Attempt] = []
    async with backend(handler) as b:
        with pytest.raises(BackendError) as caught:
            await ask(b, records=records, max_attempts=3)
    exc = caught.value
    assert exc.kind == "overloaded" and exc.status == 503
    assert "HTTP 503" in str(exc) and "busy" in str(exc)
    assert [a.number for a in records] == [1, 2, 3]
    assert exc.request_id == "req-503"
    assert "busy" in exc.body


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (error(400, {"detail": {"error_type": "max_tokens_exceeded", "message": "too long"}}),
         "/v1/systemone: max_tokens_exceeded: too long"),
        (error(404, {"detail": "Not Found"}), "Not Found"),
        (error(413, text="request entity too large"), "request entity too large"),
        (error(422, {"detail": [{"loc": ["body", "state"], "msg": "Field required",
                                 "type": "missing"}]}), "body.state: Field required"),
        (error(400, {"error": {"message": "unknown model", "type": "invalid_request"}}),
         "invalid_request: unknown model"),
        (error(402, {"error": "no credit"}), "no credit"),
        (error(400, text="<!DOCTYPE html><html><head><title>Oops</title></head>"
                         "<body><script>x()</script></body></html>"),
         "HTML error page (status 400): Oops"),
    ],
)  # fmt: skip
async def test_client_errors_raise_at_once_with_a_readable_excerpt(
    response: Reply, expected: str
) -> None:
    sleep = FakeSleep()
    async with backend(scripted(response)) as b:
        with pytest.raises(BackendError) as caught:
            await ask(b, sleep=sleep)
    assert caught.value.kind == "http_4xx"
    assert expected in str(caught.value)
    assert "<" not in str(caught.value)  # never markup
    assert sleep.waits == []


def test_error_excerpt_is_short_and_one_line() -> None:
    text = "line one\n" + "x" * 5000
    excerpt = error_excerpt(500, "text/plain", text)
    assert len(excerpt) <= 300 and "\n" not in excerpt and excerpt.endswith("...")
    assert error_excerpt(502, "text/html", "<h1>bad</h1>") == "HTML error page (status 502)"
    assert error_excerpt(500, "application/json", "") == "(empty body)"


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_is_fatal_and_clear(status: int) -> None:
    sleep = FakeSleep()
    async with backend(scripted(error(status, {"detail": "Invalid API key"}))) as b:
        with pytest.raises(AuthError) as caught:
            await ask(b, sleep=sleep)
    message = str(caught.value)
    assert message.startswith(
        f"the server refused the API key ({status}): set TYPESAFE_API_KEY to a valid key"
    )
    assert caught.value.kind == "auth" and sleep.waits == []


async def test_auth_failure_without_a_key_says_so() -> None:
    async with backend(scripted(error(401, {"detail": "missing key"})), key="") as b:
        with pytest.raises(AuthError, match=r"requires an API key \(401\)"):
            await b.answer(BODY)


def good_then(mutate: Callable[[dict[str, Any]], Any]) -> Handler:
    def handler(request: Seen) -> Reply:
        body = orjson.loads(ok_response(request).content)
        mutate(body)
        return Reply.json(200, body)

    return handler


def bad_label(body: dict[str, Any]) -> None:
    body["answers"]["q1"]["choice"] = "not-a-label"


def missing(body: dict[str, Any]) -> None:
    del body["answers"]["q1"]


@pytest.mark.parametrize(
    "bad",
    [
        Reply.text(200, "{'model': 'x'"),
        Reply.text(200, '{"model": "jev", "answ'),
        Reply.json(200, ["not", "an", "object"]),
        Reply.json(200, {"model": "jev"}),
        good_then(bad_label),
        good_then(missing),
    ],
)
async def test_malformed_200_is_retried_then_raised(bad: Reply | Handler) -> None:
    # Documented choice: the caller checks a 200 against the request (parse_answers), so
    # a bad label or a missing answer is a retryable "malformed" attempt, not an answer.
    records: list[Attempt] = []
    async with backend(scripted(bad, ok_response)) as b:
        reply = await ask(b, records=records)
    assert records[0].kind == "malformed"
    assert parse_answers(BODY["questions"], reply.response)
    async with backend(scripted(bad)) as b:
        with pytest.raises(BackendError) as caught:
            await ask(b, max_attempts=1)
    assert caught.value.kind == "malformed"


async def test_connection_errors_and_timeouts_are_retried() -> None:
    async def stalls(request: Seen) -> Reply:
        await anyio.sleep(1)
        return ok_response(request)

    handler = scripted(DROP, stalls, DROP, ok_response)
    records: list[Attempt] = []
    async with backend(handler, transport=Transport(timeout_s=0.2)) as b:
        await ask(b, records=records)
    kinds = [r.kind for r in records[:-1]]
    assert kinds == ["connection", "timeout", "connection"]


async def test_the_whole_attempt_is_bounded_by_the_timeout() -> None:
    async def stalls(request: Seen) -> Reply:
        await anyio.sleep(10)
        raise AssertionError("not reached")

    async with backend(stalls, transport=Transport(timeout_s=0.05)) as b:
        with anyio.fail_after(5), pytest.raises(BackendError) as caught:
            await ask(b, max_attempts=1)
    assert caught.value.kind == "timeout"


async def test_each_attempt_is_reported_as_it_ends() -> None:
    # Streamed, not batched after the call: attempt 1 is heard before attempt 2 is sent.
    seen: list[str] = []

    def server(request: Seen) -> Reply:
        seen.append(f"sent {len(seen) // 2 + 1}")
        return error(500, {"detail": "x"}) if len(seen) == 1 else ok_response(request)

    async with backend(server) as b:
        sleep = FakeSleep()
        caller = Caller(b, Pacer(4, sleep=sleep), sleep=sleep)
        await caller.call(BODY, lambda record: seen.append(f"heard {record.number}"))
    assert seen == ["sent 1", "heard 1", "sent 2", "heard 2"]


async def test_an_unserialisable_body_is_refused_before_sending() -> None:
    async with backend(scripted()) as b:
        with pytest.raises(BackendError) as caught:
            await b.answer({"model": "jev", "state": object(), "questions": {}})
    assert caught.value.kind == "bad_body"


async def test_a_window_of_one_still_answers() -> None:
    rate = Pacer(1)
    async with backend(scripted(error(503, {"detail": "busy"}), ok_response)) as b:
        with anyio.fail_after(5):
            await ask(b, pacer=rate)
    assert rate.in_flight == 0


# --- the key never leaks -------------------------------------------------------------


def echo_key(status: int, content_type: str = "application/json") -> Handler:
    """A careless server that repeats the Authorization header in its error body."""

    def handler(request: Seen) -> Reply:
        auth = request.headers.get("authorization", "")
        text = orjson.dumps({"detail": f"bad key {auth} / {KEY}"}).decode()
        if "html" in content_type:
            text = f"<html><title>{KEY}</title><body>{auth}</body></html>"
        return Reply.text(status, text, **{"Content-Type": content_type})

    return handler


LEAKY: list[Handler] = [
    *(echo_key(s) for s in (400, 401, 403, 404, 408, 413, 422, 429, 500, 503, 529)),
    echo_key(502, "text/html"),
    echo_key(200, "text/plain"),
]


def leaks(*things: Any) -> Iterator[str]:
    for thing in things:
        text = thing if isinstance(thing, str) else repr(thing)
        if KEY in text or KEY[-10:] in text:
            yield text


class KeyInErrors:
    """A fake sender whose library errors quote the Authorization header, as some do."""

    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    async def post(self, url: str, content: bytes) -> Any:
        raise self.error(f"failed at {url} with Bearer {KEY}")

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    "handler",
    [*LEAKY, *(KeyInErrors(e) for e in (aiohttp.ClientConnectionError, aiohttp.ServerTimeoutError,
                                         aiohttp.ClientPayloadError, ConnectionResetError))],
)  # fmt: skip
async def test_the_planted_key_never_leaks(handler: Handler | KeyInErrors) -> None:
    records: list[Attempt] = []
    async with backend(scripted() if isinstance(handler, KeyInErrors) else handler) as b:
        if isinstance(handler, KeyInErrors):
            await b.http.aclose()
            b.http._sender = handler
        with pytest.raises((BackendError, BudgetExhausted)) as caught:
            await ask(b, records=records, max_attempts=2)
        raised = caught.value  # 429s end at the ceiling on waiting, caused by the last one
        exc = raised if isinstance(raised, BackendError) else raised.__cause__
        assert isinstance(exc, BackendError) and records
        chain = []
        link: BaseException | None = exc
        while link is not None:
            chain.extend([str(link), repr(link)])
            link = link.__cause__ or link.__context__
        found = list(
            leaks(
                *chain, exc.args, exc.body, b, b.describe(),
                orjson.dumps(b.describe()).decode(), b.http, b.http._sender,
                *(r._asdict() for r in records),
                *(orjson.dumps(r._asdict()).decode() for r in records),
            )
        )  # fmt: skip
        assert found == []


async def test_the_key_is_sent_but_never_shown() -> None:
    async with backend(ok_response) as b:
        await b.answer(BODY)
        sender = b.http._sender
        session = sender._session  # type: ignore[attr-defined]
        assert f"Bearer {KEY}" in session.headers.values()  # sent with every request
        shown = (repr(b), b.describe(), repr(b.http), repr(sender), repr(session))
        assert list(leaks(*shown)) == []


# --- against the real loopback serve-sim ---------------------------------------------


@pytest.mark.parametrize("model", ["sim", "oracle"])
async def test_loopback_serve_sim_gives_the_in_process_answers(model: str) -> None:
    local = SimModel() if model == "sim" else Oracle()
    config = ServerConfig(port=0, model=model)
    records: list[Attempt] = []
    async with (
        serve_sim_in_background(config) as url,
        SystemOneBackend(model, base_url=url, api_key=KEY) as b,
    ):
        for body in real_bodies():
            SystemOneRequest.model_validate(body)
            reply = await ask(b, body, records=records)
            SystemOneResponse.model_validate(reply.response)
            assert reply.response == local.respond(body)
            assert reply.model == model and reply.request_id.startswith("sim-")
    assert len(records) == len(real_bodies())
    assert len({r.request_id for r in records}) == len(records)


async def test_loopback_refusals_are_not_retried() -> None:
    sleep = FakeSleep()
    async with (
        serve_sim_in_background(ServerConfig(port=0)) as url,
        SystemOneBackend("sim", base_url=url, api_key="") as b,
    ):
        with pytest.raises(BackendError) as caught:
            await ask(b, {"model": "sim", "state": {}, "questions": {}}, sleep=sleep)
        assert (caught.value.kind, caught.value.status) == ("http_4xx", 422)
        assert "body.questions" in str(caught.value)
        body = {**BODY, "questions": {"q1": {"type": "choice", "instructions": "Pick one.",
                                             "criteria": {"a": "A", "b": "B"}}}}  # fmt: skip
        with pytest.raises(BackendError, match="not one this model can read"):
            await ask(b, body, sleep=sleep)
    assert sleep.waits == []


async def test_connection_refused_is_a_connection_error() -> None:
    with anyio.fail_after(10):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()  # nothing listens there now
        records: list[Attempt] = []
        async with SystemOneBackend("sim", base_url=f"http://127.0.0.1:{port}", api_key=KEY) as b:
            with pytest.raises(BackendError) as caught:
                await ask(b, records=records, max_attempts=2)
    assert caught.value.kind == "connection"
    assert KEY not in str(caught.value)
    assert len(records) == 2


async def test_loopback_timeout_bounds_the_whole_attempt() -> None:
    # The sender against a real server slower than the timeout.
    records: list[Attempt] = []
    with anyio.fail_after(10):
        async with (
            serve_sim_in_background(ServerConfig(port=0, latency_ms=2000)) as url,
            SystemOneBackend(
                "sim", base_url=url, api_key=KEY, transport=Transport(timeout_s=0.1)
            ) as b,
        ):
            with pytest.raises(BackendError) as caught:
                await ask(b, records=records, max_attempts=2)
    assert caught.value.kind == "timeout"
    assert [r.kind for r in records] == ["timeout", "timeout"]
    assert KEY not in str(caught.value)


async def test_loopback_redirect_is_not_followed() -> None:
    # Never followed (aiohttp follows unless told not to): a POST's redirect means a wrong
    # base URL.
    from aiohttp import web

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/elsewhere")

    async with (
        serve_post("/v1/systemone", moved) as url,
        SystemOneBackend("sim", base_url=url, api_key=KEY) as b,
    ):
        with pytest.raises(BackendError) as caught:
            await ask(b)
    assert caught.value.kind == "redirect" and caught.value.status == 302
