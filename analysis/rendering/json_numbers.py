"""The JSON object of ``analyze --json``, and the registry of suite-specific sections."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from analysis.statistics.banners import Banner
from analysis.statistics.metrics import LOG_ACCURACY, SCORED, STATISTICS
from analysis.statistics.summary import Analysis

from .probability_json import probability_to_dict

__all__ = ["NumbersBuilder", "analysis_to_dict", "banners_to_list", "number", "register_numbers"]


def number(value: float) -> float | None:
    """A float for JSON: NaN (no data) becomes None, written as null."""
    value = float(value)
    return None if math.isnan(value) else value


NumbersBuilder = Callable[[Analysis], dict[str, Any]]
_NUMBERS: dict[str, dict[str, NumbersBuilder]] = {}


def register_numbers(suite: str, **sections: NumbersBuilder) -> None:
    """Set the suite-specific JSON sections of ``analyze --json`` for ``suite``.

    Each keyword names one section under ``"suite_tables"``; its builder returns the
    numbers of that suite's own table (later registrations replace earlier).
    """
    _NUMBERS[suite] = dict(sections)


def banners_to_list(banners: tuple[Banner, ...]) -> list[dict[str, str]]:
    """The ``"warnings"`` list of a JSON object: one {kind, message} per banner."""
    return [{"kind": b.kind, "message": b.message} for b in banners]


def analysis_to_dict(analysis: Analysis) -> dict[str, Any]:
    """The numbers of ``analyze`` as one JSON-ready object (NaN written as null).

    ``"warnings"`` lists the banners (empty when there is none); ``"suite_tables"`` holds
    the registered suite-specific sections (empty for a suite without any), so the keys
    of the object are the same for every suite. ``vs_<reference>`` differences are over
    the jobs where both decoders are ok, ``n`` of them.
    """
    design, metrics, boot = analysis.design, analysis.metrics, analysis.bootstrap
    cells = []
    for d, decoder in enumerate(design.decoders):
        for c, condition in enumerate(design.conditions):
            cell: dict[str, Any] = {
                "decoder": decoder,
                "condition": condition,
                "n_ok": int(metrics.n_ok[d, c]),
                "n_failed": int(metrics.n_failed[d, c]),
                "n_missing": int(metrics.n_missing[d, c]),
                "n_expected": design.expected(decoder, condition),
            }
            for s, stat in enumerate(STATISTICS):
                if stat in SCORED:  # analyze's are in probabilities.distributions
                    continue
                cell[stat] = {
                    "value": number(metrics.point[s, d, c]),
                    "lo": number(boot.lo[s, d, c]),
                    "hi": number(boot.hi[s, d, c]),
                    "n": int(metrics.totals.counts[:, s, d, c].sum()),
                }
            cell["log_accuracy"] = {
                k: number(metrics.log_accuracy[i, d, c])
                if i < 2
                else int(metrics.log_accuracy[i, d, c])
                for i, k in enumerate(LOG_ACCURACY)
            }
            cell["mape_by_domain"] = {
                dom: number(metrics.mape_by_domain[d, c, m]) for m, dom in enumerate(design.domains)
            }
            if boot.domain_lo is not None and boot.domain_hi is not None:
                cell["mape_by_domain_interval"] = {
                    dom: [number(boot.domain_lo[d, c, m]), number(boot.domain_hi[d, c, m])]
                    for m, dom in enumerate(design.domains)
                }
            if boot.reference is not None and decoder != boot.reference:
                cell[f"vs_{boot.reference}"] = {
                    stat: {
                        "diff": number(boot.diff[s, d, c]),
                        "lo": number(boot.diff_lo[s, d, c]),
                        "hi": number(boot.diff_hi[s, d, c]),
                        "n": int(boot.n_paired[s, d, c]),
                    }
                    for s, stat in enumerate(STATISTICS)
                    if stat not in SCORED
                }
            cells.append(cell)
    facts = asdict(analysis.facts)
    facts["errors"] = analysis.facts.errors
    facts["served_models"] = dict(analysis.facts.served_models)
    facts["errors_by_kind"] = dict(analysis.facts.errors_by_kind)
    manifest = analysis.run.manifest
    return {
        "warnings": banners_to_list(analysis.banners),
        "hashes": None
        if analysis.run.hashes is None
        else {
            "case": analysis.run.hashes.case,
            "source": analysis.run.hashes.source,
            "case_hash_recomputed": analysis.run.hashes.case_hash,
            "source_hash_recomputed": analysis.run.hashes.source_hash,
        },
        "run": {
            "run_id": manifest.run_id,
            "run_dir": str(manifest.folder),
            "suite": manifest.suite,
            "model": manifest.model.name,
            "simulated": analysis.facts.simulated,
            "oracle": analysis.facts.oracle,
            "notice": analysis.facts.notice,
            "case_hash": manifest.case_hash,
            "decoders": list(design.decoders),
            "conditions": list(design.conditions),
            "orders": list(design.orders),
            "domains": list(design.domains),
        },
        "units": {
            "mape": "%",
            "nmae": "% of U-L",
            "within5": "% of outputs",
            "ordering_gap": "% of U-L",
            "affine_gap": "% of N cells",
            "lar": "100 x mean |ln(value/target)|",
            "msa": "%",
            "sspb": "% (positive: values high)",
            "zero": "ok outputs with value or target 0 (not in lar, msa, sspb)",
            "sign_mismatch": "ok outputs with value and target of opposite signs (idem)",
        },
        "bootstrap": {
            "replicates": boot.n_boot,
            "seed": boot.seed,
            "level": boot.level,
            "method": "percentile",
            "resampled_unit": "family",
            "n_families": boot.n_families,
            "min_families": boot.min_families,
            "intervals_refused": boot.refusal,
            "paired_reference": boot.reference,
            "paired_units": f"jobs where both the decoder and {boot.reference} are ok"
            if boot.reference
            else None,
        },
        "cells": cells,
        "rounds": {
            decoder: {"min": int(metrics.rounds_min[d]), "max": int(metrics.rounds_max[d])}
            if metrics.rounds_min[d] >= 0
            else None
            for d, decoder in enumerate(design.decoders)
        },
        "suite_tables": {
            name: build(analysis) for name, build in _NUMBERS.get(analysis.facts.suite, {}).items()
        },
        "facts": facts,
        # null when not computed (analyze --no-probabilities)
        "probabilities": None
        if analysis.probabilities is None
        else probability_to_dict(analysis.probabilities),
    }
