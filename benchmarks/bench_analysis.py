"""Benchmark: analyse and diff a synthetic full affine run (1024 jobs × 6 decoders).

``run()`` writes two synthetic run folders (outputs.jsonl with 6,144 lines and
requests.jsonl with ~6,900 lines each) into a temporary directory, then times
``numericjev analyze`` (all tables, 10,000 family-bootstrap replicates) and
``numericjev diff`` through ``analysis.cli.main``. Target: under 2 s each.
Run directly with ``python -m benchmarks.bench_analysis``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import orjson

from analysis.cli import main

# The same synthetic tree path the analysis tests write (run from the repository root).
from tests.analysis.analysis_runs import tree_trace

__all__ = ["run", "write_affine_run"]

DECODERS = ("direct", "tree2", "tree4", "tree10", "digits", "bits")
DOMAINS = {  # name: (L, eps); N = 100 everywhere, so U - L = 100 * eps
    "int": (Decimal(0), Decimal(1)),
    "x0.01": (Decimal(0), Decimal("0.01")),
    "minus50": (Decimal(-50), Decimal(1)),
    "x10000": (Decimal(0), Decimal(10000)),
}
N = 100
ORDERS = ("ascending", "reversed")


def _decode(rng: np.random.Generator, z: int, decoder: str, provided: bool) -> int:
    """A noisy stand-in for a decision model: perceive the index, then err per encoding."""
    spread = 0.4 if provided else 3.0
    seen = z + rng.normal(0, spread) + (rng.normal(0, 25) if rng.random() < 0.06 else 0)
    idx = int(min(max(round(seen), 0), N - 1))
    if decoder == "digits" and rng.random() < (0.25 if provided else 0.35):
        idx = (idx % 10) * 10 + idx // 10  # swapped digits, a typical conversion error
    if decoder == "bits":
        for bit in range(7):
            if rng.random() < (0.05 if provided else 0.08):
                idx ^= 1 << bit  # may exceed 99 (up to 127): kept, never clipped
    return idx


def _request_line(job: str, rnd: int, rng: np.random.Generator, questions: int) -> bytes:
    criteria = {
        str(i): f"the value is at least {i} and less than {i + 1}" for i in range(questions)
    }
    return orjson.dumps(
        {
            "job": job,
            "round": rnd,
            "attempt": 1,
            "t": 1795000000.0 + rng.random() * 3600,
            "latency_ms": float(rng.gamma(4.0, 90.0)),
            "request": {
                "model": "sim",
                "state": {"expression": "17 + 20"},
                "questions": {"q1": {"instruction": "Select the interval.", "criteria": criteria}},
            },
            "qmap": {"q1": "tree10/1"},
            "status": 200,
            "response": {"model": "sim-1", "answers": {"q1": {"label": "3"}}},
            "error": None,
            "model": "sim-1",
            "usage": {"input_tokens": int(100 + 8 * questions), "output_tokens": 12},
            "cost_usd": None,
            "request_id": f"{job}#{rnd}",
        },
        option=orjson.OPT_APPEND_NEWLINE,
    )


def write_affine_run(root: Path, seed: int, run_id: str = "bench", families: int = 64) -> Path:
    """Write a synthetic affine run folder (``families`` × 16 jobs × 6 decoders; the full
    suite's 1024 jobs by default) under ``root``."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    zs = np.random.default_rng(20260923).choice([v for v in range(1, 100) if v != 50], families)
    manifest = {
        "format_version": 1, "run_id": run_id, "created_utc": "2026-11-22T17:50:00Z",
        "suite": "affine", "suite_params": {}, "seed": 20260923, "case_hash": "c" * 64,
        "source_hash": "s" * 64, "n_cases": 4 * families, "decoders": list(DECODERS),
        "conditions": ["arithmetic", "provided"], "orders": ["ascending", "reversed"],
        "repeats": 1, "n_jobs": 16 * families,
        "model": {"name": "sim", "backend": "sim", "simulated": True, "base_url": None,
                  "params": {"seed": seed}, "price_usd_per_million_input": 0.0},
        "limits": {}, "versions": {"harness": "0.1.0", "python": "3.11.7", "platform": "bench"},
    }  # fmt: skip
    (run_dir / "manifest.json").write_bytes(orjson.dumps(manifest))
    jobs = itertools.product(
        enumerate(zs.tolist()), DOMAINS.items(), ("arithmetic", "provided"), ORDERS
    )
    with (
        (run_dir / "outputs.jsonl").open("wb") as out,
        (run_dir / "requests.jsonl").open("wb") as req,
    ):
        for (family, z), (domain, (lower, eps)), condition, order in jobs:
            job = f"affine/f{family}/{domain}/{condition}/{order}/r0"
            base = {
                "job": job, "suite": "affine", "case": f"f{family}/{domain}", "family": family,
                "domain": domain, "condition": condition, "order": order, "repeat": 0,
                "target": str(lower + eps * z), "L": str(lower), "eps": str(eps), "N": N,
            }  # fmt: skip
            depth = 1
            for decoder in DECODERS:
                idx = _decode(rng, z, decoder, condition == "provided")
                k = int(decoder[4:]) if decoder.startswith("tree") else 0
                trace = tree_trace(idx, k, lower, eps) if k else [{"round": 1, "choice": str(idx)}]
                rounds = len(trace) if k else (2 if decoder == "digits" else 1)
                depth = max(depth, rounds)
                value = lower + eps * idx
                record = {
                    **base, "decoder": decoder, "value": str(value),
                    "cell": [str(value), str(value + eps)], "rounds": rounds, "trace": trace,
                    "status": "ok", "simulated": True,
                }  # fmt: skip
                out.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
            for rnd in range(1, depth + 1):
                # Round 1 batches direct choice's 100 criteria; later rounds are small.
                req.write(_request_line(job, rnd, rng, 100 if rnd == 1 else 10))
    return run_dir


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    elapsed = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"numericjev {' '.join(argv)} exited with {code}")
    return elapsed


def run(families: int = 64, replicates: int = 10_000) -> dict[str, float]:
    """Time a full ``analyze`` and a ``diff`` of two synthetic affine runs (seconds; fewer
    ``families`` and ``replicates`` for a miniature)."""
    with tempfile.TemporaryDirectory(prefix="bench_analysis_") as tmp:
        a = write_affine_run(Path(tmp), seed=1, run_id="a", families=families)
        b = write_affine_run(Path(tmp), seed=2, run_id="b", families=families)
        outputs = len((a / "outputs.jsonl").read_bytes().splitlines())
        lines = len((a / "requests.jsonl").read_bytes().splitlines())
        analyze_seconds = _timed(["analyze", str(a), "--bootstrap", str(replicates)])
        diff_seconds = _timed(["diff", str(a), str(b), "--bootstrap", str(replicates)])
    return {
        "analyze_seconds": round(analyze_seconds, 3),
        "diff_seconds": round(diff_seconds, 3),
        "outputs_lines": outputs,
        "requests_lines": lines,
        "replicates": replicates,
    }


if __name__ == "__main__":
    print(run())
