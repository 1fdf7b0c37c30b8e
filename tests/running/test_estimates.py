"""The dry run's tokens and cost are what the run then records, on every wire (issue 43 item 8).

Each wire: the dry run's estimate, then the same suite run against serve-sim on loopback
(the sim: its answers, unlike the oracle's, sometimes take the decoders off the exact path),
and the run's recorded totals within 10% of the estimate. serve-sim bills what it received
in its own wire's shape (``harness.wire.usage``): a chat request by its messages, a Decisions
request by its Decisions body. The hosted-Jev dry run prices the tokens its footnote says
hosted Jev bills.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.backends.pricing import JEV_INPUT_USD_PER_MILLION
from harness.serve import ServerConfig
from runfolder import read_totals
from tests.counting import counting_server
from tests.runhelpers import SMALL, cli

PRICE = ["--price-per-million", "1", "--price-per-million-output", "2"]


def dry(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, float]:
    """The dry run's exact-path input and output tokens and cost, as printed."""
    assert cli("run", *SMALL, "--dry-run", *args) == 0
    out = capsys.readouterr().out
    tokens = re.search(r"input tokens \(.*\): about ([\d,]+) on the exact path", out)
    output = re.search(r"output tokens: ([\d,]+)", out)
    cost = re.search(r"cost: USD ([\d.]+) on the exact path", out)
    assert tokens and output and cost, out
    return {
        "input_tokens": int(tokens.group(1).replace(",", "")),
        "output_tokens": int(output.group(1).replace(",", "")),
        "cost_usd": float(cost.group(1)),
    }


@pytest.mark.parametrize("wire", ["systemone", "openai-decisions", "openai-chat", "in process"])
def test_the_dry_runs_tokens_and_cost_are_what_the_run_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wire: str
) -> None:
    with counting_server(ServerConfig(port=0, wire=wire.replace("in process", "systemone"))) as (
        url,
        _,
    ):
        if wire == "in process":
            model = ["--model", "sim", "--workers", "1"]
        else:
            model = ["--model", "jev-sim", "--wire", wire, "--base-url", url]
        estimate = dry(capsys, *model, *PRICE)
        folder = tmp_path / "run"
        common = ["--no-progress", "--cache", "off", "--run", str(folder)]
        assert cli("run", *SMALL, *model, *PRICE, *common) == 0
    recorded = read_totals(folder)
    assert recorded is not None
    for key, estimated in estimate.items():
        assert recorded[key] == pytest.approx(estimated, rel=0.10), (key, estimate, recorded)  # type: ignore[literal-required]


def test_the_hosted_jev_dry_run_prices_what_its_footnote_says_hosted_jev_bills(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the whole affine suite, the paper's: the same requests as the bill it quotes."""
    assert cli("run", "--model", "jev-latest", "--dry-run") == 0
    out = capsys.readouterr().out
    billed = re.search(r"billed ([\d,]+) input tokens for ([\d,]+) requests", out)
    requests = re.search(r"exact path: ([\d,]+)\)", out)
    tokens = re.search(r"input tokens \(.*\): about ([\d,]+) on the exact path", out)
    cost = re.search(r"cost: USD ([\d.]+) on the exact path", out)
    assert billed and requests and tokens and cost, out
    per_request = int(billed.group(1).replace(",", "")) / int(billed.group(2).replace(",", ""))
    implied_tokens = per_request * int(requests.group(1).replace(",", ""))
    assert int(tokens.group(1).replace(",", "")) == pytest.approx(implied_tokens, rel=0.01)
    implied_cost = implied_tokens * JEV_INPUT_USD_PER_MILLION / 1e6
    assert float(cost.group(1)) == pytest.approx(implied_cost, rel=0.01)
