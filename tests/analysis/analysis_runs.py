"""Synthetic run folders for the analysis tests.

No harness is needed: the run folder (manifest.json, outputs.jsonl, requests.jsonl) is the
whole contract, so tests write it directly. The module name is unique across tests/ because
pytest imports test helpers by basename.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

DECODERS = ("direct", "tree2", "tree4", "tree10", "digits", "bits")
CONDITIONS = ("arithmetic", "provided")
ORDERS = ("ascending", "reversed")
# Affine domains: name -> (L, eps); N = 100 everywhere.
DOMAINS = {
    "int": (Decimal(0), Decimal(1)),
    "x0.01": (Decimal(0), Decimal("0.01")),
    "minus50": (Decimal(-50), Decimal(1)),
    "x10000": (Decimal(0), Decimal(10000)),
}
N = 100

# predict(family, domain, condition, order, decoder) -> predicted grid index, None for a
# failed output, or SKIP for an output that was never written (missing).
SKIP = "skip"
Predict = Callable[[int, str, str, str, str], "int | str | None"]


def true_index(family: int) -> int:
    """A non-zero, non-50 grid index per family (so every affine target is non-zero)."""
    z = (family * 37) % 97 + 1
    return 51 if z == 50 else z


def exact(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
    """An exact oracle: every decoder returns the true index."""
    return true_index(family)


def tree_trace(
    index: int, k_max: int, lower: Decimal, eps: Decimal, n_cells: int = N
) -> list[dict[str, Any]]:
    """Algorithm 1's path to ``index`` on a grid of ``n_cells`` as the harness records it."""
    a, b, steps = 0, n_cells, []
    while b - a > 1:
        k = min(k_max, b - a)
        cuts = [a + (b - a) * j // k for j in range(k + 1)]
        j = next(j for j in range(k) if cuts[j] <= index < cuts[j + 1])
        steps.append(
            {
                "round": len(steps) + 1,
                "choice": str(j),
                "interval": [str(lower + eps * cuts[j]), str(lower + eps * cuts[j + 1])],
                "parent": [str(lower + eps * a), str(lower + eps * b)],
                "k": k,
            }
        )
        a, b = cuts[j], cuts[j + 1]
    return steps


def output_line(
    family: int,
    domain: str,
    condition: str,
    order: str,
    decoder: str,
    index: int | None,
    *,
    z: int | None = None,
    repeat: int = 0,
    suite: str = "affine",
    simulated: bool = True,
) -> dict[str, Any]:
    """One outputs.jsonl record; ``index`` None means a failed output."""
    lower, eps = DOMAINS[domain]
    z = true_index(family) if z is None else z
    target = lower + eps * z
    record: dict[str, Any] = {
        "job": f"{suite}/f{family}/{domain}/{condition}/{order}/r{repeat}",
        "suite": suite,
        "case": f"f{family}/{domain}",
        "family": family,
        "domain": domain,
        "condition": condition,
        "order": order,
        "repeat": repeat,
        "decoder": decoder,
        "target": str(target),
        "L": str(lower),
        "eps": str(eps),
        "N": N,
        "status": "ok" if index is not None else "failed",
        "simulated": simulated,
    }
    if index is None:
        record.update(value=None, cell=None, rounds=None, trace=[])
        return record
    value = lower + eps * index
    k = int(decoder[4:]) if decoder.startswith("tree") else 0
    in_range = 0 <= index < N
    trace = tree_trace(index, k, lower, eps) if k and in_range else [{"round": 1, "choice": "0"}]
    record.update(
        value=str(value),
        cell=[str(value), str(value + eps)],
        rounds=len(trace) if k else (2 if decoder == "digits" else 1),
        trace=trace,
    )
    return record


def grid_line(
    suite: str,
    family: int,
    domain: str,
    condition: str,
    order: str,
    repeat: int,
    decoder: str,
    target: str,
    value: str | None,
    *,
    lower: str = "0",
    eps: str = "1",
    n_cells: int = 16,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One outputs.jsonl record on any grid (exploratory, historical); ``value`` None: failed.

    Job ids follow the harness (``suite/f<family>/<domain>/<condition>/<order>/r<repeat>``),
    so repeats are separate jobs. A tree decoder with an on-grid value gets a full trace.
    """
    low, step = Decimal(lower), Decimal(eps)
    record: dict[str, Any] = {
        "job": f"{suite}/f{family}/{domain}/{condition}/{order}/r{repeat}",
        "suite": suite,
        "case": f"f{family}/{domain}",
        "family": family,
        "domain": domain,
        "condition": condition,
        "order": order,
        "repeat": repeat,
        "decoder": decoder,
        "target": target,
        "L": lower,
        "eps": eps,
        "N": n_cells,
        "value": value,
        "status": "ok" if value is not None else "failed",
        "simulated": True,
        "trace": [],
    }
    if extra is not None:
        record["extra"] = extra
    if value is None:
        return record
    index = (Decimal(value) - low) / step
    k = int(decoder[4:]) if decoder.startswith("tree") else 0
    on_grid = index == index.to_integral_value() and 0 <= index < n_cells
    if k and on_grid:
        record["trace"] = tree_trace(int(index), k, low, step, n_cells)
    else:
        record["trace"] = [{"round": 1, "choice": "0"}]
    record["rounds"] = len(record["trace"])
    return record


def request_line(job: str, rnd: int = 1, **fields: Any) -> dict[str, Any]:
    """One requests.jsonl record with sensible defaults (override any field)."""
    record = {
        "job": job,
        "round": rnd,
        "attempt": 1,
        "t": 1795000000.0 + rnd,
        "latency_ms": 100.0,
        "request": {"model": "sim", "state": {}, "questions": {}},
        "qmap": {},
        "status": 200,
        "response": {},
        "error": None,
        "model": "sim-1",
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "cost_usd": None,
        "request_id": None,
    }
    record.update(fields)
    return record


def manifest(**overrides: Any) -> dict[str, Any]:
    """A manifest.json object for an affine run; keyword arguments replace fields."""
    base = {
        "format_version": 1,
        "run_id": "test-run",
        "created_utc": "2026-11-22T17:50:00Z",
        "suite": "affine",
        "suite_params": {},
        "seed": 20260923,
        "case_hash": "a" * 64,
        "source_hash": "b" * 64,
        "n_cases": 0,
        "decoders": list(DECODERS),
        "conditions": list(CONDITIONS),
        "orders": list(ORDERS),
        "repeats": 1,
        "n_jobs": 0,
        "model": {
            "name": "sim",
            "backend": "sim",
            "simulated": True,
            "base_url": None,
            "params": {},
            "price_usd_per_million_input": 0.0,
        },
        "limits": {},
        "versions": {"harness": "0.1.0", "python": "3.11.7", "platform": "test"},
    }
    base.update(overrides)
    return base


def _jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records)


@dataclass
class RunFactory:
    """Writes run folders under a temporary root."""

    root: Path

    def write(
        self,
        name: str,
        outputs: list[dict[str, Any]],
        requests: list[dict[str, Any]] | None = None,
        tail: bytes = b"",
        **manifest_fields: Any,
    ) -> Path:
        """Write manifest.json, outputs.jsonl (+ ``tail`` bytes) and requests.jsonl."""
        run = self.root / name
        run.mkdir(parents=True)
        (run / "manifest.json").write_bytes(orjson.dumps(manifest(run_id=name, **manifest_fields)))
        (run / "outputs.jsonl").write_bytes(_jsonl(outputs) + tail)
        if requests is None:
            jobs = dict.fromkeys(o["job"] for o in outputs)
            requests = [request_line(job) for job in jobs]
        (run / "requests.jsonl").write_bytes(_jsonl(requests))
        return run

    def affine(
        self,
        name: str = "run",
        families: Iterable[int] = range(4),
        predict: Predict = exact,
        decoders: tuple[str, ...] = DECODERS,
        domains: tuple[str, ...] = tuple(DOMAINS),
        simulated: bool = True,
        **manifest_fields: Any,
    ) -> Path:
        """A full affine design (families × domains × conditions × orders × decoders)."""
        families = list(families)
        outputs = []
        for family in families:
            for domain in domains:
                for condition in CONDITIONS:
                    for order in ORDERS:
                        for decoder in decoders:
                            index = predict(family, domain, condition, order, decoder)
                            if index != SKIP:
                                outputs.append(
                                    output_line(
                                        family,
                                        domain,
                                        condition,
                                        order,
                                        decoder,
                                        index,
                                        simulated=simulated,
                                    )
                                )
        n_jobs = len(families) * len(domains) * len(CONDITIONS) * len(ORDERS)
        model = {"name": "sim", "backend": "sim", "simulated": True}
        if not simulated:
            model = {"name": "jev-test", "backend": "systemone", "simulated": False}
        fields = {
            "n_cases": len(families) * len(domains),
            "n_jobs": n_jobs,
            "decoders": list(decoders),
            "model": model,
        }
        fields.update(manifest_fields)
        return self.write(name, outputs, **fields)
