"""``probe``: one look at a model before paying for a suite.

A handful of the suite's first requests, each sent once through the model's wire: is the
server reachable, is the key accepted, which model answers, how long it takes, whether the
answers parse, and on the chat wire whether log-probabilities come back and how much
probability falls on the option tokens (coverage). Then what the whole suite would cost
and take at the configured concurrency (the dry run's counts, ``harness.running.dryrun``).
Nothing is written into a run folder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from harness.backends import ModelSpec, make_backend
from harness.errors import AuthError, BackendError
from harness.protocol.cases import Suite
from harness.running.dryrun import DryPrice, count, dry_run_price
from harness.running.jobs import Job
from harness.running.session import in_own_loop
from harness.wire.answers import read_answers


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


def first_requests(suite: Suite, model: str, requests: int) -> list[dict[str, Any]]:
    """The first round's request of each of the suite's first ``requests`` jobs."""
    bodies = []
    for spec in suite.jobs()[:requests]:
        step = Job(spec, suite.decoders).next_request(model)
        if step is not None:
            bodies.append(step[0])
    return bodies


async def _ask(spec: ModelSpec, bodies: list[dict[str, Any]]) -> ProbeResult:
    backend = make_backend(spec)
    describe = backend.describe()
    where = str(describe.get("base_url") or "in process") + f" ({describe.get('wire', 'local')})"
    sent = (describe.get("params") or {}).get("api_key_set")
    key = "in process" if "wire" not in describe else "key accepted" if sent else "no key sent"
    latency: list[float] = []
    coverage: list[float] = []
    served = None
    questions = parsed = refused = missing = 0
    try:
        for body in bodies:
            started = time.perf_counter()
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
            for answer in reply.body.get("answers", {}).values():
                if isinstance(answer, dict) and isinstance(answer.get("coverage"), int | float):
                    coverage.append(float(answer["coverage"]))
                    missing += bool(answer.get("missing"))
    finally:
        await backend.aclose()
    problem = None if parsed else "no question was answered (every one was refused)"
    return ProbeResult(where, key, served, latency, questions, parsed, refused, coverage, missing,
                       problem)  # fmt: skip


async def probe_async(suite: Suite, spec: ModelSpec, requests: int = 3) -> ProbeResult:
    """Send the suite's first ``requests`` requests once each and say what came back."""
    return await _ask(spec, first_requests(suite, spec.name, requests))


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
