"""serve-sim on each wire format: the client-side translation, answered over loopback and
translated back, gives the in-process sim's answer; faults, keys and codings on every wire."""

from __future__ import annotations

import functools
import gzip
import json
from typing import Any

import httpx
import orjson
import pytest

from harness.backends.sim import SimModel
from harness.errors import BackendError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import FaultSpec, ServerConfig, serve_sim_in_background
from harness.serve.faults import KINDS
from harness.wire import (
    ROUTES,
    WireError,
    from_chat_completions,
    from_decisions_response,
    is_refusal,
    to_chat_requests,
    to_decisions_request,
    wire_usage,
)
from harness.wire.answers import parse_answers

MIXED = {
    "model": "sim",
    "state": {"expression": "(3 + 4) * 2 + (1)"},
    "questions": {
        "small": {"type": "noul", "instructions": "Is x at most 20?",
                  "criteria": {"false": "x > 20", "true": "x <= 20"}},
        "spam": {"type": "noul", "instructions": "Is this message spam?"},
        "size": {"type": "score", "instructions": "How large is x?",
                 "criteria": ["0 <= x < 10", "10 <= x < 20", "20 <= x < 30"]},
        "tone": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]},
    },
}  # fmt: skip


@functools.cache
def suite_bodies() -> list[dict[str, Any]]:
    """A first request of every decoder of every suite (some jobs each), and the mixed body."""
    bodies = [MIXED]
    for name in ("affine", "exploratory", "historical"):
        suite = load_suite(name)
        specs = suite.jobs()
        for decoder in suite.decoders:
            for spec in specs[:: max(1, len(specs) // 3)][:3]:
                step = Job(spec, (decoder,)).next_request("sim")
                if step is not None:
                    bodies.append(step[0])
    return bodies


async def ask_decisions(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    reply = await client.post(ROUTES["openai-decisions"], json=to_decisions_request(body))
    assert reply.status_code == 200, reply.text
    return from_decisions_response(body, reply.json())


async def ask_chat(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    asked = to_chat_requests(body)
    completions = {}
    for qid, question in asked.items():
        reply = await client.post(ROUTES["openai-chat"], json=question.body)
        assert reply.status_code == 200, reply.text
        completions[qid] = reply.json()
    return from_chat_completions(body, asked, completions)


async def test_decisions_wire_gives_the_in_process_answers() -> None:
    sim = SimModel()
    async with (
        serve_sim_in_background(ServerConfig(port=0, wire="openai-decisions")) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for body in suite_bodies():
            # The sim's answers; the usage of the Decisions body it received (a server bills
            # what it read), not of the System One body the sim answers.
            billed = wire_usage("openai-decisions", to_decisions_request(body))
            assert await ask_decisions(client, body) == {**sim.respond(body), "usage": billed}


def assert_same_reading(got: dict[str, Any], expected: dict[str, Any]) -> None:
    """A chat answer agrees with the sim's: same choice, the distribution over the returned
    options renormalised, the missing options the least probable ones."""
    if expected["type"] == "noul":
        assert got["noul"] == pytest.approx(expected["noul"], abs=1e-12)
        return
    probabilities = expected["probabilities"]
    returned = [label for label in probabilities if label not in got["missing"]]
    mass = sum(probabilities[label] for label in returned)
    assert got["coverage"] == pytest.approx(mass / sum(probabilities.values()))
    for label in returned:
        assert got["probabilities"][label] == pytest.approx(probabilities[label] / mass)
    if got["missing"]:
        assert len(returned) == 20  # OpenAI's cap: the rest is unknown, not zero
    if expected["type"] == "score":
        assert got["score"] == pytest.approx(expected["score"], abs=0.01)  # the sim rounds
    else:
        assert got["choice"] == expected["choice"]


async def test_chat_wire_gives_the_in_process_answers() -> None:
    sim = SimModel()
    async with (
        serve_sim_in_background(ServerConfig(port=0, wire="openai-chat")) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for body in suite_bodies():
            expected = sim.respond(body)
            got = await ask_chat(client, body)
            assert list(got["answers"]) == list(expected["answers"])
            for qid, answer in got["answers"].items():
                assert_same_reading(answer, expected["answers"][qid])


CHOICES = Job(load_suite("affine").jobs()[5], ("tree10",)).next_request("sim")[0]


async def read_once(client: httpx.AsyncClient, wire: str) -> Any:
    """One exchange on ``wire`` read as a client would; raises on any detectable failure."""
    if wire == "openai-chat":
        (question,) = to_chat_requests(CHOICES).values()
        reply = await client.post(ROUTES[wire], json=question.body)
        reply.raise_for_status()
        got = from_chat_completions(
            CHOICES, {question.qid: question}, {question.qid: json.loads(reply.content)}
        )
        answer = got["answers"][question.qid]
        if is_refusal(answer):
            raise WireError(answer["refusal"])
        return answer["choice"]
    reply = await client.post(ROUTES[wire], json=to_decisions_request(CHOICES))
    reply.raise_for_status()
    got = from_decisions_response(CHOICES, json.loads(reply.content))
    return parse_answers(CHOICES["questions"], got)["q1"].choice


@pytest.mark.parametrize("wire", ["openai-decisions", "openai-chat"])
@pytest.mark.parametrize("kind", KINDS)
async def test_faults_apply_on_every_wire(wire: str, kind: str) -> None:
    # A slow reply never comes in the test's life, so the first client's timeout is a fault
    # however busy the machine; every other fault comes back however long it takes, and the
    # second client waits as long as an answer takes (a minute: a hang fails, not stalls).
    config = ServerConfig(port=0, wire=wire, faults=FaultSpec.parse(f"{kind}=1"), slow_s=3600,
                          max_faults_per_body=1)  # fmt: skip
    right = SimModel().respond(CHOICES)["answers"]["q1"]["choice"]
    failures = (httpx.HTTPError, json.JSONDecodeError, BackendError, WireError)
    async with serve_sim_in_background(config) as url:
        async with httpx.AsyncClient(base_url=url, timeout=3 if kind == "slow" else 60) as client:
            with pytest.raises(failures):
                await read_once(client, wire)
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            assert await read_once(client, wire) == right


@pytest.mark.parametrize("wire", ["systemone", "openai-decisions", "openai-chat"])
async def test_keys_models_and_codings_on_every_wire(wire: str) -> None:
    key = "nj-wire-key-42"
    body = {"systemone": CHOICES, "openai-decisions": to_decisions_request(CHOICES)}.get(
        wire, next(iter(to_chat_requests(CHOICES).values())).body if wire == "openai-chat" else None
    )
    raw = orjson.dumps(body)
    auth = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    async with (
        serve_sim_in_background(ServerConfig(port=0, wire=wire, key=key)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        route = ROUTES[wire]
        refused = await client.post(route, content=raw, headers={"authorization": "Bearer nope"})
        assert refused.status_code == 401 and key not in refused.text
        assert ("error" if wire != "systemone" else "detail") in refused.json()
        assert (await client.get("/v1/models")).status_code == 401
        models = await client.get("/v1/models", headers=auth)
        assert (
            models.json()["models"][0]["name"] == "sim" and models.json()["data"][0]["id"] == "sim"
        )
        plain = await client.post(route, content=raw, headers=auth)
        zipped = await client.post(
            route, content=gzip.compress(raw), headers={**auth, "content-encoding": "gzip"}
        )
        assert plain.status_code == zipped.status_code == 200
        assert plain.json() == zipped.json()
        unknown = await client.post(route, content=raw, headers={**auth, "content-encoding": "br"})
        assert unknown.status_code == 415 and "'br'" in unknown.text
        other = next(r for r in ROUTES.values() if r != route)
        assert (await client.post(other, content=raw, headers=auth)).status_code == 404
        health = await client.get("/healthz")
        assert health.json()["wire"] == wire


@pytest.mark.parametrize("wire", ["openai-decisions", "openai-chat"])
async def test_requests_other_wires_cannot_read_get_an_openai_style_400(wire: str) -> None:
    async with (
        serve_sim_in_background(ServerConfig(port=0, wire=wire)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for content in (b"{not json", orjson.dumps(CHOICES)):
            reply = await client.post(ROUTES[wire], content=content)
            assert reply.status_code == 400
            assert reply.json()["error"]["type"] == "invalid_request_error"
