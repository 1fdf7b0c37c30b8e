"""A run's profile: the figures a fit matches and a side-by-side table shows.

A profile is a flat mapping ``"statistic/decoder/condition[/domain]" -> percent``, computed
with the analysis package's own metrics (``compute_metrics``), so a fitted sim matches the
numbers ``numericjev analyze`` prints, from a run folder or from records simulated in
process alike.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from analysis.loading.logs.outputs import Outputs, load_outputs
from analysis.loading.names import order_conditions, order_decoders, order_domains
from analysis.statistics.design import Design
from analysis.statistics.metrics import STATISTICS, compute_metrics

Profile = dict[str, float]

# The statistics a profile holds: the main table's and the sensitivity table's.
FIGURES = ("mape", "nmae", "ordering_gap", "affine_gap")


def outputs_of(records: Iterable[Mapping[str, Any]]) -> Outputs:
    """Column arrays of output records (as ``outputs.jsonl`` holds them), via the one loader."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "outputs.jsonl"
        with path.open("wb") as f:
            for record in records:
                f.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        return load_outputs(path)


def design_for(outputs: Outputs, suite: str | None) -> Design:
    """The tables' rows and columns as the outputs hold them (no manifest needed)."""
    domains = order_domains(outputs.domain_names)
    return Design(
        decoders=order_decoders(list(outputs.decoder_names), suite),
        conditions=order_conditions(list(outputs.condition_names)),
        orders=tuple(outputs.order_names),
        domains=domains,
        reference_decoder="direct" if "direct" in outputs.decoder_names else None,
        reference_domain="int" if "int" in domains else None,
        expected_decoders=frozenset(outputs.decoder_names),
        expected_conditions=frozenset(outputs.condition_names),
        expected_per_cell=None,
    )


def profile_of(outputs: Outputs, suite: str | None) -> Profile:
    """Every defined figure of the run: FIGURES per decoder x condition, and MAPE and NMAE
    per decoder x condition x domain where a suite has more than one domain."""
    design = design_for(outputs, suite)
    metrics = compute_metrics(outputs, design)
    out: Profile = {}
    for s, statistic in enumerate(STATISTICS):
        if statistic not in FIGURES:
            continue
        for d, decoder in enumerate(design.decoders):
            for c, condition in enumerate(design.conditions):
                value = float(metrics.point[s, d, c])
                if math.isfinite(value):
                    out[f"{statistic}/{decoder}/{condition}"] = value
    if len(design.domains) > 1:
        for s, statistic in enumerate(("mape", "nmae")):  # metrics.by_domain's first two
            for d, decoder in enumerate(design.decoders):
                for c, condition in enumerate(design.conditions):
                    for m, domain in enumerate(design.domains):
                        value = float(metrics.by_domain[s, d, c, m])
                        if math.isfinite(value):
                            out[f"{statistic}/{decoder}/{condition}/{domain}"] = value
    return out


def profile_of_records(records: Iterable[Mapping[str, Any]], suite: str | None) -> Profile:
    """``profile_of`` for output records held in memory."""
    return profile_of(outputs_of(records), suite)
