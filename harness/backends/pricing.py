"""What an exchange cost: the server's own figure when it gives one, else a price table.

Hosted Jev bills input tokens only, USD 0.042 per million; output is free (docs/wire.md).
OpenRouter may add ``usage.cost`` and LiteLLM sends ``x-litellm-response-cost``; both win
over the table. An unknown model has an unknown price: ``None``, never 0, so a report can
tell "free" from "not known".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

JEV_INPUT_USD_PER_MILLION = 0.042

# Hosted Jev under its own ids (jev-latest, jev-1.13.0) and OpenRouter's (typesafe/jev-1.13).
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


def price_for(model: str | None, override: float | None = None) -> Price | None:
    """The price of ``model``; ``override`` (``--price-per-million``) prices any model's input."""
    if override is not None:
        return Price(float(override))
    if model and _JEV.match(model):
        return Price(JEV_INPUT_USD_PER_MILLION)
    return None


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


def reported_cost(usage: Mapping[str, Any] | None, headers: Mapping[str, str]) -> float | None:
    """The cost the server reported: ``usage.cost`` (OpenRouter) or the LiteLLM header."""
    if usage and "cost" in usage:
        cost = _number(usage["cost"])
        if cost is not None:
            return cost
    return _number(headers.get("x-litellm-response-cost"))


def cost_usd(
    models: tuple[str | None, ...],
    usage: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    override: float | None = None,
) -> float | None:
    """The exchange's cost: reported by the server, else from the first priced model name.

    ``models`` lists candidate names in order of preference (e.g. the served model, then
    the requested one, since an alias like ``jev-latest`` and its version price alike).
    """
    reported = reported_cost(usage, headers)
    if reported is not None:
        return reported
    for model in models:
        price = price_for(model, override)
        if price is not None:
            return price.cost(usage)
    return None
