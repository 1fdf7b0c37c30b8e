"""Output tokens are priced the same way in every placement: a sim run given
``--price-per-million`` and ``--price-per-million-output`` costs exactly
input * Pin + output * Pout per million, in process and over two worker processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.runhelpers import SMALL, cli, records


@pytest.mark.parametrize("placement", [[], ["--workers", "2"]], ids=["in-process", "workers"])
def test_a_run_prices_output_tokens_at_the_output_price(
    tmp_path: Path, placement: list[str]
) -> None:
    folder = tmp_path / "r"
    prices = ["--price-per-million", "3", "--price-per-million-output", "1000"]
    args = ("run", "--model", "sim", *SMALL, "--run", str(folder), "--no-progress", *prices)
    assert cli(*args, *placement) == 0
    lines = [r for r in records(folder / "requests.jsonl") if r.get("usage")]
    assert lines and all(r["usage"]["output_tokens"] > 0 for r in lines)
    for line in lines:
        usage = line["usage"]
        expected = (usage["input_tokens"] * 3 + usage["output_tokens"] * 1000) / 1e6
        assert line["cost_usd"] == pytest.approx(expected, rel=1e-12)
    totals = orjson.loads((folder / "totals.json").read_bytes())
    expected = (totals["input_tokens"] * 3 + totals["output_tokens"] * 1000) / 1e6
    assert totals["cost_usd"] == pytest.approx(expected, rel=1e-9)
