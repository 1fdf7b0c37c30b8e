"""serve-sim against the official ``typesafe-sdk`` client, sync and async, as users run it.

The SDK compresses request bodies of 1 KiB or more with zstd when zstd is importable (the
test extra installs ``typesafe-sdk[zstd]``); each test checks that the bodies really went
compressed, so a server that only reads plain JSON cannot pass.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from typesafe_sdk import (
    AsyncTypeSafeClient,
    Noul,
    RetryPolicy,
    Score,
    TypeSafeAuthenticationError,
    TypeSafeClient,
)

from harness.backends.oracle import Oracle
from harness.backends.sim import SimModel
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import ServerConfig, serve_sim_in_background, serve_sim_in_thread

KEY = "nj-sdk-test-key-0123456789"
# A 100-option direct question: several KiB, so the SDK compresses it.
BODY = Job(load_suite("affine").jobs()[7], ("direct",)).next_request("sim")[0]
MIXED = {
    "model": "sim",
    "state": {"expression": "(3 + 4) * 2 + (1)"},
    "questions": {
        "small": {"type": "noul", "instructions": "Is x at most 20?",
                  "criteria": {"true": "x <= 20", "false": "x > 20"}},
        "spam": {"type": "noul", "instructions": "Is this message spam?"},
        "size": {"type": "score", "instructions": "How large is x?",
                 "criteria": ["0 <= x < 10", "10 <= x < 20", "20 <= x < 30"]},
        "urgency": {"type": "score", "instructions": "How urgent is this?",
                    "criteria": ["Can wait", "Needs attention this week", "Needs attention today"]},
    },
}  # fmt: skip
NO_RETRY = RetryPolicy(max_retries=0)


def dumped(response: Any) -> dict[str, Any]:
    """The SDK's typed answers as wire dicts (score maps keyed by strings again)."""
    out = {}
    for qid, answer in response.answers.items():
        raw = answer.model_dump()
        for key in ("legend", "probabilities"):
            if isinstance(raw.get(key), dict):
                raw[key] = {str(k): v for k, v in raw[key].items()}
        out[qid] = raw
    return out


class Encodings:
    """Records the Content-Encoding of every request the SDK sends."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def __call__(self, request: httpx2.Request) -> None:
        if request.method == "POST":
            self.seen.append(request.headers.get("content-encoding"))

    async def hook(self, request: httpx2.Request) -> None:
        self(request)


def test_sync_sdk_with_zstd_key_models_noul_and_score() -> None:
    encodings = Encodings()
    config = ServerConfig(port=0, key=KEY)
    with serve_sim_in_thread(config) as url:
        http = httpx2.Client(event_hooks={"request": [encodings]})
        with TypeSafeClient(api_key=KEY, base_url=url, http_client=http, retry=NO_RETRY) as sdk:
            answered = sdk.system_one(BODY["state"], BODY["questions"], model="sim")
            assert dumped(answered) == SimModel().respond(BODY)["answers"]
            assert answered.model == "sim" and answered.usage.input_tokens
            mixed = sdk.system_one(MIXED["state"], MIXED["questions"], model="sim")
            assert dumped(mixed) == SimModel().respond(MIXED)["answers"]
            assert 0.0 <= mixed.nouls["small"].noul <= 1.0
            assert mixed.scores["urgency"].legend[2] == "Needs attention today"
            listed = sdk.models.list()
            assert [m.name for m in listed.models] == ["sim"]
        with (
            TypeSafeClient(api_key="nj-wrong-key", base_url=url, retry=NO_RETRY) as wrong,
            pytest.raises(TypeSafeAuthenticationError) as refused,
        ):
            wrong.system_one(BODY["state"], BODY["questions"], model="sim")
    assert refused.value.status == 401
    assert KEY not in str(refused.value)
    assert encodings.seen[0] == "zstd"


async def test_async_sdk_with_zstd_key_models_noul_and_score() -> None:
    encodings = Encodings()
    config = ServerConfig(port=0, key=KEY, model="oracle")
    async with serve_sim_in_background(config) as url:
        http = httpx2.AsyncClient(event_hooks={"request": [encodings.hook]})
        async with AsyncTypeSafeClient(
            api_key=KEY, base_url=url, http_client=http, retry=NO_RETRY
        ) as sdk:
            answered = await sdk.system_one(BODY["state"], BODY["questions"], model="oracle")
            assert dumped(answered) == Oracle().respond(BODY)["answers"]
            questions = {
                "small": Noul(instructions="Is x at most 20?",
                              criteria={"true": "x <= 20", "false": "x > 20"}),
                "size": Score(instructions="How large is x?",
                              criteria=["0 <= x < 10", "10 <= x < 20", "20 <= x < 30"]),
            }  # fmt: skip
            typed = await sdk.system_one(MIXED["state"], questions, model="oracle")
            assert typed.nouls["small"].noul == 1.0  # x = 15
            assert typed.scores["size"].score == 1.0 and typed.scores["size"].probabilities[1] == 1
            listed = await sdk.models.list()
            assert [m.name for m in listed.models] == ["oracle"]
        async with AsyncTypeSafeClient(api_key="nj-wrong", base_url=url, retry=NO_RETRY) as wrong:
            with pytest.raises(TypeSafeAuthenticationError):
                await wrong.models.list()
    assert encodings.seen[0] == "zstd"
