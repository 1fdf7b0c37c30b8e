"""Fault injection in serve-sim: parsing, determinism, each kind classified, outputs unchanged."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import anyio
import orjson
import pytest

from harness.backends.base import Transport
from harness.backends.sim import SimModel
from harness.backends.systemone import SystemOneBackend
from harness.calling import Attempt, Caller, Pacer, RetrySettings
from harness.errors import BackendError, ConfigError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import FaultPlan, FaultSpec, ServerConfig, SimApp, serve_sim_in_background
from harness.serve.faults import KINDS
from harness.wire.answers import parse_answers


@functools.cache
def suite_and_specs() -> tuple[Any, list[Any]]:
    suite = load_suite("affine")
    return suite, suite.jobs()[::43][:24]


def first_bodies(n: int = 40) -> list[dict[str, Any]]:
    suite = load_suite("affine")
    return [Job(s, suite.decoders).next_request("sim")[0] for s in suite.jobs()[:n]]


async def no_wait(seconds: float) -> None:
    await anyio.lowlevel.checkpoint()


def caller(backend: SystemOneBackend, max_attempts: int = 6) -> Caller:
    """A caller in front of ``backend`` that retries without waiting."""
    pacer = Pacer(backend.http.transport.concurrency, sleep=no_wait)
    return Caller(backend, pacer, RetrySettings(max_attempts=max_attempts), sleep=no_wait)


def test_spec_parses_kinds_and_mixed() -> None:
    spec = FaultSpec.parse("429=0.03, 500=0.01,reset=0.02")
    assert dict(spec.rates) == {"429": 0.03, "500": 0.01, "reset": 0.02}
    assert sum(p for _, p in spec.rates) == pytest.approx(0.06)
    mixed = FaultSpec.parse("mixed=0.11")
    assert {k for k, _ in mixed.rates} == set(KINDS)
    assert all(p == pytest.approx(0.01) for _, p in mixed.rates)
    assert dict(FaultSpec.parse("mixed=0.11,slow=0.01").rates)["slow"] == pytest.approx(0.02)
    assert FaultSpec.parse("").rates == () and FaultSpec.parse(None).describe() == "none"
    assert FaultSpec.parse("429=0.5").describe() == "429=0.5"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("teapot=0.1", "unknown kind 'teapot'"),
        ("429", "KIND=P"),
        ("429=lots", "not a probability"),
        ("429=1.5", r"must lie in \[0, 1\]"),
        ("429=0.6,500=0.6", "add up to 1.200"),
    ],
)
def test_spec_refuses_bad_text(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FaultSpec.parse(text)


def decisions(seed: int, bodies: list[bytes], rounds: int = 3) -> list[str | None]:
    plan = FaultPlan(FaultSpec.parse("mixed=0.5"), seed)
    return [plan.decide(body) for _ in range(rounds) for body in bodies]


def test_faults_are_deterministic_for_a_seed() -> None:
    bodies = [orjson.dumps(b) for b in first_bodies()]
    assert decisions(7, bodies) == decisions(7, bodies)
    assert decisions(7, bodies) != decisions(8, bodies)


def test_a_body_is_faulted_at_most_max_per_body_times_in_a_row() -> None:
    body = orjson.dumps(first_bodies(1)[0])
    plan = FaultPlan(FaultSpec.parse("500=1"), seed=0, max_per_body=3)
    assert [plan.decide(body) for _ in range(5)] == ["500", "500", "500", None, "500"]


def test_fault_rates_match_the_spec() -> None:
    plan = FaultPlan(FaultSpec.parse("429=0.2,reset=0.1"), seed=3, max_per_body=1)
    drawn = Counter(plan.decide(str(i).encode()) for i in range(20_000))
    assert drawn["429"] / 20_000 == pytest.approx(0.2, abs=0.015)
    assert drawn["reset"] / 20_000 == pytest.approx(0.1, abs=0.015)


def app_with(kind: str, **kw: Any) -> SimApp:
    return SimApp(ServerConfig(port=0, faults=FaultSpec.parse(f"{kind}=1"), **kw))


def test_each_fault_kind_fails_detectably_in_the_app() -> None:
    body = first_bodies(1)[0]
    raw = orjson.dumps(body)
    right = SimModel().respond(body)
    seen = {}
    for kind in KINDS:
        out = app_with(kind, retry_after_s=0.25, slow_s=9.0).handle("POST", "/v1/systemone", raw)
        seen[kind] = out
        if out.status == 200 and not out.reset and kind != "slow":
            try:
                parsed = orjson.loads(out.body)
            except orjson.JSONDecodeError:
                continue
            with pytest.raises(BackendError, match=r"no answer|not one of the criteria"):
                parse_answers(body["questions"], parsed)
    assert seen["429"].status == 429
    assert dict(seen["429"].headers) == {"retry-after": "1", "retry-after-ms": "250"}
    assert [seen[k].status for k in ("500", "503", "529", "html")] == [500, 503, 529, 502]
    assert seen["html"].content_type == "text/html"
    assert seen["reset"].reset
    assert seen["slow"].delay_s == 9.0 and orjson.loads(seen["slow"].body) == right
    assert seen["truncated"].body == orjson.dumps(right)[: len(orjson.dumps(right)) // 2]


EXPECTED_KIND = {
    "429": "rate_limited",
    "500": "server_error",
    "503": "overloaded",
    "529": "overloaded",
    "reset": "connection",
    "truncated": "malformed",
    "malformed": "malformed",
    "badlabel": "malformed",
    "missing": "malformed",
    "html": "server_error",
    "slow": "timeout",
}


@pytest.mark.parametrize("kind", KINDS)
async def test_each_fault_kind_is_classified_then_retried_to_the_right_answer(kind: str) -> None:
    body = first_bodies(1)[0]
    config = ServerConfig(port=0, faults=FaultSpec.parse(f"{kind}=1"), slow_s=5.0)
    records: list[Attempt] = []
    async with serve_sim_in_background(config) as url:
        async with SystemOneBackend(
            "sim", base_url=url, api_key="sk-fault-key", transport=Transport(timeout_s=0.3)
        ) as once:
            if kind == "429":  # never a failure: retried even at one attempt per request
                with anyio.fail_after(10):
                    reply = await caller(once, max_attempts=1).call(body, records.append)
            else:
                with anyio.fail_after(10), pytest.raises(BackendError) as caught:
                    await caller(once, max_attempts=1).call(body, records.append)
                assert caught.value.kind == EXPECTED_KIND[kind]
        if kind == "html":
            assert "HTML error page (status 502)" in str(caught.value)
        # The server has faulted this body once; two more faults, then the right answer.
        async with SystemOneBackend(
            "sim", base_url=url, api_key="", transport=Transport(timeout_s=0.3)
        ) as patient:
            with anyio.fail_after(10):
                if kind != "429":
                    reply = await caller(patient).call(body, records.append)
    assert reply.response == SimModel().respond(body)
    assert [r.kind for r in records] == [EXPECTED_KIND[kind]] * 3 + [None]
    assert all("sk-fault-key" not in repr(r) for r in records)


async def run_jobs(url: str | None, specs: list[Any]) -> tuple[list[dict[str, Any]], Counter]:
    """Run whole jobs against ``url`` (or in process) and return their outputs."""
    suite, _ = suite_and_specs()
    sim = SimModel()
    kinds: Counter = Counter()
    outputs: dict[str, list[dict[str, Any]]] = {}
    backend = None
    if url is not None:
        backend = SystemOneBackend("sim", base_url=url, api_key="", transport=Transport(32, 0.3))
        ask = caller(backend)

    def hear(attempt: Attempt) -> None:
        kinds.update([attempt.kind])

    async def one(spec: Any) -> None:
        job = Job(spec, suite.decoders)
        while (step := job.next_request("sim")) is not None:
            body, qmap = step
            answer = sim.respond(body) if backend is None else (await ask.call(body, hear)).response
            job.apply(qmap, parse_answers(body["questions"], answer))
        outputs[spec.id] = job.outputs(simulated=True)

    async with anyio.create_task_group() as tg:
        for spec in specs:
            tg.start_soon(one, spec)
    if backend is not None:
        await backend.aclose()
    return [r for spec in specs for r in outputs[spec.id]], kinds


async def test_a_faulty_server_gives_the_same_outputs_as_a_clean_run() -> None:
    _, specs = suite_and_specs()
    clean, _ = await run_jobs(None, specs)
    config = ServerConfig(port=0, faults=FaultSpec.parse("mixed=0.3"), fault_seed=11, slow_s=2)
    async with serve_sim_in_background(config) as url:
        with anyio.fail_after(60):
            faulty, kinds = await run_jobs(url, specs)
    assert faulty == clean
    assert set(kinds) - {None} == set(EXPECTED_KIND.values())  # every kind of failure seen
