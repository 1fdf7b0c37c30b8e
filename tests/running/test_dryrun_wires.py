"""The dry run counts what the wire sends: on the chat wire, one HTTP call per question,
and exactly as many as a run then sends (serve-sim answering with exact labels)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.backends import ModelSpec
from harness.protocol.registry import load_suite
from harness.running.dryrun import DryPrice, count, describe, dry_run_price
from harness.serve import ServerConfig
from tests.counting import counting_server
from tests.runhelpers import cli

ONE = ["--param", "per_operator=1"]  # 4 families: 64 jobs


def dry_calls(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    assert cli("run", *ONE, "--dry-run", *args) == 0
    out = capsys.readouterr().out
    found = re.search(r"HTTP calls \([^)]*\): ([\d,]+) on the exact path", out)
    assert found, out
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("wire", ["openai-chat", "systemone", "openai-decisions"])
def test_the_dry_runs_http_calls_are_what_a_run_sends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wire: str
) -> None:
    config = ServerConfig(port=0, model="oracle", wire=wire)
    with counting_server(config) as (url, answered):
        spec = ["--model", "jev-oracle", "--wire", wire, "--base-url", url]
        predicted = dry_calls(capsys, *spec)
        assert cli("run", *ONE, *spec, "--run", str(tmp_path / "r"), "--no-progress") == 0
    assert answered.total == predicted
    if wire == "openai-chat":  # one call per question: more than one per request
        assert predicted > count(load_suite("affine", params={"per_operator": "1"}),
                                 ModelSpec("jev-oracle")).exact_requests  # fmt: skip


def test_chat_counts_questions_and_one_output_token_each() -> None:
    suite = load_suite("affine", params={"per_operator": "1"})
    chat = count(suite, ModelSpec("m", wire="openai-chat"))
    one = count(suite, ModelSpec("m"))
    assert chat.http_calls == chat.questions == one.questions > one.http_calls
    assert chat.output_tokens == chat.http_calls
    assert count(suite, ModelSpec("sim")).http_calls == 0


def test_prices_come_from_the_override_first_and_are_labelled() -> None:
    spec = ModelSpec("gpt-x", wire="openai-chat", price_per_million=1.0,
                     price_per_million_output=4.0)  # fmt: skip
    price = dry_run_price(spec)
    assert price == DryPrice(1.0, 4.0, "--price-per-million (or the profile)")
    suite = load_suite("affine", params={"per_operator": "1"})
    counts = count(suite, spec)
    assert counts.cost(price) == pytest.approx(
        (counts.input_tokens * 1.0 + counts.output_tokens * 4.0) / 1e6
    )
    lines = describe(suite, spec, None)
    assert any("cost: unknown" in line for line in lines)
    assert dry_run_price(ModelSpec("local-model", wire="openai-chat",
                                   base_url="http://127.0.0.1:9")) is None  # fmt: skip


def test_the_maintained_table_prices_a_known_chat_model_with_its_source() -> None:
    pytest.importorskip("genai_prices")
    price = dry_run_price(ModelSpec("gpt-4o-mini", wire="openai-chat"))
    assert price is not None and price.input_per_million > 0
    assert price.source.startswith("genai-prices ") and "in force on 20" in price.source


def test_compare_dry_run_counts_every_cell_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "numericjev.toml").write_text(
        '[models.chat]\nmodel = "m"\nwire = "openai-chat"\nbase_url = "http://127.0.0.1:9"\n'
        "price_per_million = 1.0\n"
    )
    status = cli("compare", "--models", "sim,chat", "--suites", "affine,exploratory",
                 "--param", "affine.per_operator=1", "--dry-run")  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("\ncell ") == 4 and "cell exploratory x m:" in out
    suite = load_suite("affine", params={"per_operator": "1"})
    chat = count(suite, ModelSpec("m", wire="openai-chat"))
    assert f"HTTP calls (openai-chat: one per question): {chat.http_calls:,}" in out
    assert "all cells: " in out and "cost USD" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["numericjev.toml"]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.typesafe.ai", "https://API.typesafe.ai/", "https://api.typesafe.ai/v1",
        "https://api.typesafe.ai/v1/systemone", "HTTPS://api.typesafe.ai:443/v1/",
        "http://api.typesafe.ai", "http://127.0.0.1:8377/v1", "https://proxy.example/v1",
    ],
)  # fmt: skip
def test_the_dry_run_prices_the_normalised_server_url_as_the_raw_one(url: str) -> None:
    # dry_run_price reads the URL through server_of (normalised); the table's verdict and
    # the characters a token must be what the raw URL gives (the run's backend uses both).
    from harness.backends.pricing import chars_per_token, price_for

    spec = ModelSpec("jev-latest", base_url=url)
    price = dry_run_price(spec)
    table = price_for("jev-latest", url)
    assert (price is None) == (table is None)
    assert price is None or price.input_per_million == table.input_per_million  # type: ignore[union-attr]
    assert count(load_suite("affine", params={"per_operator": "1"}), spec).chars_per_token == (
        chars_per_token("jev-latest", url)
    )
