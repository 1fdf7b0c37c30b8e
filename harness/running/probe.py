"""``probe``: one look at a model before paying for a suite (docs/usage.md, "Before paying").

A few of the suite's first requests, sent once each through the model's wire, one at a time
and then in two bursts (``BURST``); then the whole suite's cost (the dry run's counts,
``harness.running.dryrun``) and time (``suite_seconds``). Nothing is written into a run
folder; each answered exchange goes into the request cache keyed as a run's would be.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean, median
from typing import Any

import anyio

from harness.backends import ModelSpec, Reply, make_backend
from harness.backends.base import DEFAULT_CONCURRENCY
from harness.backends.pricing import Price
from harness.cache import RequestCache, open_cache
from harness.calling.attempt import Attempt
from harness.errors import AuthError, BackendError
from harness.protocol.cases import Suite
from harness.running.dryrun import DryPrice, WireCounts, count, dry_run_price
from harness.running.folder import run_price
from harness.running.jobs import Job
from harness.running.session import in_own_loop
from harness.running.settings import RunSettings
from harness.wire.answers import read_answers

PROBE_RUN = "probe"  # the run an entry the probe stored names as the one that paid
# Requests sent at once to time the server's pace (at most the concurrency), twice: the
# faster burst counts, as the first opens connections and warms the server up (on loopback
# serve-sim, one burst of 8 alone gave 0.28-0.67x the real run; benchmarks/bench_probe.py).
BURST = 8


@dataclass(frozen=True)
class ProbeResult:
    """What the probe saw; ``problem`` says why the suite cannot run (None: it can)."""

    where: str  # the endpoint asked
    key: str  # what the key check says: accepted, none sent, or in process
    served: str | None  # the model the server says answered
    latency_s: list[float]
    questions: int
    parsed: int
    refused: int
    coverage: list[float]  # chat wire: each answer's probability on the option tokens
    missing: int  # chat wire: answers with options absent from the alternatives
    problem: str | None
    timing: Timing | None = None  # None: the probe stopped before it could time the server


@dataclass(frozen=True)
class Timing:
    """What the probe timed: requests sent one at a time (their latencies and questions),
    then a burst sent at once (its wall time and questions)."""

    alone_s: tuple[float, ...]
    alone_questions: int
    burst_s: float = 0.0
    burst_questions: int = 0

    def per_question_s(self) -> float:
        """The seconds each further question in flight adds: from one request alone to the
        burst, as a straight line (about 0 for a server that answers side by side)."""
        alone = self.alone_questions / max(1, len(self.alone_s))
        more = self.burst_questions - alone
        if more < 1:
            return 0.0
        return max(0.0, (self.burst_s - median(self.alone_s)) / more)


def suite_seconds(timing: Timing, counts: WireCounts, concurrency: int) -> float:
    """The whole suite's wall time: the longest of three bounds, each of the run's
    requests taking the median latency seen alone.

    - latency: ``concurrency`` HTTP calls in flight, each as slow as one alone;
    - the server's pace: every question of the suite at the seconds one more in flight
      adds (a server that works through them in turn, such as serve-sim: measured on
      loopback, it is this bound that holds, not the first);
    - the rounds: a job's requests go one after another (a suite of fewer jobs than
      ``concurrency``).
    """
    latency = median(timing.alone_s)
    calls = counts.http_calls or counts.exact_requests  # in process: no HTTP
    return max(
        calls * latency / max(1, concurrency),
        counts.questions * timing.per_question_s(),
        counts.rounds * latency,
    )


def first_requests(suite: Suite, model: str, requests: int) -> list[tuple[dict[str, Any], str]]:
    """The first round's request of each of the suite's first ``requests`` jobs, each with
    its occasion (job and round: its request cache key's, as a run's scheduler gives it)."""
    bodies = []
    for spec in suite.jobs()[:requests]:
        job = Job(spec, suite.decoders)
        step = job.next_request(model)
        if step is not None:
            bodies.append((step[0], f"{job.id}#{job.round}"))
    return bodies


def _store(
    cache: RequestCache | None,
    price: Price | None,
    asked: tuple[dict[str, Any], str, float, float],
    reply: Reply,
    answers: Mapping[str, Any],
) -> None:
    """One fully answered exchange into the request cache, as the caller stores a run's."""
    if cache is None:
        return
    body, occasion, t, latency_s = asked
    usage: Any = reply.usage or None
    cost = reply.cost_usd
    if cost is None and price is not None:
        cost = price.cost(usage)
    attempt = Attempt(
        1, t, latency_s * 1000.0, reply.status, None, None, reply.body, reply.model, usage,
        cost, reply.request_id, answers, None, reply.sent, reply.request_json,
        reply.response_json,
    )  # fmt: skip
    # Keyed as the run's cache keys it (the file's version decides the body's byte order).
    cache.save(cache.key(body, occasion), attempt)


async def _ask(
    spec: ModelSpec,
    bodies: list[tuple[dict[str, Any], str]],
    concurrency: int,
    settings: RunSettings,
    alone: int,
) -> ProbeResult:
    """The first ``alone`` of ``bodies`` one at a time, then the rest at once."""
    # Built as a run at ``concurrency`` builds it: its description keys the request cache.
    backend = make_backend(spec, transport=spec.transport(concurrency))
    describe = backend.describe()
    price = run_price(spec, backend)
    try:
        cache = open_cache(describe, PROBE_RUN, settings.cache)
    except BaseException:
        await backend.aclose()
        raise
    where = str(describe.get("base_url") or "in process") + f" ({describe.get('wire', 'local')})"
    sent = (describe.get("params") or {}).get("api_key_set")
    key = "in process" if "wire" not in describe else "key accepted" if sent else "no key sent"
    latency: list[float] = []
    coverage: list[float] = []
    problems: list[str] = []
    served = None
    questions = parsed = refused = missing = 0

    async def ask(body: dict[str, Any], occasion: str) -> None:
        nonlocal served, questions, parsed, refused, missing
        t, started = time.time(), time.perf_counter()
        try:
            reply = await backend.answer(body)
        except AuthError as exc:
            problems.append(f"the key was refused: {exc}")
            return
        except BackendError as exc:
            problems.append(f"the request failed ({exc.kind}): {exc}")
            return
        took = time.perf_counter() - started
        served = reply.model or served
        questions += len(body["questions"])
        try:
            read = read_answers(body["questions"], reply.body)
        except BackendError as exc:
            problems.append(f"the answers do not parse: {exc}")
            return
        latency.append(took)
        parsed, refused = parsed + len(read.answers), refused + len(read.refused)
        if not read.refused:  # as a run's: refusals and partial answers are not stored
            _store(cache, price, (body, occasion, t, took), reply, read.answers)
        for answer in reply.body.get("answers", {}).values():
            if isinstance(answer, dict) and isinstance(answer.get("coverage"), int | float):
                coverage.append(float(answer["coverage"]))
                missing += bool(answer.get("missing"))

    timings: list[Timing] = []
    try:
        for body, occasion in bodies[:alone]:
            await ask(body, occasion)
            if problems:
                break
        alone_q = questions
        size = min(BURST, concurrency)
        for start in range(alone, len(bodies), size):  # the faster burst: the first warms up
            if problems:
                break
            before, started = questions, time.perf_counter()
            async with anyio.create_task_group() as group:
                for body, occasion in bodies[start : start + size]:
                    group.start_soon(ask, body, occasion)
            burst_s = time.perf_counter() - started
            timings.append(Timing(tuple(latency[:alone]), alone_q, burst_s, questions - before))
    finally:
        await backend.aclose()
        if cache is not None:
            cache.close()
    problem = problems[0] if problems else None
    if problem is None and not parsed:
        problem = "no question was answered (every one was refused)"
    # No burst (a suite of few jobs): the latency and the rounds bound the time alone.
    alone_only = Timing(tuple(latency[:alone]), alone_q)
    timing = None if problem else min(timings, key=Timing.per_question_s, default=alone_only)
    return ProbeResult(where, key, served, latency[:alone], questions, parsed, refused, coverage,
                       missing, problem, timing)  # fmt: skip


async def probe_async(
    suite: Suite,
    spec: ModelSpec,
    requests: int = 3,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    settings: RunSettings | None = None,
) -> ProbeResult:
    """Send the first requests of the suite's first ``requests`` jobs one at a time, then
    those of ``BURST`` more jobs at once (at most ``concurrency``), twice, each once, and
    say what came back and how long it took; the answers go into the request cache under
    ``settings.cache`` as a run's at ``concurrency`` would."""
    asks = first_requests(suite, spec.name, requests + 2 * min(BURST, concurrency))
    return await _ask(spec, asks, concurrency, settings or RunSettings(), requests)


probe = in_own_loop(probe_async)


def report(suite: Suite, spec: ModelSpec, seen: ProbeResult, concurrency: int) -> list[str]:
    """The probe's lines: what came back, then the whole suite's estimated cost and time."""
    lines = [f"probe: model {spec.name} at {seen.where}, suite {suite.name}"]
    if seen.latency_s:
        burst = seen.timing
        at_once = (
            ""
            if burst is None or not burst.burst_questions
            else f"; then {burst.burst_questions} questions at once: {1000 * burst.burst_s:.0f} ms"
        )
        lines.append(
            f"  reachable: yes; {seen.key}; served model: {seen.served or 'not named'}; "
            f"latency {1000 * median(seen.latency_s):.0f} ms a request alone (median of "
            f"{len(seen.latency_s)}){at_once}; {seen.questions} questions"
        )
        lines.append(
            f"  answers: {seen.parsed} of {seen.questions} parse"
            + (f", {seen.refused} refused" if seen.refused else "")
        )
    if seen.coverage:
        lines.append(
            f"  log-probabilities: yes; coverage (probability on the option tokens) mean "
            f"{fmean(seen.coverage):.3f}, min {min(seen.coverage):.3f}; answers with options "
            f"missing from the alternatives: {seen.missing} of {len(seen.coverage)}"
        )
    elif spec.wire == "openai-chat" and seen.parsed:
        lines.append("  log-probabilities: not reported in the answers")
    if seen.problem is not None:
        lines.append(f"  cannot run: {seen.problem}")
        return lines
    counts = count(suite, spec)
    price: DryPrice | None = dry_run_price(spec)
    calls = counts.exact_requests
    seconds = 0.0 if seen.timing is None else suite_seconds(seen.timing, counts, concurrency)
    cost = (
        "unknown (no price: set --price-per-million or a profile's price)"
        if price is None
        else f"about USD {counts.cost(price):.4f} ({price.source})"
    )
    lines.append(
        f"  whole suite (estimate): {calls:,} requests, {counts.http_calls:,} HTTP calls, "
        f"about {seconds:,.1f} s at concurrency {concurrency} (this latency and pace, no "
        f"retries); cost {cost}"
    )
    lines.append("  the suite can run")
    return lines
