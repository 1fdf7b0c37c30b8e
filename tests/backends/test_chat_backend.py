"""The openai-chat backend against a fake chat server on loopback: questions in flight are
bounded by the concurrency, and one failed completion fails the attempt (billed usage kept)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from aiohttp import web

from harness.backends.base import Transport
from harness.backends.chat import OpenAIChatBackend
from harness.backends.sim import SimModel
from harness.calling import Attempt, Caller, Pacer, RetrySettings
from harness.errors import TransientError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.wire import from_chat_request, to_chat_completion
from tests.calling.test_retry import FakeTime
from tests.loopback import serve_post


@functools.cache
def thresholds_body() -> dict[str, Any]:
    """A round of 15 noul questions (parallel thresholds on a 16-value grid)."""
    suite = load_suite("exploratory")
    step = Job(suite.jobs()[0], ("parallel_thresholds",)).next_request("chat-model")
    assert step is not None and len(step[0]["questions"]) == 15
    return step[0]


class FakeChat:
    """A chat server answering from the sim; counts completions in flight; can fail some."""

    def __init__(self, delay_s: float = 0.02) -> None:
        self.delay_s = delay_s
        self.in_flight = 0
        self.most = 0
        self.served = 0
        self.fail: Callable[[dict[str, Any]], web.Response | None] = lambda request: None
        self.sim = SimModel()

    async def handle(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await anyio.sleep(self.delay_s)
            body = orjson.loads(await request.read())
            failed = self.fail(body)
            if failed is not None:
                return failed
            asked, chat = from_chat_request(body)
            answer = self.sim.respond(asked)["answers"][chat.qid]
            usage = {"input_tokens": 100, "output_tokens": 1}
            self.served += 1
            return web.json_response(
                to_chat_completion(chat, answer, model="fake-chat", usage=usage),
                headers={"x-request-id": f"req-{self.served}"},
            )
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def fake_server(fake: FakeChat) -> AsyncIterator[str]:
    async with serve_post("/v1/chat/completions", fake.handle) as url:
        yield f"{url}/v1"  # the OpenAI client's style of base URL


async def test_completions_in_flight_never_exceed_the_concurrency() -> None:
    fake = FakeChat()
    async with fake_server(fake) as url:
        backend = OpenAIChatBackend("chat-model", base_url=url, transport=Transport(4), env={})
        replies = []

        async def ask() -> None:
            replies.append(await backend.answer(thresholds_body()))

        async with anyio.create_task_group() as tg:
            for _ in range(3):  # three exchanges of 15 questions each
                tg.start_soon(ask)
        await backend.aclose()
    assert fake.served == 45 and fake.most == 4  # concurrent, never more than 4
    for reply in replies:
        assert set(reply.body["answers"]) == set(thresholds_body()["questions"])
        assert reply.usage == {"input_tokens": 1500, "output_tokens": 15}  # summed
        assert reply.cost_usd is None  # no price at this server
        assert reply.request_id is not None and len(reply.request_id.split(",")) == 15
        assert set(reply.sent) == set(thresholds_body()["questions"])


async def test_one_failed_completion_fails_the_attempt_billed_and_a_retry_asks_all() -> None:
    fake = FakeChat(delay_s=0.0)
    failed_once: list[str] = []

    def rate_limit_q3(body: dict[str, Any]) -> web.Response | None:
        text = body["messages"][1]["content"]
        marker = thresholds_body()["questions"]["q3"]["instructions"]
        if orjson.dumps(marker).decode() in text and not failed_once:
            failed_once.append(text)
            return web.json_response(
                {"error": {"message": "slow down", "type": "rate_limit"}},
                status=429,
                headers={"retry-after": "2"},
            )
        return None

    fake.fail = rate_limit_q3
    heard: list[Attempt] = []
    clock = FakeTime()
    async with fake_server(fake) as url:
        backend = OpenAIChatBackend(
            "chat-model", base_url=url, transport=Transport(8), env={}, price_per_million=1.0
        )
        caller = Caller(
            backend,
            Pacer(8, clock=clock.clock, sleep=clock.sleep),
            RetrySettings(),
            sleep=clock.sleep,
            clock=clock.clock,
        )
        answered = await caller.call(thresholds_body(), heard.append)
        await backend.aclose()
    first, second = heard
    assert (first.kind, first.status) == ("rate_limited", 429)
    assert "question q3 (1 of 15 completions failed)" in (first.message or "")
    assert first.usage == {"input_tokens": 1400, "output_tokens": 14}  # the 14 that came back
    assert first.cost_usd == pytest.approx(1400 / 1e6)
    assert first.sent is not None and len(first.sent) == 15
    assert 2.0 in clock.sleeps  # the server's Retry-After
    assert second is answered and answered.kind is None and fake.served == 29  # 14 + 15


async def test_a_server_ignoring_logprobs_is_a_malformed_attempt() -> None:
    fake = FakeChat(delay_s=0.0)

    def no_logprobs(body: dict[str, Any]) -> web.Response:
        asked, chat = from_chat_request(body)
        answer = fake.sim.respond(asked)["answers"][chat.qid]
        completion = to_chat_completion(chat, answer, model="fake-chat")
        completion["choices"][0]["logprobs"] = None
        return web.json_response(completion)

    fake.fail = no_logprobs
    async with fake_server(fake) as url:
        backend = OpenAIChatBackend("chat-model", base_url=url, env={})
        with pytest.raises(TransientError) as caught:
            await backend.answer(thresholds_body())
        await backend.aclose()
    assert caught.value.kind == "malformed" and "ignored logprobs" in str(caught.value)
