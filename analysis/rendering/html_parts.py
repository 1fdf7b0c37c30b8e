"""Pieces of the HTML pages that are plain data: provenance rows, warnings, worst cases,
tables with job links, and figures made fit to inline (no I/O except reading SVG files)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.loading.viewer.rounds import NONE, JobRounds
from analysis.statistics.banners import Banner
from analysis.statistics.facts import RunFacts
from runfolder import Manifest

from .markdown import Table, fmt

__all__ = [
    "FigureFile",
    "JobLink",
    "LinkedTable",
    "ProvenanceRow",
    "inline_svg",
    "provenance_rows",
    "run_warnings",
    "worst_cases",
]

_UNREPORTED = "(not reported)"


@dataclass(frozen=True)
class JobLink:
    """A link from a table row into the job viewer: one output of one job."""

    job: str
    decoder: str


@dataclass(frozen=True)
class LinkedTable:
    """A :class:`Table` shown in HTML, sortable; ``links[i]`` opens row i in the viewer."""

    table: Table
    links: tuple[JobLink | None, ...] = ()

    def link(self, row: int) -> JobLink | None:
        """The viewer link of row ``row``, if it has one."""
        return self.links[row] if row < len(self.links) else None


@dataclass(frozen=True)
class FigureFile:
    """A figure the report wrote: its caption and its SVG file (inlined in the page)."""

    caption: str
    svg: Path


@dataclass(frozen=True)
class ProvenanceRow:
    """One provenance field: its value per run, and whether the runs disagree on it."""

    field: str
    values: tuple[str, ...]

    @property
    def differs(self) -> bool:
        """True when at least two runs show different values."""
        return len(set(self.values)) > 1


def run_warnings(facts: RunFacts, banners: Sequence[Banner], who: str = "") -> list[str]:
    """Warnings shown first on a page: the analysis banners (incomplete, mixed, resumed,
    sides that differ) and what they leave out: simulated, served ≠ requested, log repairs."""
    prefix = f"{who}: " if who else ""
    found = []
    if facts.notice:
        found.append(f"{prefix}{facts.notice}")
    found += [banner.message for banner in banners]
    served = [name for name, _ in facts.served_models if name != _UNREPORTED]
    if len(served) == 1 and served[0] != facts.model and not facts.notice:
        found.append(
            f"{prefix}requested model {facts.model} but the server reported {served[0]}; "
            "the served model is what was measured"
        )
    if facts.repairs:
        found.append(f"{prefix}log repairs: {facts.repairs}")
    return found


def _mtime(path: Path) -> str:
    if not path.is_file():
        return "absent"
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return stamp.isoformat(timespec="seconds")


def _json_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_json_text(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list):
        return ", ".join(map(_json_text, value)) or "—"
    return str(value)


def _price(model: dict[str, Any]) -> str:
    prices = {k: v for k, v in model.items() if k.startswith("price")}
    return _json_text(prices) if prices else "—"


def _count(value: int | None) -> str:
    return "not reported" if value is None else f"{value:,}"


def _one(f: RunFacts, m: Manifest) -> dict[str, str]:
    raw = m.raw
    model: dict[str, Any] = raw["model"] if isinstance(raw.get("model"), dict) else {}
    versions: dict[str, Any] = raw["versions"] if isinstance(raw.get("versions"), dict) else {}
    cost = "not reported" if f.cost_usd is None else f"USD {f.cost_usd:.6f}"
    if f.cost_usd is not None and f.requests_without_cost:
        cost += f" ({f.requests_without_cost:,} request(s) without cost)"
    return {
        "Run": f.run_id,
        "Folder": str(m.folder),
        "Suite": f.suite,
        "Suite parameters": _json_text(raw.get("suite_params")),
        "Seed": _json_text(f.seed),
        "Case hash": f.case_hash or "unknown",
        "Harness version": _json_text(versions.get("harness")),
        "Harness source hash": m.source_hash or "unknown",
        "Python / platform": f"{_json_text(versions.get('python'))} / "
        f"{_json_text(versions.get('platform'))}",
        "Requested model": f.model,
        "Backend": f.backend or "unknown",
        "Base URL": _json_text(model.get("base_url")),
        "Wire format": _json_text(model.get("wire")),
        "Model parameters (sim knobs)": _json_text(model.get("params")),
        "Price": _price(model),
        "Served model(s)": ", ".join(f"{n} ×{k:,}" for n, k in f.served_models) or "none reported",
        "Simulated": "yes — " + f.notice if f.simulated and f.notice else "no",
        "Oracle (exact labels)": "yes — " + f.notice if f.oracle and f.notice else "no",
        "Decoders": ", ".join(m.decoders),
        "Conditions × orders": f"{', '.join(m.conditions)} × {', '.join(m.orders)}",
        "Started (manifest)": f.created_utc or "unknown",
        "Last written (requests.jsonl)": _mtime(m.folder / "requests.jsonl"),
        "Jobs expected": _count(f.n_jobs),
        "Requests": f"{f.requests:,} attempts for {f.jobs_with_requests:,} jobs, "
        f"{f.retries:,} retries"
        if f.requests_log_present
        else "requests.jsonl absent",
        "Failures by kind": ", ".join(f"{k} ×{n:,}" for k, n in f.errors_by_kind) or "none",
        "Tokens in / out": f"{_count(f.input_tokens)} / {_count(f.output_tokens)}",
        "Cost": cost,
        "Latency p50 / p95": "n/a"
        if f.latency_p50_ms is None
        else f"{f.latency_p50_ms:.1f} ms / {f.latency_p95_ms:.1f} ms",
        "Outputs ok / failed / missing": f"{f.outputs_ok:,} / {f.outputs_failed:,} / "
        f"{f.outputs_missing:,}",
        "Limits": _json_text(raw.get("limits")),
    }


def provenance_rows(runs: Sequence[tuple[RunFacts, Manifest]]) -> list[ProvenanceRow]:
    """The provenance table of one or more runs, one row per field, in a fixed order."""
    tables = [_one(f, m) for f, m in runs]
    fields = list(tables[0]) if tables else []
    return [ProvenanceRow(name, tuple(t[name] for t in tables)) for name in fields]


def worst_cases(rounds: JobRounds, suite: str, top: int = 10) -> list[tuple[str, LinkedTable]]:
    """Per decoder, the ``top`` ok outputs with the largest APE, each linking to its job."""
    ape = np.frombuffer(rounds.out_ape, dtype=np.float32)
    decoder = np.frombuffer(rounds.out_decoder, dtype=np.uint8)
    ok = np.frombuffer(rounds.out_ok, dtype=np.uint8).astype(bool)
    s, found = rounds.strings, []
    for code, name in enumerate(rounds.decoders):
        rows = np.flatnonzero((decoder == code) & ok & np.isfinite(ape))
        if not len(rows):
            continue
        # Largest APE first; the log position breaks ties, so the list is reproducible.
        chosen = rows[np.lexsort((rows, -ape[rows]))][:top]
        body, links = [], []
        for i in chosen.tolist():
            job = rounds.out_job[i]
            value = rounds.out_value[i]
            body.append(
                (
                    s[rounds.job_id[job]],
                    s[rounds.job_case[job]],
                    domain_label(rounds.domains[rounds.job_domain[job]]),
                    condition_label(rounds.conditions[rounds.job_condition[job]]),
                    rounds.orders[rounds.job_order[job]],
                    s[rounds.out_target[i]],
                    "—" if value == NONE else s[value],
                    fmt(float(ape[i])),
                )
            )
            links.append(JobLink(s[rounds.job_id[job]], name))
        label = decoder_label(name, suite)
        table = Table(
            f"{label}: largest absolute percentage errors",
            ("Job", "Case", "Domain", "Condition", "Order", "Target", "Value", "APE (%)"),
            tuple(body),
            (
                f"The {len(body)} ok outputs of {label} with the largest APE; click a row to "
                "open the job.",
            ),
            left=5,
        )
        found.append((label, LinkedTable(table, tuple(links))))
    return found


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_SIZE = re.compile(r'(<svg\b[^>]*?)\s(?:width|height)="[^"]*"', re.S)


def inline_svg(path: Path) -> str:
    """A matplotlib SVG file made fit to sit inside HTML: no XML prolog or DOCTYPE, and no
    fixed width/height (the viewBox keeps the proportions; CSS sets the width)."""
    text = _PROLOG.sub("", path.read_text(encoding="utf-8"), count=1)
    for _ in range(2):
        text = _SIZE.sub(r"\1", text, count=1)
    return text.replace("<svg ", '<svg class="figure" role="img" ', 1)


def finite(value: float) -> float | None:
    """``value`` or None when it is NaN (for JSON)."""
    return None if math.isnan(value) else value
