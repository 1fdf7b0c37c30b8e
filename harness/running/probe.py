"""``probe``: one look at a model before paying for a suite.

A handful of the suite's first requests, each sent once through the model's wire: is the
server reachable, is the key accepted, which model answers, how long it takes, whether the
answers parse, and on the chat wire whether log-probabilities come back and how much
probability falls on the option tokens (coverage). Then what the whole suite would cost
and take at the configured concurrency (the dry run's counts, ``harness.running.dryrun``).
Nothing is written into a run folder; each answered exchange goes into the request cache as a
run's would (keyed by the same model spec, job and round), so a run of the same model at the
same concurrency does not pay for those requests again. The probe itself always asks live.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from harness.backends import ModelSpec, Reply, make_backend
from harness.backends.base import DEFAULT_CONCURRENCY
from harness.cache import RequestCache, cache_key, open_cache
from harness.calling.attempt import Attempt
from harness.errors import AuthError, BackendError
from harness.protocol.cases import Suite
from harness.running.dryrun import DryPrice, count, dry_run_price
from harness.running.jobs import Job
from harness.running.session import in_own_loop
from harness.running.settings import RunSettings
from harness.wire.answers import read_answers

PROBE_RUN = "probe"  # the run an entry the probe stored names as the one that paid


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
    price: float | None,
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
        cost = (usage.get("input_tokens", 0) if usage else 0) * price / 1e6
    attempt = Attempt(
        1, t, latency_s * 1000.0, reply.status, None, None, reply.body, reply.model, usage,
        cost, reply.request_id, answers, None, reply.sent, reply.request_json,
        reply.response_json,
    )  # fmt: skip
    # Keyed as the run's cache keys it (the file's version decides the body's byte order).
    cache.save(cache_key(cache.spec, body, occasion, cache.store.version), attempt)


async def _ask(
    spec: ModelSpec,
    bodies: list[tuple[dict[str, Any], str]],
    concurrency: int,
    settings: RunSettings,
) -> ProbeResult:
    # Built as a run at ``concurrency`` builds it: its description keys the request cache.
    backend = make_backend(spec, transport=spec.transport(concurrency))
    describe = backend.describe()
    price = spec.price_per_million or backend.price_per_million
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
    served = None
    questions = parsed = refused = missing = 0
    try:
        for body, occasion in bodies:
            t, started = time.time(), time.perf_counter()
            try:
                reply = await backend.answer(body)
            except AuthError as exc:
                return ProbeResult(where, key, served, latency, questions, parsed, refused, coverage,
                                   missing, f"the key was refused: {exc}")  # fmt: skip
            except BackendError as exc:
                return ProbeResult(where, key, served, latency, questions, parsed, refused, coverage,
                                   missing, f"the request failed ({exc.kind}): {exc}")  # fmt: skip
            latency.append(time.perf_counter() - started)
            served = reply.model or served
            questions += len(body["questions"])
            try:
                read = read_answers(body["questions"], reply.body)
            except BackendError as exc:
                return ProbeResult(where, key, served, latency, questions, parsed, refused, coverage,
                                   missing, f"the answers do not parse: {exc}")  # fmt: skip
            parsed, refused = parsed + len(read.answers), refused + len(read.refused)
            if not read.refused:  # as a run's: refusals and partial answers are not stored
                asked = (body, occasion, t, latency[-1])
                _store(cache, price, asked, reply, read.answers)
            for answer in reply.body.get("answers", {}).values():
                if isinstance(answer, dict) and isinstance(answer.get("coverage"), int | float):
                    coverage.append(float(answer["coverage"]))
                    missing += bool(answer.get("missing"))
    finally:
        await backend.aclose()
        if cache is not None:
            cache.close()
    problem = None if parsed else "no question was answered (every one was refused)"
    return ProbeResult(where, key, served, latency, questions, parsed, refused, coverage, missing,
                       problem)  # fmt: skip


async def probe_async(
    suite: Suite,
    spec: ModelSpec,
    requests: int = 3,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    settings: RunSettings | None = None,
) -> ProbeResult:
    """Send the suite's first ``requests`` requests once each and say what came back; the
    answers go into the request cache under ``settings.cache`` as a run's at
    ``concurrency`` would."""
    asks = first_requests(suite, spec.name, requests)
    return await _ask(spec, asks, concurrency, settings or RunSettings())


probe = in_own_loop(probe_async)


def report(suite: Suite, spec: ModelSpec, seen: ProbeResult, concurrency: int) -> list[str]:
    """The probe's lines: what came back, then the whole suite's estimated cost and time."""
    lines = [f"probe: model {spec.name} at {seen.where}, suite {suite.name}"]
    if seen.latency_s:
        lines.append(
            f"  reachable: yes; {seen.key}; served model: {seen.served or 'not named'}; "
            f"latency {1000 * fmean(seen.latency_s):.0f} ms a request "
            f"(mean of {len(seen.latency_s)}, {seen.questions} questions)"
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
    seconds = fmean(seen.latency_s) * calls / max(1, concurrency) if seen.latency_s else 0.0
    cost = (
        "unknown (no price: set --price-per-million or a profile's price)"
        if price is None
        else f"about USD {counts.cost(price):.4f} ({price.source})"
    )
    lines.append(
        f"  whole suite (estimate): {calls:,} requests, {counts.http_calls:,} HTTP calls, "
        f"about {seconds:,.0f} s at concurrency {concurrency} (this latency, no retries); "
        f"cost {cost}"
    )
    lines.append("  the suite can run")
    return lines
