"""Retry rules as pure functions, the one tenacity policy, and the pacer's AIMD window."""

from __future__ import annotations

import asyncio
import email.utils
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import anyio
import orjson
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from harness.backends.http import Decision, classify, parse_retry_after
from harness.backends.sim import SimModel
from harness.calling import Caller, Pacer, RetrySettings, build_retrying
from harness.errors import AuthError, BackendError, TransientError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("status", "retry", "kind", "fatal"),
    [
        (200, False, "ok", False),
        (400, False, "http_4xx", False),
        (401, False, "auth", True),
        (402, False, "http_4xx", False),
        (403, False, "auth", True),
        (404, False, "http_4xx", False),
        (408, True, "timeout", False),
        (413, False, "http_4xx", False),
        (422, False, "http_4xx", False),
        (429, True, "rate_limited", False),
        (500, True, "server_error", False),
        (502, True, "server_error", False),
        (503, True, "overloaded", False),
        (504, True, "server_error", False),
        (529, True, "overloaded", False),
        (599, True, "server_error", False),
        (301, False, "redirect", False),
    ],
)
def test_status_table(status: int, retry: bool, kind: str, fatal: bool) -> None:
    decision = classify(status, None, {})
    assert (decision.retry, decision.kind, decision.fatal) == (retry, kind, fatal)


def test_status_decisions_carry_retry_after() -> None:
    assert classify(429, None, {"Retry-After": "3"}).wait_s == 3.0
    assert classify(503, None, {"retry-after-ms": "250"}).wait_s == 0.25
    assert classify(500, None, {}).wait_s is None
    assert classify(400, None, {"Retry-After": "3"}).wait_s is None  # never retried anyway


@pytest.mark.parametrize(
    ("exc", "retry", "kind"),
    [
        (TimeoutError(), True, "timeout"),
        (ConnectionResetError(), True, "connection"),
        # aiohttp, the sender's library
        (aiohttp.ServerTimeoutError("slow"), True, "timeout"),
        (aiohttp.ClientConnectionResetError("reset"), True, "connection"),
        (aiohttp.ServerDisconnectedError(), True, "connection"),
        (aiohttp.ClientOSError(104, "reset"), True, "connection"),
        (aiohttp.ClientPayloadError("cut short"), True, "connection"),
        (aiohttp.SocketTimeoutError("slow"), True, "timeout"),
        (aiohttp.ConnectionTimeoutError("slow"), True, "timeout"),
        (aiohttp.InvalidURL("http://[bad"), False, "connection"),
        (aiohttp.NonHttpUrlClientError("ftp://x"), False, "connection"),
        (orjson.JSONDecodeError("bad", "{", 0), True, "malformed"),
        (BackendError("malformed", "no answer for q1"), True, "malformed"),
        (BackendError("http_4xx", "bad request"), False, "http_4xx"),
        (AuthError("auth", "refused"), False, "auth"),
        (TypeError("not JSON"), False, "bad_body"),
        (ValueError("a bug"), False, "unexpected"),
        (asyncio.CancelledError(), False, "unexpected"),
        (KeyboardInterrupt(), False, "unexpected"),
    ],
)
def test_exception_table(exc: BaseException, retry: bool, kind: str) -> None:
    decision = classify(None, exc)
    assert (decision.retry, decision.kind) == (retry, kind)
    assert decision.fatal == (kind == "auth")


def test_transient_error_keeps_its_decision() -> None:
    decision = Decision(retry=True, kind="rate_limited", wait_s=2.0)
    error = decision.error("429")
    assert isinstance(error, TransientError)
    assert classify(None, error) == decision


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({}, None),
        (None, None),
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"Retry-After": "-3"}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "20", "Retry-After": "9"}, 0.02),  # ms wins, as in the SDK
        ({"retry-after-ms": "nan", "Retry-After": "9"}, 9.0),
        ({"Retry-After": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"Retry-After": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00"}, None),  # no zone: not an HTTP-date
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, wait: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == wait


def test_backoff_grows_from_half_a_second_to_eight_with_jitter() -> None:
    settings = RetrySettings()
    rng = random.Random(1)
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (9, 8.0)]:
        waits = [settings.backoff(attempt, rng) for _ in range(200)]
        assert min(waits) >= base * 0.75 - 1e-9
        assert max(waits) <= base * 1.25 + 1e-9
        assert max(waits) - min(waits) > base * 0.2  # jitter really varies


def test_server_wait_beats_backoff_but_is_capped() -> None:
    settings = RetrySettings(max_retry_after_s=10.0)
    rng = random.Random(0)
    assert settings.wait_for(Decision(True, "rate_limited", 3.0), 1, rng) == 3.0
    assert settings.wait_for(Decision(True, "rate_limited", 0.0), 4, rng) == 0.0
    assert settings.wait_for(Decision(True, "rate_limited", 999.0), 1, rng) == 10.0
    assert 0.375 <= settings.wait_for(Decision(True, "server_error"), 1, rng) <= 0.625


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetrySettings(max_attempts=0)


class FakeTime:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await checkpoint()


@asynccontextmanager
async def slot(pacer: Pacer) -> AsyncIterator[int]:
    """A place in ``pacer``'s window held for the block (acquired, then released)."""
    generation = await pacer.acquire()
    try:
        yield generation
    finally:
        pacer.release()


async def run_policy(settings: RetrySettings, outcomes: list[BaseException | str], fake: FakeTime):
    """Drive the policy over scripted outcomes; fails loudly if the script runs out."""
    script = iter(outcomes)
    calls = 0
    async for attempt in build_retrying(
        settings, sleep=fake.sleep, clock=fake.clock, rng=random.Random(0)
    ):
        with attempt:
            calls += 1
            outcome = next(script)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome, calls
    raise AssertionError("unreachable")


def transient(kind: str = "server_error", wait: float | None = None) -> TransientError:
    return TransientError(kind, kind, wait_s=wait)


async def test_policy_retries_transient_errors_until_success() -> None:
    fake = FakeTime()
    result = await run_policy(
        RetrySettings(), [transient(), transient("rate_limited", 2.5), "ok"], fake
    )
    assert result == ("ok", 3)
    assert len(fake.sleeps) == 2
    assert 0.375 <= fake.sleeps[0] <= 0.625  # backoff
    assert fake.sleeps[1] == 2.5  # the server's Retry-After


async def test_policy_reraises_the_last_error_after_max_attempts() -> None:
    fake = FakeTime()
    errors = [transient("overloaded") for _ in range(3)]
    with pytest.raises(TransientError) as caught:
        await run_policy(RetrySettings(max_attempts=3), errors, fake)
    assert caught.value is errors[-1]
    assert len(fake.sleeps) == 2


@pytest.mark.parametrize(
    "error",
    [
        BackendError("http_4xx", "400"),
        AuthError("auth", "401"),
        ValueError("a bug"),
        asyncio.CancelledError(),
        KeyboardInterrupt(),
    ],
)
async def test_policy_never_retries_anything_but_transient_errors(error: BaseException) -> None:
    fake = FakeTime()
    with pytest.raises(type(error)):
        await run_policy(RetrySettings(), [error, "ok"], fake)
    assert fake.sleeps == []


async def test_policy_stops_before_a_wait_that_would_overrun_the_budget() -> None:
    fake = FakeTime()
    settings = RetrySettings(max_attempts=50, budget_s=10.0)
    errors = [transient("overloaded", 4.0) for _ in range(50)]
    with pytest.raises(TransientError):
        await run_policy(settings, errors, fake)
    assert fake.sleeps == [4.0, 4.0]  # a third wait would end at 12 s > 10 s
    assert fake.now <= settings.budget_s


async def test_policy_stops_when_retry_after_exceeds_the_budget() -> None:
    fake = FakeTime()
    with pytest.raises(TransientError):
        await run_policy(RetrySettings(budget_s=5.0), [transient("overloaded", 30.0)], fake)
    assert fake.sleeps == []


async def test_a_429_never_counts_as_an_attempt_nor_against_the_budget() -> None:
    # Issue 10: "a 429 says slow down, not this request is bad".
    fake = FakeTime()
    settings = RetrySettings(max_attempts=2, budget_s=10.0)
    script: list[BaseException | str] = [transient("rate_limited", 4.0) for _ in range(20)]
    result, calls = await run_policy(settings, [*script, transient(), "ok"], fake)
    assert (result, calls) == ("ok", 22) and fake.sleeps[:20] == [4.0] * 20
    # ... while other failures still stop it after max_attempts
    with pytest.raises(TransientError):
        await run_policy(settings, [transient(), transient("rate_limited", 1.0), transient()], fake)


async def count_attempts(settings: RetrySettings, answered: bool, fake: FakeTime) -> int:
    """Attempts the policy makes at an exchange that always fails to connect."""
    calls = 0
    with pytest.raises(TransientError):
        async for attempt in build_retrying(
            settings, sleep=fake.sleep, clock=fake.clock, probing=lambda: not answered
        ):
            with attempt:
                calls += 1
                raise transient("connection")
    return calls


async def test_the_probe_policy_applies_until_something_is_answered() -> None:
    fake = FakeTime()
    assert await count_attempts(RetrySettings(), answered=False, fake=fake) == 3
    assert fake.sleeps and all(wait <= 1.25 for wait in fake.sleeps)  # probe: 1 s, jittered
    assert await count_attempts(RetrySettings(), answered=True, fake=FakeTime()) == 6
    assert RetrySettings(max_attempts=1).probe().max_attempts == 1


def test_aimd_halves_once_per_generation_and_grows_back_additively() -> None:
    fake = FakeTime()
    rate = Pacer(64, clock=fake.clock, sleep=fake.sleep)
    assert rate.limit == 64
    generation = rate.generation
    for _ in range(10):  # a burst of 429s from requests sent in the same window
        rate.on_rate_limited(generation, 1.0)
    assert rate.limit == 32
    rate.on_rate_limited(rate.generation, None)
    assert rate.limit == 16
    for _ in range(5):
        rate.on_success()
    assert rate.limit == 21
    for _ in range(1000):
        rate.on_success()
    assert rate.limit == 64  # never above the configured concurrency


def test_aimd_never_goes_below_one() -> None:
    fake = FakeTime()
    rate = Pacer(4, clock=fake.clock, sleep=fake.sleep)
    for _ in range(10):
        rate.on_rate_limited(rate.generation, 0.0)
    assert rate.limit == 1


def test_rate_limit_sets_a_run_wide_pause() -> None:
    fake = FakeTime()
    rate = Pacer(8, clock=fake.clock, sleep=fake.sleep, default_pause_s=1.0)
    rate.on_rate_limited(rate.generation, 3.0)
    assert rate.pause_remaining() == 3.0
    rate.on_rate_limited(0, 1.0)  # a shorter wait never shortens the pause
    assert rate.pause_remaining() == 3.0
    rate.on_rate_limited(rate.generation, None)
    assert rate.pause_remaining() == 3.0
    fake.now = 10.0
    rate.on_rate_limited(rate.generation, None)
    assert rate.pause_remaining() == 1.0


async def test_every_new_attempt_waits_out_the_pause() -> None:
    fake = FakeTime()
    rate = Pacer(8, clock=fake.clock, sleep=fake.sleep)
    rate.on_rate_limited(rate.generation, 2.0)
    async with slot(rate):
        pass
    assert fake.sleeps == [2.0]
    async with slot(rate):  # the pause is over
        pass
    assert fake.sleeps == [2.0]


async def test_slots_follow_the_window() -> None:
    rate = Pacer(2)
    rate.on_rate_limited(rate.generation, 0.0)  # window 2 -> 1
    inside: list[int] = []
    release = anyio.Event()

    async def worker(i: int) -> None:
        async with slot(rate):
            inside.append(i)
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker, 1)
        tg.start_soon(worker, 2)
        await wait_all_tasks_blocked()
        assert len(inside) == 1  # limit 1: the second waits
        rate.on_success()  # window back to 2: the waiter gets in
        await wait_all_tasks_blocked()
        assert sorted(inside) == [1, 2]
        release.set()


class FailsOnce:
    """The sim, but the first attempt at every body fails with a 503."""

    name, simulated, price_per_million = "sim", True, 0.0

    def __init__(self) -> None:
        self.sim = SimModel()
        self.seen: set[str] = set()

    async def answer(self, body):
        key = orjson.dumps(body).decode()
        if key not in self.seen:
            self.seen.add(key)
            raise TransientError("overloaded", "busy", status=503)
        return await self.sim.answer(body)

    def describe(self):
        return self.sim.describe()

    async def aclose(self) -> None:
        pass


async def test_one_request_never_holds_two_slots() -> None:
    # Only the caller takes slots, one per attempt: a retry at a window of 1 cannot deadlock.
    fake = FakeTime()
    rate = Pacer(1, clock=fake.clock, sleep=fake.sleep)
    caller = Caller(FailsOnce(), rate, sleep=fake.sleep, clock=fake.clock)
    body = Job(load_suite("affine").jobs()[0], ("tree10",)).next_request("sim")[0]
    with anyio.fail_after(5):
        answered = await caller.call(body, lambda attempt: None)
    assert answered.number == 2 and rate.in_flight == 0
