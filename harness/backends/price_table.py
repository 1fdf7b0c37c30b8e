"""A maintained price table for chat and Decisions models: ``genai-prices``, an optional extra.

Used by ``--dry-run`` and ``probe`` to estimate what a run would cost on a model that the
harness's own table (hosted Jev only, ``harness.backends.pricing``) does not price. It
prices by the model's name at a provider's URL (OpenAI's API, OpenRouter, ...); a local
server (llama.cpp, vLLM, serve-sim) is never priced by it: what it costs is unknown. Runs
themselves are priced as ``pricing`` says (``--price-per-million`` or a profile's price).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

PACKAGE = "genai-prices"


@dataclass(frozen=True)
class TablePrice:
    """USD per million tokens in and out, and where the figure came from."""

    input_per_million: float
    output_per_million: float
    source: str


def maintained_price(model: str, base_url: str) -> TablePrice | None:
    """``genai-prices``' price of ``model`` at ``base_url`` (None: not installed, or the
    provider or model is not in its table)."""
    try:
        from importlib.metadata import version

        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    million = 1_000_000
    today = datetime.now(UTC)
    try:
        found = calc_price(
            Usage(input_tokens=million, output_tokens=million),
            model,
            provider_api_url=base_url,
            genai_request_timestamp=today,
        )
    except LookupError:
        return None
    source = (
        f"{PACKAGE} {version(PACKAGE)}: {found.provider.name} {found.model.id}, the price in "
        f"force on {today.date().isoformat()} in its bundled table (pip install -U {PACKAGE})"
    )
    return TablePrice(float(found.input_price), float(found.output_price), source)
