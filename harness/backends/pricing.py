"""What an exchange cost, and where a price applies: the ONE owner of the pricing rules.

The rules, in order:

1. **The server's own figure** wins: OpenRouter may add ``usage.cost``, LiteLLM sends
   ``x-litellm-response-cost``, a Decisions proxy may report ``usage.cost``.
2. **``--price-per-million``** prices any model at any URL (input tokens).
3. **The price table** prices the hosted TypeSafe API only (``https://api.typesafe.ai``):
   hosted Jev bills input tokens, USD 0.042 per million; output is free (docs/wire.md).
   The same model name at any other base URL (a loopback serve-sim, a proxy, a local
   llama.cpp) is NOT priced by the table: who serves it, and at what price, is unknown.
4. Otherwise the cost is unknown: ``None``, never 0, so a report can tell "free" from
   "not known". In-process models (sim, oracle) are free: 0.

A spend cap needs a price to reserve against before any cost is known: ``require_price``
refuses a ``--max-cost-usd`` without one, in one line naming the option to pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.errors import ConfigError
from harness.wire.usage import CHARS_PER_TOKEN

JEV_INPUT_USD_PER_MILLION = 0.042
# Hosted Jev's tokenizer, from its one published bill: the paper's affine run billed
# 6,982,898 input tokens for 6,863 requests (1,017 a request), and the affine suite's 6,864
# System One bodies on the exact path hold 10,522,398 characters: 1.51 characters a billed
# token (tests/running/test_estimates.py checks the dry run against that bill).
HOSTED_JEV_CHARS_PER_TOKEN = 1.51
HOSTED_HOST = "api.typesafe.ai"  # the one host the price table prices

# Hosted Jev under its ids (jev-latest, jev-1.13.0, and OpenRouter's typesafe/jev-1.13).
_JEV = re.compile(r"^(typesafe/)?jev-[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input_per_million: float
    output_per_million: float = 0.0

    def cost(self, usage: Mapping[str, Any] | None) -> float | None:
        """Cost of ``usage`` in USD; None when the token counts are missing."""
        if not usage:
            return None
        tokens_in = usage.get("input_tokens")
        tokens_out = usage.get("output_tokens") or 0
        if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
            return None
        return (tokens_in * self.input_per_million + tokens_out * self.output_per_million) / 1e6


def is_hosted(base_url: str | None) -> bool:
    """Whether ``base_url`` is the hosted TypeSafe API (the only URL the table prices)."""
    if not base_url:
        return False
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:  # not a URL at all: the backend refuses it in words (http.checked_url)
        return False
    return parts.scheme == "https" and (parts.hostname or "").lower() == HOSTED_HOST


def _hosted_jev(model: str | None, base_url: str | None) -> bool:
    """Whether ``model`` at ``base_url`` is hosted Jev (the price table's one entry)."""
    return bool(model and _JEV.match(model) and is_hosted(base_url))


def chars_per_token(model: str | None, base_url: str | None) -> float:
    """Characters a billed input token of ``model`` at ``base_url``, for an estimate: hosted
    Jev's measured figure, else the simulated models' rule (``harness.wire.usage``)."""
    return HOSTED_JEV_CHARS_PER_TOKEN if _hosted_jev(model, base_url) else CHARS_PER_TOKEN


def price_for(
    model: str | None,
    base_url: str | None,
    override: float | None = None,
    output: float | None = None,
) -> Price | None:
    """The price of ``model`` at ``base_url``: ``override`` (``--price-per-million``, or a
    profile's ``price_per_million``; ``output`` its output price) if given, else the table
    (hosted API only), else None (unknown)."""
    if override is not None:
        return Price(float(override), float(output or 0.0))
    return Price(JEV_INPUT_USD_PER_MILLION) if _hosted_jev(model, base_url) else None


def price_record(price: Price | None, overridden: bool) -> dict[str, Any] | None:
    """``price`` (``price_for``'s) as a manifest's ``model.params.price`` records it (None:
    unknown); ``overridden``: it came from a price given, not from the table."""
    if price is None:
        return None
    return {
        "input_usd_per_million": price.input_per_million,
        "output_usd_per_million": price.output_per_million,
        "source": "override" if overridden else "table",
    }


def recorded_output_price(record: Any) -> float | None:
    """The output price a run was given (a profile's ``price_per_million_output``) as
    ``price_record`` wrote it; None when the table priced the run or nothing did."""
    if not isinstance(record, Mapping) or record.get("source") != "override":
        return None
    value = record.get("output_usd_per_million")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def cost_usd(
    usage: Mapping[str, Any] | None, headers: Mapping[str, str], price: Price | None
) -> float | None:
    """The exchange's cost: the server's report (``usage.cost``, as OpenRouter sends it, else
    LiteLLM's cost header), else ``usage`` at ``price``, else None."""
    reported = _number(usage["cost"]) if usage and "cost" in usage else None
    if reported is None:
        reported = _number(headers.get("x-litellm-response-cost"))
    if reported is not None:
        return reported
    return None if price is None else price.cost(usage)


def require_price(max_cost_usd: float | None, price_per_million: float | None, what: str) -> None:
    """Refuse a spend cap that nothing can price before a cost is reported (a server that
    reports its own cost too: the cap reserves before it is sent); ``what`` names the model."""
    if max_cost_usd is not None and price_per_million is None:
        raise ConfigError(
            f"--max-cost-usd needs a price, and {what} has none (the price table prices only "
            f"the hosted TypeSafe API, https://{HOSTED_HOST}): pass --price-per-million USD"
        )
