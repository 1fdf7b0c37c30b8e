"""The caller, the pacer and the budget, with in-process backends: no network, no sleeping."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import anyio
import orjson
import pytest

import harness.calling.caller
from harness.backends import Reply
from harness.backends.pricing import Price
from harness.backends.sim import SimModel
from harness.calling import Attempt, Budget, Caller, Limits, Pacer, RetrySettings
from harness.errors import AuthError, BackendError, BudgetExhausted, TransientError
from harness.progress import Counters
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from tests.calling.test_retry import FakeTime, slot


@functools.cache
def first_body() -> dict[str, Any]:
    return Job(load_suite("affine").jobs()[3], ("tree10", "bits")).next_request("sim")[0]


class Scripted:
    """The sim behind a script of steps, one per attempt; fails loudly when it runs out.

    A step is an exception to raise, "sim" for the sim's reply, or a function that edits the
    sim's response body (a malformed 200 that is still billed).
    """

    name, simulated, price_per_million = "scripted", True, 0.0

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.sim = SimModel()

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        assert self.steps, "asked more often than scripted"
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        response = self.sim.respond(body)
        if callable(step):
            step(response)
        return Reply(response, model="sim", usage=response["usage"], cost_usd=0.25)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": "scripted", "simulated": True, "params": {}}

    async def aclose(self) -> None:
        pass


def bad_label(response: dict[str, Any]) -> None:
    response["answers"]["q1"]["choice"] = "not-a-label"


def caller(backend: Any, fake: FakeTime, **kw: Any) -> Caller:
    pacer = kw.pop("pacer", None) or Pacer(4, clock=fake.clock, sleep=fake.sleep)
    return Caller(backend, pacer, sleep=fake.sleep, clock=fake.clock, **kw)


async def test_a_malformed_answer_is_retried_for_an_in_process_backend_and_billed() -> None:
    fake, heard = FakeTime(), []
    answered = await caller(Scripted(bad_label, "sim"), fake).call(first_body(), heard.append)
    assert [a.kind for a in heard] == ["malformed", None] and answered is heard[-1]
    rejected = heard[0]
    assert rejected.status == 200 and "not one of the criteria" in (rejected.message or "")
    # The rejected 200 was paid for: its usage and cost are on its record.
    assert rejected.cost_usd == 0.25 and rejected.usage == first_body_usage()
    assert answered.answers is not None and set(answered.answers) == set(first_body()["questions"])


def first_body_usage() -> dict[str, int]:
    return SimModel().respond(first_body())["usage"]


async def test_each_attempt_has_its_own_time_and_latency() -> None:
    fake, heard = FakeTime(), []
    busy = TransientError("overloaded", "busy", status=503)
    ask = caller(Scripted(busy, busy, "sim"), fake, wall=fake.clock)
    await ask.call(first_body(), heard.append)
    assert [a.number for a in heard] == [1, 2, 3]
    # Waits happen between attempts, so no attempt's latency includes them, and each
    # attempt's t is when IT started: the first's plus the waits before it (issue 10).
    assert len(fake.sleeps) == 2 and all(a.latency_ms < 1000 * min(fake.sleeps) for a in heard)
    assert heard[1].t - heard[0].t == pytest.approx(fake.sleeps[0])
    assert heard[2].t - heard[1].t == pytest.approx(fake.sleeps[1])


async def test_the_price_prices_a_reply_without_cost() -> None:
    class Free(Scripted):
        async def answer(self, body: Mapping[str, Any]) -> Reply:
            reply = await super().answer(body)
            return Reply(reply.body, model="sim", usage=reply.usage)

    fake = FakeTime()
    answered = await caller(Free("sim"), fake, price=Price(10.0, 20.0)).call(
        first_body(), lambda a: None
    )
    usage = first_body_usage()
    expected = (usage["input_tokens"] * 10 + usage["output_tokens"] * 20) / 1e6
    assert usage["output_tokens"] > 0 and answered.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize(
    "error",
    [BackendError("bad_request", "cannot read"), AuthError("auth", "refused", status=401)],
)
async def test_only_transient_errors_are_retried(error: BackendError) -> None:
    fake, heard = FakeTime(), []
    with pytest.raises(type(error)):
        await caller(Scripted(error, "sim"), fake).call(first_body(), heard.append)
    assert [a.kind for a in heard] == [error.kind] and fake.sleeps == []


async def test_an_answered_first_attempt_never_builds_the_retry_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hot path: tenacity costs tens of microseconds to build, so only failures pay it.
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the retry loop was built for an answered first attempt")

    monkeypatch.setattr(harness.calling.caller, "build_retrying", refuse)
    answered = await caller(Scripted("sim"), FakeTime()).call(first_body(), lambda a: None)
    assert answered.number == 1


async def test_max_attempts_one_never_retries() -> None:
    fake = FakeTime()
    busy = TransientError("overloaded", "busy")
    with pytest.raises(TransientError):
        await caller(Scripted(busy), fake, retry=RetrySettings(max_attempts=1)).call(
            first_body(), lambda a: None
        )


async def test_a_429_halves_the_window_and_pauses_every_attempt() -> None:
    fake = FakeTime()
    pacer = Pacer(8, clock=fake.clock, sleep=fake.sleep)
    limited = TransientError("rate_limited", "slow down", status=429, wait_s=3.0)
    await caller(Scripted(limited, "sim"), fake, pacer=pacer).call(first_body(), lambda a: None)
    assert pacer.limit == 4 + 1 and pacer.in_flight == 0  # halved, then one success back
    assert fake.sleeps == [3.0]  # the retry wait; the pause had passed when it ended


async def test_rps_spaces_attempt_starts() -> None:
    fake = FakeTime()
    pacer = Pacer(8, rps=2.0, clock=fake.clock, sleep=fake.sleep)
    starts = []
    for _ in range(3):
        async with slot(pacer):
            starts.append(fake.now)
    assert starts == [0.0, 0.5, 1.0]


async def test_a_cancelled_waiter_passes_its_place_on() -> None:
    pacer = Pacer(1)
    await pacer.acquire()  # the window is full
    got: list[str] = []
    scopes: dict[str, anyio.CancelScope] = {}

    async def take(name: str) -> None:
        with anyio.CancelScope() as scope:
            scopes[name] = scope
            async with slot(pacer):
                got.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(take, "a")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(take, "b")
            await anyio.wait_all_tasks_blocked()
            scopes["a"].cancel()  # the first waiter gives up its turn ...
            await anyio.wait_all_tasks_blocked()
            pacer.release()  # ... so the place goes to the next
    assert got == ["b"] and pacer.in_flight == 0


def test_budget_caps_requests_and_names_the_cap() -> None:
    budget = Budget(Limits(max_requests=2), Counters())
    budget.admit()
    budget.admit()
    with pytest.raises(BudgetExhausted, match=r"request cap reached \(2 requests\)"):
        budget.admit()


def test_each_attempt_holds_one_token_per_byte_so_attempts_in_flight_cannot_overshoot() -> None:
    size = len(orjson.dumps(first_body()))
    price = 1e6 / size  # one token per byte: each attempt holds USD 1.00
    counters = Counters()
    budget = Budget(Limits(max_cost_usd=2.5), counters, price)
    assert budget.size_of(first_body()) == size
    held = [budget.try_hold(size), budget.try_hold(size)]
    assert all(h is not None and h.usd == pytest.approx(1.0) for h in held)
    assert budget.try_hold(size) is None  # a third may fit once one of these ends
    counters.cost_usd += 0.25  # the recorder counted the first one's real cost
    budget.settle(held[0], 0.25)  # type: ignore[arg-type]
    again = budget.try_hold(size)  # 0.25 spent + 1.0 held + 1.0 = 2.25 <= 2.5
    assert again is not None and budget.try_hold(size) is None
    for h in (held[1], again):
        counters.cost_usd += 0.25
        budget.settle(h, 0.25)  # type: ignore[arg-type]
    assert budget.reserved == 0.0 and counters.cost_usd == 0.75
    assert budget.try_hold(size) is not None  # 0.75 + 1.0 fits
    assert budget.try_hold(size) is None


def test_nothing_held_and_no_room_stops_the_run_in_words() -> None:
    size = len(orjson.dumps(first_body()))
    counters = Counters(cost_usd=2.0)
    budget = Budget(Limits(max_cost_usd=2.5), counters, 1e6 / size)
    with pytest.raises(BudgetExhausted, match=r"spend cap reached: USD 2\.000000 recorded"):
        budget.try_hold(size)  # 2.0 + 1.0 > 2.5 and nothing in flight to wait for


def test_the_bound_learns_the_most_an_attempt_cost() -> None:
    budget = Budget(Limits(max_cost_usd=100.0), Counters(), 1e6)  # USD 1 per byte
    first = budget.try_hold(10)
    assert first is not None and first.usd == pytest.approx(10.0)
    budget.settle(first, 30.0)  # a server whose template costs more than the body
    assert budget.bound(10) == pytest.approx(30.0)  # 3 per byte learned
    assert budget.bound(1) == pytest.approx(30.0)  # never below the most one attempt cost


async def test_a_waiting_hold_gets_in_when_an_attempt_in_flight_ends() -> None:
    size = len(orjson.dumps(first_body()))
    counters = Counters()
    budget = Budget(Limits(max_cost_usd=1.5), counters, 1e6 / size)
    first = budget.try_hold(size)
    assert first is not None
    got: list[Any] = []

    async def second() -> None:
        got.append(await budget.hold(size))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(second)
            await anyio.wait_all_tasks_blocked()
            assert got == []  # 1.0 held + 1.0 > 1.5: it waits rather than stop the run
            counters.cost_usd += 0.25
            budget.settle(first, 0.25)
    assert got and got[0].usd == pytest.approx(1.0)


def test_the_breaker_trips_only_before_anything_was_answered() -> None:
    budget = Budget(Limits(), Counters(), early_failure_limit=3)
    error = TransientError("connection", "refused")
    assert budget.failed(error) is None and budget.failed(error) is None
    message = budget.failed(error)
    assert message is not None and "first 3 requests all failed" in message
    later = Budget(Limits(), Counters(), early_failure_limit=1)
    later.answered()
    assert later.failed(error) is None


def test_attempts_are_tuples_with_named_fields() -> None:
    error = TransientError("rate_limited", "slow", status=429, body="x", request_id="r1")
    attempt = Attempt.failed(2, 1.5, 3.0, error)
    assert (attempt.number, attempt.kind, attempt.status, attempt.request_id) == (
        2,
        "rate_limited",
        429,
        "r1",
    )
    assert attempt.answers is None and attempt.response == "x"
