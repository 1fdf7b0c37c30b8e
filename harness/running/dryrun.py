"""What a run would send and cost, per wire, without sending anything.

The exact path (an oracle run in process) gives the requests a run makes when every answer
is right; the decoders' dependency depths give the fewest and most. What goes over HTTP
depends on the wire: System One and Decisions send one HTTP call per request (every ready
question of a job batched), the chat wire one per question (``harness.backends.chat``).
Tokens are estimated at about four characters a token (labelled so): a chat completion
counts its messages, a Decisions request its translated body, System One its body; output
is one token per chat completion (``max_tokens: 1``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from harness.backends import IN_PROCESS, ModelSpec
from harness.protocol.cases import Suite
from harness.protocol.decoders import make_decoder
from harness.running.check import oracle_for
from harness.running.jobs import Job
from harness.wire import to_chat_requests, to_decisions_request
from harness.wire.answers import parse_answers

CHARS_PER_TOKEN = 4
ESTIMATE = f"estimate, ~{CHARS_PER_TOKEN} characters a token"
# The one published figure to compare with: the hosted tokenizer counts more.
PAPER_NOTE = (
    "  (the paper's affine run on hosted Jev billed 6,982,898 input tokens for 6,863 "
    "requests, about 1,017 per request: real counts can be 2-3x this estimate)"
)


@dataclass(frozen=True)
class DryPrice:
    """USD per million tokens in and out, and where the figure came from."""

    input_per_million: float
    output_per_million: float
    source: str


@dataclass(frozen=True)
class WireCounts:
    """What a run would send on one wire: requests (fewest, most, exact path), HTTP calls,
    and input and output tokens on the exact path."""

    wire: str  # systemone | openai-decisions | openai-chat | in process
    fewest: int
    most: int
    exact_requests: int
    http_calls: int  # on the exact path; 0 for a model answered in process
    input_tokens: int
    output_tokens: int
    questions: int  # on the exact path

    def cost(self, price: DryPrice) -> float:
        """USD of the exact path at ``price``."""
        return (
            self.input_tokens * price.input_per_million
            + self.output_tokens * price.output_per_million
        ) / 1e6


def dry_run_price(spec: ModelSpec) -> DryPrice | None:
    """The price a dry run shows: ``--price-per-million`` (or a profile's), free in-process
    models, the harness's table (hosted TypeSafe API), else the maintained table
    (``genai-prices``, when installed) for chat and Decisions models; None: unknown."""
    if spec.price_per_million is not None:
        output = spec.price_per_million_output or 0.0
        return DryPrice(spec.price_per_million, output, "--price-per-million (or the profile)")
    if spec.name in IN_PROCESS or spec.is_gguf:
        return DryPrice(0.0, 0.0, "answered in process: free")
    if spec.wire == "systemone":
        from harness.backends.pricing import price_for
        from harness.backends.systemone import DEFAULT_BASE_URL

        base = spec.base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
        price = price_for(spec.name, base)
        if price is None:
            return None
        source = "the price table (hosted TypeSafe API)"
        return DryPrice(price.input_per_million, price.output_per_million, source)
    from harness.backends.price_table import maintained_price
    from harness.backends.remote import OPENAI_BASE_URL, OPENAI_URL_VARIABLE

    found = maintained_price(
        spec.name, spec.base_url or os.environ.get(OPENAI_URL_VARIABLE) or OPENAI_BASE_URL
    )
    if found is None:
        return None
    return DryPrice(found.input_per_million, found.output_per_million, found.source)


def _tokens(size: int) -> int:
    return max(1, size // CHARS_PER_TOKEN)


def _chat_tokens(body: Mapping[str, Any], top_logprobs: int) -> tuple[int, int]:
    """HTTP calls and input tokens of one request on the chat wire (its messages' text)."""
    asked = to_chat_requests(body, top_logprobs=top_logprobs)
    tokens = 0
    for question in asked.values():
        messages = question.body.get("messages") or []
        tokens += sum(_tokens(len(str(m.get("content", ""))) + 4) for m in messages)
    return len(asked), tokens


def count(suite: Suite, spec: ModelSpec) -> WireCounts:
    """Requests, HTTP calls and tokens of ``suite`` on ``spec``'s wire (see the module)."""
    fewest = most = 0
    depth_cache: dict[tuple[object, str], tuple[int, int]] = {}
    for job_spec in suite.jobs():
        lows, highs = [], []
        for name in suite.decoders:
            key = (job_spec.case.grid, name)
            if key not in depth_cache:
                depth_cache[key] = make_decoder(
                    name, job_spec.case.grid, job_spec.case.subject
                ).depths()
            lows.append(depth_cache[key][0])
            highs.append(depth_cache[key][1])
        fewest += max(lows)
        most += max(highs)
    local = spec.name in IN_PROCESS or spec.is_gguf
    wire = "in process" if local else spec.wire
    oracle = oracle_for(suite)
    requests = calls = tokens_in = tokens_out = questions = 0
    for job_spec in suite.jobs():
        job = Job(job_spec, suite.decoders)
        while (step := job.next_request(spec.name)) is not None:
            body, qmap = step
            asked = len(body["questions"])
            questions += asked
            if wire == "openai-chat":
                sent, tokens = _chat_tokens(body, spec.top_logprobs)
                calls, tokens_in, tokens_out = calls + sent, tokens_in + tokens, tokens_out + sent
            else:
                sent_body = to_decisions_request(body) if wire == "openai-decisions" else body
                tokens_in += _tokens(len(orjson.dumps(sent_body)))
                calls += 0 if local else 1
            job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
            requests += 1
    return WireCounts(wire, fewest, most, requests, calls, tokens_in, tokens_out, questions)


def server_lines(spec: ModelSpec, environ: Mapping[str, str]) -> list[str]:
    """The server a served ``spec`` would call and whether its key's variable is set; a URL
    the run would refuse (``http.checked_url``) is refused here too, as a ``ConfigError``."""
    if spec.name in IN_PROCESS or spec.is_gguf:
        return ["server: none (answered in process)"]
    from harness.backends import server_of

    base, variable, hosted = server_of(spec, environ)
    where = "a hosted API" if hosted else "the server at --base-url (or the profile's)"
    if not environ.get(variable, "").strip():
        refused = hosted or spec.key_env is not None  # make_backend refuses both
        needed = "the run would refuse: it needs a key" if refused else "no key will be sent"
        key = f"key: ${variable} is not set ({needed})"
    else:
        key = f"key: ${variable} is set"
    return [f"server: {base} ({where}, wire {spec.wire})", key]


def describe(
    suite: Suite, spec: ModelSpec, price: DryPrice | None, counts: WireCounts | None = None
) -> list[str]:
    """The dry run's lines: jobs, requests, HTTP calls, tokens and cost on ``spec``'s wire
    (``counts``: ``count(suite, spec)`` when the caller has it)."""
    counts = counts or count(suite, spec)
    jobs = len(suite.jobs())
    per_request = counts.input_tokens / max(counts.exact_requests, 1)
    if counts.wire == "openai-chat":
        calls = (
            f"HTTP calls (openai-chat: one per question): {counts.http_calls:,} on the exact "
            f"path ({counts.questions / max(counts.exact_requests, 1):.1f} questions a request)"
        )
    elif counts.wire == "in process":
        calls = "HTTP calls: none (answered in process)"
    else:
        calls = (
            f"HTTP calls ({counts.wire}: one per request): {counts.http_calls:,} on the exact path"
        )
    if price is None:
        cost = "unknown (no price for this model; set --price-per-million"
        cost += ", or pip install genai-prices for chat and Decisions models)"
    else:
        low = counts.cost(price) * counts.fewest / max(counts.exact_requests, 1)
        high = counts.cost(price) * counts.most / max(counts.exact_requests, 1)
        cost = (
            f"USD {counts.cost(price):.4f} on the exact path ({low:.4f} to {high:.4f}); "
            f"price USD {price.input_per_million:g} in, {price.output_per_million:g} out per "
            f"million tokens: {price.source}"
        )
    return [
        f"dry run: nothing sent. suite {suite.name} (cases {suite.case_hash()[:12]}), "
        f"model {spec.name}, wire {counts.wire}",
        f"jobs: {jobs:,} ({len(suite.cases)} cases x {len(suite.conditions)} conditions x "
        f"{len(suite.orders)} orders x {suite.repeats} repeats); outputs: {jobs * len(suite.decoders):,}",
        f"requests: at least {counts.fewest:,}, at most {counts.most:,} "
        f"(exact path: {counts.exact_requests:,})",
        calls,
        f"input tokens ({ESTIMATE}): about {counts.input_tokens:,} on the exact path, "
        f"{per_request:,.0f} per request; output tokens: {counts.output_tokens:,}",
        *([PAPER_NOTE] if counts.wire == "systemone" else []),
        f"cost: {cost}",
    ]
