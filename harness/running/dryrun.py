"""What a run would cost, without sending anything."""

from __future__ import annotations

from harness.backends import IN_PROCESS, ModelSpec
from harness.backends.reading import usage_of
from harness.protocol.cases import Suite
from harness.protocol.decoders import make_decoder
from harness.running.check import oracle_for
from harness.running.jobs import Job
from harness.wire.answers import parse_answers


def dry_run_price(spec: ModelSpec) -> float | None:
    """USD per million input tokens for ``spec``: the override, free in-process models, or
    the table (hosted TypeSafe API only: ``harness.backends.pricing``)."""
    if spec.price_per_million is not None:
        return spec.price_per_million
    if spec.name in IN_PROCESS or spec.is_gguf:
        return 0.0
    if spec.wire != "systemone":
        return None  # the table prices no OpenAI-wire server
    import os

    from harness.backends.pricing import price_for
    from harness.backends.systemone import DEFAULT_BASE_URL

    base = spec.base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
    price = price_for(spec.name, base)
    return None if price is None else price.input_per_million


def describe(suite: Suite, model: str, price_per_million: float | None) -> list[str]:
    """Jobs, fewest and most requests (from dependency depths), and an input-token estimate."""
    fewest = most = 0
    depth_cache: dict[tuple[object, str], tuple[int, int]] = {}
    for spec in suite.jobs():
        lows, highs = [], []
        for name in suite.decoders:
            key = (spec.case.grid, name)
            if key not in depth_cache:
                depth_cache[key] = make_decoder(name, spec.case.grid, spec.case.subject).depths()
            lows.append(depth_cache[key][0])
            highs.append(depth_cache[key][1])
        fewest += max(lows)
        most += max(highs)
    # Token estimate: the exact path (an oracle run in process), about four characters a token.
    oracle = oracle_for(suite)
    exact_requests = tokens = 0
    for spec in suite.jobs():
        job = Job(spec, suite.decoders)
        while (step := job.next_request(model)) is not None:
            body, qmap = step
            tokens += usage_of(body)["input_tokens"]
            job.apply(qmap, parse_answers(body["questions"], oracle.respond(body)))
            exact_requests += 1
    per_request = tokens / max(exact_requests, 1)
    if price_per_million is None:
        cost = "unknown (no price for this model; set --price-per-million)"
    else:
        low, high = fewest * per_request, most * per_request
        cost = f"USD {low * price_per_million / 1e6:.4f} to {high * price_per_million / 1e6:.4f}"
    jobs = len(suite.jobs())
    return [
        f"dry run: nothing sent. suite {suite.name} (cases {suite.case_hash()[:12]}), model {model}",
        f"jobs: {jobs:,} ({len(suite.cases)} cases x {len(suite.conditions)} conditions x "
        f"{len(suite.orders)} orders x {suite.repeats} repeats); outputs: {jobs * len(suite.decoders):,}",
        f"requests: at least {fewest:,}, at most {most:,} (exact path: {exact_requests:,})",
        f"input tokens (estimate, ~4 characters a token): about {tokens:,} on the exact path, "
        f"{per_request:,.0f} per request",
        # The one published figure to compare with: the hosted tokenizer counts more.
        "  (the paper's affine run on hosted Jev billed 6,982,898 input tokens for 6,863 "
        "requests, about 1,017 per request: real counts can be 2-3x this estimate)",
        f"cost: {cost}",
    ]
