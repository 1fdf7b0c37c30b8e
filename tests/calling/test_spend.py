"""Spend caps over HTTP with the price table: held per attempt, never overshot (issue 10).

The table prices the hosted API only (``harness.backends.pricing``); here the loopback
serve-sim stands in for it, so that jev-sim is priced by the table as hosted Jev would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

import harness.backends.pricing
from harness import Limits, Reply, load_suite, run
from harness.backends.sim import SimModel
from harness.serve import ServerConfig, serve_sim_in_thread
from harness.serve.faults import FaultSpec
from tests.runhelpers import answered, cli, final_outputs, records

SMALL = ["--param", "per_operator=2"]  # 128 jobs


@pytest.fixture(autouse=True)
def loopback_is_hosted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The price table applies to the loopback server as to the hosted API.

    The key check shares that definition of "hosted", so a placeholder key is set too (the
    loopback server asks for none).
    """
    monkeypatch.setattr(harness.backends.pricing, "is_hosted", lambda url: True)
    monkeypatch.setenv("TYPESAFE_API_KEY", "placeholder-not-a-key")


def spent(folder: Path) -> tuple[float, float]:
    """(recorded total, the most one attempt cost) from requests.jsonl."""
    costs = [r["cost_usd"] or 0.0 for r in records(folder / "requests.jsonl")]
    return sum(costs), max(costs)


def capped_run(url: str, folder: Path, cap: float, *extra: str, params: list[str] = SMALL) -> int:
    # jev-sim is priced by the table (hosted Jev, USD 0.042 per million input tokens): no
    # --price-per-million, as in the run the issue measured at 8.9 times the cap.
    return cli(
        "run", *params, "--model", "jev-sim", "--base-url", url, "--run", str(folder),
        "--no-progress", "--concurrency", "64", "--max-cost-usd", str(cap), *extra,
    )  # fmt: skip


def test_a_cap_at_concurrency_64_with_the_table_price_is_not_overshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = 0.0004  # about 25 of these requests: far fewer than the 64 in flight at once
    folder = tmp_path / "capped"
    with serve_sim_in_thread(ServerConfig(port=0, latency_ms=20)) as url:
        assert capped_run(url, folder, cap) == 1
        total, _ = spent(folder)
        assert 0 < total <= cap  # each attempt held one token per byte until answered
        assert "spend cap reached" in capsys.readouterr().out

        # A resume with the same cap cannot fit one more request: it sends nothing and
        # says so in one line.
        before = (folder / "requests.jsonl").read_bytes()
        assert cli("resume", str(folder), "--no-progress") == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "spend cap reached" in err[0] and "nothing was sent" in err[0]
        assert (folder / "requests.jsonl").read_bytes() == before

        # Raising the cap continues, still within it, and never pays twice.
        assert cli("resume", str(folder), "--no-progress", "--max-cost-usd", str(3 * cap)) == 1
        assert spent(folder)[0] <= 3 * cap and max(answered(folder).values()) == 1


def test_a_cap_without_any_price_is_refused_before_a_folder_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "unpriced"
    status = cli(
        "run", *SMALL, "--model", "my-model", "--base-url", "http://127.0.0.1:9", "--run",
        str(folder), "--no-progress", "--max-cost-usd", "1",
    )  # fmt: skip
    assert status == 2 and not folder.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--price-per-million" in err[0] and "'my-model'" in err[0]


def test_billed_malformed_replies_count_toward_the_cap_and_the_totals(tmp_path: Path) -> None:
    # A 200 whose answer names a label outside the criteria is rejected but billed.
    config = ServerConfig(port=0, faults=FaultSpec.parse("badlabel=0.05"), fault_seed=5)
    folder = tmp_path / "billed"
    with serve_sim_in_thread(config) as url:
        assert capped_run(url, folder, 1.0, params=["--param", "per_operator=1"]) == 0
    lines = records(folder / "requests.jsonl")
    rejected = [r for r in lines if r["error"] and r["error"]["kind"] == "malformed"]
    assert rejected and all(r["cost_usd"] and r["usage"] for r in rejected)
    assert final_outputs(folder)  # and the run itself finished


@pytest.mark.soak
def test_caps_on_the_full_suite_hold_from_start_and_on_every_resume(tmp_path: Path) -> None:
    folder = tmp_path / "full"
    with serve_sim_in_thread(ServerConfig(port=0, latency_ms=20)) as url:
        args = ["--model", "jev-sim", "--base-url", url, "--concurrency", "128"]
        assert (
            cli("run", *args, "--run", str(folder), "--no-progress", "--max-cost-usd", "0.01") == 1
        )
        assert spent(folder)[0] <= 0.01
        for cap in (0.02, 0.05, 0.08):
            cli("resume", str(folder), "--no-progress", "--max-cost-usd", str(cap))
            assert spent(folder)[0] <= cap
            assert cli("resume", str(folder), "--no-progress") in (0, 1)  # same cap
            assert spent(folder)[0] <= cap
    assert max(answered(folder).values()) == 1


class BilledLikeHostedJev:
    """The sim behind 10 ms of latency, billing 0.66 input tokens per body byte: what the
    paper's affine run on hosted Jev was billed (1,017 tokens for 1,533-byte bodies)."""

    name, simulated = "jev-billed", False
    price_per_million = 0.042

    def __init__(self) -> None:
        self.sim = SimModel()

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        await anyio.sleep(0.01)
        response = self.sim.respond(body)
        tokens = int(0.66 * len(orjson.dumps(body)))
        cost = tokens * self.price_per_million / 1e6
        return Reply(response, model="jev-billed", usage={"input_tokens": tokens}, cost_usd=cost)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": "billed", "simulated": False, "params": {}}

    async def aclose(self) -> None:
        pass


def test_a_server_billing_more_tokens_per_byte_still_cannot_overshoot(tmp_path: Path) -> None:
    # Reserving "about three bytes a token" held a third of what each request was billed.
    suite = load_suite("affine", params={"per_operator": "2"})
    cap = 0.0005
    folder = tmp_path / "billed"
    result = run(suite, BilledLikeHostedJev(), Limits(64, max_cost_usd=cap), folder=folder)
    assert result.stopped and "spend cap reached" in result.stopped
    total, one = spent(folder)
    assert total <= cap, f"USD {total:.6f} over a cap of {cap}: {(total - cap) / one:.1f} requests"
