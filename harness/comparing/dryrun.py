"""``compare --dry-run``: what every cell would send and cost, without sending anything."""

from __future__ import annotations

from collections.abc import Mapping

from harness.backends import parse_model
from harness.comparing.comparison import CompareOptions, _split_params
from harness.errors import ConfigError
from harness.protocol.registry import load_suite
from harness.running.dryrun import count, describe, dry_run_price


def describe_comparison(
    models: list[str],
    suites: list[str],
    params: Mapping[str, str],
    options: CompareOptions,
) -> list[str]:
    """The dry run's lines for every model x suite cell (``running.dryrun``), then totals."""
    if not suites:
        raise ConfigError("--suites needs at least one suite, e.g. --suites affine,exploratory")
    specs = [parse_model(m, options.base(m)) for m in models]  # a bad knob is refused here
    per_suite = _split_params(params, suites)
    lines = [f"dry run: nothing sent. {len(models)} models x {len(suites)} suites"]
    calls = 0
    cost: float | None = 0.0
    for name in suites:
        suite = load_suite(name, params=per_suite.get(name, {}))
        for model, spec in zip(models, specs, strict=True):
            price, counts = dry_run_price(spec), count(suite, spec)
            lines.append(f"cell {name} x {model}:")
            lines += [f"  {line}" for line in describe(suite, spec, price, counts)[1:]]
            calls += counts.http_calls
            cost = None if cost is None or price is None else cost + counts.cost(price)
    total = "unknown (a cell has no price)" if cost is None else f"USD {cost:.4f}"
    lines.append(f"all cells: {calls:,} HTTP calls on the exact path; cost {total}")
    return lines
