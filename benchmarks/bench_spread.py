"""In process on the sim with 1 and 2 worker processes, the sharded run, and Inspect AI.

- ``inproc_w{1,2,auto}``: the whole affine suite (6,884 requests) in a fresh process (its
  modules loaded first by a run that sends nothing), plain ``run`` for one worker
  and ``run`` in a ``Pool`` (``--workers``: processes that answer, this one writing the
  run folder) for 2 and for ``auto`` (one per core: the same as 2 on a 2-core machine);
  alternated ``REPEATS`` times, reported as ranges. Wall time per request is what a user
  waits; CPU per request counts the workers' CPU too (``getrusage`` of the children).
- ``x100_w2``: the same at 100x (``repeats=100``); the one-worker 100x figure is the scale
  section's (``scale_100x_*``), the same measurement.
- ``sharded``: the suite in 4 shards (``run`` with ``Shards(4, index=K)`` one after another), merged, against
  an unsharded run: identical outputs, and the merge's own time.
- ``--peers``: Inspect AI on the same shape of work (1,024 samples x 7 sequential calls to
  an instant mock model; ``../shared/bench/peer_inspect``), in its own venv, in the same
  bench run, so the ratio Inspect / NumericJev compares one run's figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.processes import ROOT, child

REPEATS = 3
PEER_SAMPLES = 1024

_RUN = """
import resource, time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, Pool, load_suite, run
suite = load_suite("affine", params={params!r})
workers = {workers}
# Imports out of the clock (as Inspect's runner imports inspect_ai first): a run of a tiny
# suite of other cases that sends nothing loads every module a run uses.
run(load_suite("affine", params={{"per_operator": "1"}}), ModelSpec("sim"),
    Limits(max_requests=0), folder=Path({folder!r} + "-warm"))

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

t0, c0 = time.perf_counter(), cpu()
if workers == 1:
    result = run(suite, ModelSpec("sim"), Limits(concurrency=64), folder=Path({folder!r}))
else:
    result = run(suite, ModelSpec("sim"), Limits(concurrency=64), folder=Path({folder!r}),
                 placement=Pool(workers))
wall, used = time.perf_counter() - t0, cpu() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(orjson.dumps({{"requests": result.counters.requests, "jobs": result.counters.jobs_done,
                    "wall_s": wall, "cpu_s": used, "rss_mb": rss, "worker_rss_mb": child_rss}}).decode())
"""

_SHARDS = """
import time, orjson
from pathlib import Path
from harness import ModelSpec, Shards, load_suite, merge, run
suite, parent = load_suite("affine", params={params!r}), Path({parent!r})
run(suite, ModelSpec("sim"), folder=Path({whole!r}))
for k in range(4):
    run(suite, ModelSpec("sim"), folder=parent, placement=Shards(4, k))
t0 = time.perf_counter()
merged = merge(parent)
first = time.perf_counter() - t0
before = (parent / "outputs.jsonl").read_bytes()
merge(parent)
again = (parent / "outputs.jsonl").read_bytes() == before

def outputs(folder):
    found = {{}}
    for line in (folder / "outputs.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        record.pop("run")
        record.pop("seq", None)
        found[(record["job"], record["decoder"])] = record
    return found

same = outputs(parent) == outputs(Path({whole!r}))
print(orjson.dumps({{"merge_s": first, "jobs": merged.jobs, "identical": same,
                    "merge_twice_same": again, "outputs": len(outputs(parent))}}).decode())
"""


def _span(values: list[float], digits: int = 1) -> str:
    low, high = min(values), max(values)
    return (
        f"{low:.{digits}f}"
        if round(low, digits) == round(high, digits)
        else (f"{low:.{digits}f}-{high:.{digits}f}")
    )


AUTO = os.cpu_count() or 1  # --workers auto: one process per core for the sim
SETTINGS = {"1": 1, "2": 2, "auto": AUTO}


def inprocess(
    tmp: Path, repeats: int = REPEATS, params: dict[str, str] | None = None
) -> dict[str, Any]:
    """1x with one, two and one-per-core workers, alternated; ranges of wall and CPU per
    request."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SETTINGS}
    for i in range(repeats):
        for workers, count in SETTINGS.items():
            folder = str(tmp / f"inproc-w{workers}-{i}")
            code = _RUN.format(params=params or {}, workers=count, folder=folder)
            runs[workers].append(child(code))
    out: dict[str, Any] = {
        "inproc_machine_load_1min": round(os.getloadavg()[0], 2),
        "inproc_cores": AUTO,
    }
    for workers, results in runs.items():
        wall = [r["wall_s"] / r["requests"] * 1e6 for r in results]
        cpu = [r["cpu_s"] / r["requests"] * 1e6 for r in results]
        out[f"inproc_w{workers}_requests"] = results[0]["requests"]
        out[f"inproc_w{workers}_wall_us_per_request"] = _span(wall)
        out[f"inproc_w{workers}_cpu_us_per_request"] = _span(cpu)
        out[f"inproc_w{workers}_median_wall_us"] = round(statistics.median(wall), 1)
        out[f"inproc_w{workers}_peak_rss_mb"] = round(max(r["rss_mb"] for r in results), 1)
        if SETTINGS[workers] > 1:
            worker_rss = max(r["worker_rss_mb"] for r in results)
            out[f"inproc_w{workers}_worker_peak_rss_mb"] = round(worker_rss, 1)
    return out


def hundred(tmp: Path) -> dict[str, Any]:
    """100x with two workers (the one-worker 100x run is the scale section's)."""
    r = child(_RUN.format(params={"repeats": "100"}, workers=2, folder=str(tmp / "x100-w2")))
    return {
        "x100_w2_requests": r["requests"],
        "x100_w2_wall_s": round(r["wall_s"], 2),
        "x100_w2_wall_us_per_request": round(r["wall_s"] / r["requests"] * 1e6, 1),
        "x100_w2_cpu_us_per_request": round(r["cpu_s"] / r["requests"] * 1e6, 1),
        "x100_w2_peak_rss_mb": round(r["rss_mb"], 1),
        "x100_w2_worker_peak_rss_mb": round(r["worker_rss_mb"], 1),
    }


def sharded(tmp: Path, params: dict[str, str] | None = None) -> dict[str, Any]:
    """4 shards merged against an unsharded run: identical outputs; the merge's time."""
    code = _SHARDS.format(
        parent=str(tmp / "sharded"), whole=str(tmp / "unsharded"), params=params or {}
    )
    r = child(code)
    if not (r["identical"] and r["merge_twice_same"]):
        raise RuntimeError(f"the merged run differs from the unsharded one: {r}")
    return {
        "sharded_4_outputs_identical": r["identical"],
        "sharded_4_merge_twice_unchanged": r["merge_twice_same"],
        "sharded_4_jobs": r["jobs"],
        "sharded_4_merge_s": round(r["merge_s"], 3),
    }


def _shared() -> Path | None:
    """The team's shared folder: beside the repository (CI), or beside a worktree's parent."""
    for candidate in (ROOT.parent / "shared", ROOT.parent.parent / "shared"):
        if (candidate / "bench" / "peer_inspect" / "runit.py").exists():
            return candidate
    return None


def peers(wall_us: dict[str, float]) -> dict[str, Any]:
    """Inspect AI in its own git-ignored venv (``.peer-venv``), and the ratios of its wall
    time per request to ours (median over the repeats) with 1, 2 and auto workers."""
    shared = _shared()
    if shared is None:
        return {"peers_skipped": "../shared/bench/peer_inspect not found"}
    venv = ROOT / ".peer-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "inspect-ai"], check=True)
    done = subprocess.run(
        [str(python), "runit.py", str(PEER_SAMPLES)],
        cwd=shared / "bench" / "peer_inspect",
        capture_output=True,
        text=True,
        check=True,
    )
    last = done.stdout.strip().splitlines()[-1]
    fields = dict(item.split("=", 1) for item in last.split())
    inspect_us = float(fields["per_request_us"])
    out: dict[str, Any] = {"peer_inspect_us_per_request": round(inspect_us)}
    for workers, ours in wall_us.items():
        out[f"peer_inspect_over_numericjev_w{workers}"] = round(inspect_us / ours, 1)
    return out


def run(
    tmp: Path, *, quick: bool, with_peers: bool, params: dict[str, str] | None = None
) -> dict[str, Any]:
    """``make bench``: the sections above (``quick``: no 100x, one repeat; ``params``: the
    affine suite's parameters, for a smaller suite)."""
    out = inprocess(tmp, 1 if quick else REPEATS, params)
    if not quick:
        out.update(hundred(tmp))
    out.update(sharded(tmp, params))
    if with_peers:
        median = {w: out[f"inproc_w{w}_median_wall_us"] for w in SETTINGS}
        out.update(peers(median))
    return out
