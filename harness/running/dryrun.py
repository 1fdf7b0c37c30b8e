"""What a run would send and cost, per wire, without sending anything (docs/usage.md).

The exact path (an oracle run in process) gives the requests a run makes when every answer
is right; the decoders' dependency depths give the fewest and most. HTTP calls and tokens
follow the wire (``harness.backends.chat``: one call per question on the chat wire) and the
rule serve-sim bills by (``harness.wire.usage``), so a run against serve-sim records what
this estimates; hosted Jev's tokenizer counts more, and its measured figure is used for it
(``harness.backends.pricing.HOSTED_JEV_CHARS_PER_TOKEN``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.backends import IN_PROCESS, ModelSpec, server_of
from harness.backends.pricing import HOSTED_JEV_CHARS_PER_TOKEN, Price, chars_per_token, price_for
from harness.protocol.cases import Suite
from harness.protocol.decoders import make_decoder
from harness.running.check import oracle_for
from harness.running.jobs import Job
from harness.wire import to_chat_requests, to_decisions_request, wire_usage
from harness.wire.answers import parse_answers
from harness.wire.usage import CHARS_PER_TOKEN

# Where hosted Jev's characters a token come from (the one published bill).
PAPER_NOTE = (
    "  (hosted Jev: the paper's affine run billed 6,982,898 input tokens for 6,863 requests, "
    "about 1,017 per request; counted here at that bill's characters a token)"
)


@dataclass(frozen=True)
class DryPrice(Price):
    """USD per million tokens in and out (``Price``), and where the figure came from."""

    source: str = ""


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
    rounds: int = 0  # the most requests one job makes on the exact path (each waits for the last)
    chars_per_token: float = CHARS_PER_TOKEN  # the input tokens' rule (hosted Jev's own)

    def cost(self, price: DryPrice) -> float:
        """USD of the exact path at ``price`` (``Price.cost``: the run's own formula)."""
        return (
            price.cost({"input_tokens": self.input_tokens, "output_tokens": self.output_tokens})
            or 0.0
        )


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
        price = price_for(spec.name, server_of(spec, os.environ)[0])
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


def _sent(wire: str, body: dict[str, Any], top_logprobs: int) -> list[dict[str, Any]]:
    """The HTTP bodies one request goes out as on ``wire`` (in process: the request)."""
    if wire == "openai-chat":
        return [q.body for q in to_chat_requests(body, top_logprobs=top_logprobs).values()]
    return [to_decisions_request(body) if wire == "openai-decisions" else body]


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
    per_token = float(CHARS_PER_TOKEN)
    if wire == "systemone":
        per_token = chars_per_token(spec.name, server_of(spec, os.environ)[0])
    oracle = oracle_for(suite)
    requests = calls = tokens_in = tokens_out = questions = rounds = 0
    for job_spec in suite.jobs():
        job = Job(job_spec, suite.decoders)
        made = 0
        while (step := job.next_request(spec.name)) is not None:
            body, qmap = step
            questions += len(body["questions"])
            sent = _sent(wire, body, spec.top_logprobs)
            calls += 0 if local else len(sent)
            for one in sent:
                used = wire_usage(spec.wire if not local else "systemone", one, per_token)
                tokens_in += used["input_tokens"]
                tokens_out += used["output_tokens"]
            job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
            requests += 1
            made += 1
        rounds = max(rounds, made)
    return WireCounts(
        wire, fewest, most, requests, calls, tokens_in, tokens_out, questions, rounds, per_token
    )


def server_lines(spec: ModelSpec, environ: Mapping[str, str]) -> list[str]:
    """The server a served ``spec`` would call and whether its key's variable is set; a URL
    the run would refuse (``http.checked_url``) is refused here too, as a ``ConfigError``."""
    if spec.name in IN_PROCESS or spec.is_gguf:
        return ["server: none (answered in process)"]
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
        f"input tokens (estimate, ~{counts.chars_per_token:g} characters a token): about "
        f"{counts.input_tokens:,} on the exact path, {per_request:,.0f} per request; "
        f"output tokens: {counts.output_tokens:,}",
        *([PAPER_NOTE] if counts.chars_per_token == HOSTED_JEV_CHARS_PER_TOKEN else []),
        f"cost: {cost}",
    ]
