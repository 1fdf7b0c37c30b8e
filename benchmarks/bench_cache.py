"""The request cache: the affine suite against ``serve-sim --latency-ms 50``, twice.

Run 1 fills an empty cache (read-write), run 2 asks the same suite and model. Reported, as
measured in this one run: requests sent by run 2 (goal 0), run 2's wall time as a share of
run 1's (goal < 5%), the cache's lookup-and-store CPU per request beside the harness's own
CPU per request (run 1: everything the client process did), and the cache file's size per
1,000 exchanges. Each run is a fresh ``numericjev run`` process, start-up included.

Then two runs at once on another empty cache (single flight across processes): what each
paid for, and how many exchanges both paid for (goal 0).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import ROOT, serve_sim

_SUMMARY = re.compile(r"(\d+) hits, (\d+) misses, .*lookup CPU ([\d.]+) ms")


def _command(url: str, folder: Path, params: dict[str, str]) -> list[str]:
    suite = [arg for key, value in params.items() for arg in ("--param", f"{key}={value}")]
    return [
        sys.executable, "-m", "harness.cli", "run", "--suite", "affine", *suite, "--model",
        "jev-sim", "--base-url", url, "--run", str(folder), "--no-progress", "--cache",
        "read-write",
    ]  # fmt: skip


def _sent(folder: Path) -> tuple[int, int]:
    """Exchanges a run paid for (not from the cache), and all its exchanges."""
    lines = (folder / "requests.jsonl").read_bytes().splitlines()
    return sum(1 for line in lines if b'"cache":{"hit":true' not in line), len(lines)


def at_once(url: str, tmp: Path, env: dict[str, str], params: dict[str, str]) -> dict[str, Any]:
    """Two runs started together on one empty cache: what each paid, and both."""
    env = {**env, "NUMERICJEV_CACHE": str(tmp / "shared.sqlite3")}
    folders = [tmp / "at-once-a", tmp / "at-once-b"]
    children = [
        subprocess.Popen(_command(url, f, params), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        for f in folders
    ]  # fmt: skip
    for child in children:
        assert child.wait() == 0
    (a, n), (b, _) = (_sent(f) for f in folders)
    return {
        "at_once_exchanges_each": n,
        "at_once_paid_a": a,
        "at_once_paid_b": b,
        "at_once_paid_twice": a + b - n,
    }


def _run(url: str, folder: Path, env: dict[str, str], params: dict[str, str]) -> dict[str, Any]:
    """One ``numericjev run`` of the affine suite; wall, CPU and the cache's own line."""
    command = _command(url, folder, params)
    t0 = time.perf_counter()
    before = os.times()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    after = os.times()
    wall = time.perf_counter() - t0
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    match = _SUMMARY.search(done.stderr)
    assert match is not None, done.stderr
    hits, misses, lookup_ms = int(match[1]), int(match[2]), float(match[3])
    sent, exchanges = _sent(folder)
    return {"wall_s": wall, "cpu_s": cpu, "hits": hits, "misses": misses, "sent": sent,
            "exchanges": exchanges, "lookup_cpu_s": lookup_ms / 1e3}  # fmt: skip


def run(tmp: Path, params: dict[str, str] | None = None) -> dict[str, Any]:
    """Both runs against one serve-sim; the figures as ratios (``params``: the affine
    suite's parameters, for a smaller suite)."""
    params = params or {}
    cache = tmp / "cache.sqlite3"
    env = {**os.environ, "NUMERICJEV_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    with serve_sim(["--latency-ms", "50"]) as (url, _pid):
        first = _run(url, tmp / "first", env, params)
        second = _run(url, tmp / "second", env, params)
        both = at_once(url, tmp, env, params)
    n1 = first["exchanges"]
    size = cache.stat().st_size + sum(
        p.stat().st_size for p in tmp.glob("cache.sqlite3-wal") if p.exists()
    )
    return {
        "cache_first_requests_sent": first["sent"],
        "cache_second_requests_sent": second["sent"],
        "cache_second_hits": second["hits"],
        "cache_first_wall_s": round(first["wall_s"], 3),
        "cache_second_wall_s": round(second["wall_s"], 3),
        "cache_second_wall_share": round(second["wall_s"] / first["wall_s"], 4),
        "cache_lookup_cpu_us_per_request_first": round(first["lookup_cpu_s"] / n1 * 1e6, 1),
        "cache_lookup_cpu_us_per_request_second": round(
            second["lookup_cpu_s"] / max(second["exchanges"], 1) * 1e6, 1
        ),
        "harness_cpu_us_per_request_first": round(first["cpu_s"] / n1 * 1e6, 1),
        "cache_lookup_share_of_harness_cpu": round(first["lookup_cpu_s"] / first["cpu_s"], 4),
        "cache_mb_per_1000_exchanges": round(size / 2**20 / n1 * 1000, 3),
        **both,
    }


def main() -> None:
    """``python -m benchmarks.bench_cache [--json]``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print only the JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = run(Path(tmp))
    if not args.json:
        for key, value in out.items():
            print(f"{key}: {value}")
    print(orjson.dumps(out).decode())


if __name__ == "__main__":
    main()
