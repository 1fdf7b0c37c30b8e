"""Where a price applies (``harness.backends.pricing``, the one owner of the rules)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness import ConfigError, Limits, ModelSpec, load_suite, run
from harness.backends import make_backend
from harness.backends.pricing import (
    JEV_INPUT_USD_PER_MILLION,
    is_hosted,
    price_for,
    require_price,
)
from harness.backends.remote import server_base_url


@pytest.mark.parametrize(
    ("url", "hosted"),
    [
        ("https://api.typesafe.ai", True),
        ("https://API.typesafe.ai/v1/systemone/", True),
        ("https://user:pw@api.typesafe.ai", True),
        ("http://api.typesafe.ai", False),  # not the hosted API's scheme
        ("https://api.typesafe.ai.example.com", False),
        ("http://127.0.0.1:8377", False),
        ("https://openrouter.ai/api", False),
        (None, False),
    ],
)
def test_only_the_hosted_api_is_hosted(url: str | None, hosted: bool) -> None:
    assert is_hosted(url) is hosted
    price = price_for("jev-latest", url)
    assert (price is not None) is hosted
    assert price_for("jev-latest", url, 1.5) is not None  # an override prices anything


@pytest.mark.parametrize(
    "url",
    ["https://api.typesafe.ai", "https://API.typesafe.ai/prefix", "https://api.typesafe.ai/v1"],
)
def test_the_key_check_and_the_price_table_agree_on_the_hosted_api(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wherever the table prices a URL as the hosted API, a run there needs the key."""
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    assert price_for("jev-latest", url) is not None
    with pytest.raises(ConfigError, match="TYPESAFE_API_KEY"):
        make_backend(ModelSpec("jev-latest", base_url=url))


def test_a_cap_without_a_price_is_one_line_naming_the_option() -> None:
    require_price(None, None, "anything")  # no cap: nothing to check
    require_price(5.0, 0.0, "model 'sim'")  # free is a price
    with pytest.raises(ConfigError) as caught:
        require_price(5.0, None, "model 'gpt-4o-mini' at https://api.openai.com")
    message = str(caught.value)
    assert "\n" not in message and "--price-per-million" in message
    assert "gpt-4o-mini" in message and "https://api.typesafe.ai" in message


def test_the_hosted_jev_backend_carries_the_table_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-planted")
    monkeypatch.delenv("TYPESAFE_BASE_URL", raising=False)
    hosted = make_backend(ModelSpec("jev-latest"))
    loopback = make_backend(ModelSpec("jev-latest", base_url="http://127.0.0.1:8377"))
    assert hosted.price_per_million == JEV_INPUT_USD_PER_MILLION
    assert loopback.price_per_million is None
    for backend in (hosted, loopback):
        anyio.run(backend.aclose)


def test_run_refuses_a_capped_unpriced_model_before_the_folder(tmp_path: Path) -> None:
    suite = load_suite("affine", params={"per_operator": "1"})
    spec = ModelSpec("jev-sim", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="--price-per-million"):
        run(suite, spec, Limits(max_cost_usd=1.0), folder=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_server_urls_lose_their_route_never_gain_a_guess() -> None:
    assert server_base_url("https://api.openai.com/v1") == "https://api.openai.com"
    assert server_base_url("http://h:8000/v1/chat/completions/") == "http://h:8000"
    assert server_base_url("http://h/proxy/v1/decisions") == "http://h/proxy"
    with pytest.raises(ConfigError, match="http:// or https://"):
        server_base_url("localhost:8000")
