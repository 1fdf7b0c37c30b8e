"""``make bench``: the harness's performance figures; the last line is one JSON object.

Sections: the affine suite on the in-process sim (per-request overhead), through serve-sim
on loopback with added latency (against the ideal wall time and a bare aiohttp client), the
harness's own CPU per exchange with the network replaced by recorded replies
(``bench_overhead``), serve-sim's own requests per
second on each wire format (``bench_serve``; ``python -m benchmarks.bench_serve --against
REV`` compares with another revision's server), the affine suite through serve-sim on each
wire format beside System One (``bench_wires``), the probe's time estimate beside the
real run (``bench_probe``), resume start-up on a finished
run, scale at 1x and 100x jobs (wall time and peak RSS, each in a fresh process) with the
Probabilities section on those two runs, one and two worker processes and a 4-shard run
merged (``bench_spread``), issue 29's first-read goals beside main's figures on the same
100x run (and a 1000x run given with ``--x1000``; ``bench_first_reads``), what the
Distributions section adds to a first analyze at 100x (``bench_scores``), and the analysis
timings. ``--quick`` skips the 100x runs;
``--peers`` also measures Inspect AI on the same shape of work (installs it into the
git-ignored ``.peer-venv`` the first time) for the in-process ratio.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import child, last_json
from benchmarks.sim_runs import RUN as _RUN
from benchmarks.sim_runs import run_100x as _run_100x

# Start-up of a resume: a request cap of zero stops it at the first request it would send,
# after the manifest check, the log scan and the first job's replay.
_RESUME = """
import time, orjson
from pathlib import Path
from harness import resume
t0 = time.perf_counter()
result = resume(Path({folder!r}), max_requests=0)
print(orjson.dumps({{"startup_s": time.perf_counter() - t0, "pending": result.pending}}).decode())
"""


def bench_inprocess(tmp: Path, params: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole affine suite on the in-process sim (no latency; ``params``: the suite's
    parameters, for a smaller one)."""
    result = child(_RUN.format(params=params or {}, folder=str(tmp / "x1"), concurrency=64))
    per_request = result["wall_s"] / result["requests"] * 1e6
    return {
        "inprocess_requests": result["requests"],
        "inprocess_wall_s": round(result["wall_s"], 3),
        "inprocess_requests_per_s": round(result["requests"] / result["wall_s"], 1),
        "inprocess_us_per_request": round(per_request, 1),
        # CPU time is less sensitive than wall time to whatever else the machine is doing.
        "inprocess_cpu_us_per_request": round(result["cpu_s"] / result["requests"] * 1e6, 1),
    }


def bench_resume(tmp: Path, name: str = "x1") -> dict[str, Any]:
    """Seconds from start to the point where the first request could be sent."""
    result = child(_RESUME.format(folder=str(tmp / name)))
    return {
        f"resume_startup_s_{name}": round(result["startup_s"], 3),
        f"resume_pending_{name}": result["pending"],
    }


def bench_scale(tmp: Path) -> dict[str, Any]:
    """1x and 100x (102,400 jobs) on the in-process sim: wall time and peak RSS."""
    one = child(_RUN.format(params={}, folder=str(tmp / "s1"), concurrency=64))
    hundred = _run_100x(tmp)
    out = {
        "scale_1x_jobs": one["jobs"],
        "scale_1x_wall_s": round(one["wall_s"], 2),
        "scale_1x_peak_rss_mb": round(one["peak_rss_mb"], 1),
        "scale_100x_jobs": hundred["jobs"],
        "scale_100x_wall_s": round(hundred["wall_s"], 2),
        "scale_100x_wall_us_per_request": round(hundred["wall_s"] / hundred["requests"] * 1e6, 1),
        "scale_100x_cpu_us_per_request": round(hundred["cpu_s"] / hundred["requests"] * 1e6, 1),
        "scale_100x_peak_rss_mb": round(hundred["peak_rss_mb"], 1),
        "scale_time_ratio_100x_over_1x": round(hundred["wall_s"] / one["wall_s"], 1),
        "scale_100x_log_mb": round((tmp / "x100" / "requests.jsonl").stat().st_size / 2**20, 1),
    }
    out.update(bench_resume(tmp, "x100"))
    # The Probabilities section on the same two runs (fresh processes; see the module).
    out.update(
        importlib.import_module("benchmarks.bench_probabilities").run(tmp / "s1", tmp / "x100")
    )
    # Reading the 100× run for analyze and report: this tree beside the one before issue 24.
    out.update(importlib.import_module("benchmarks.bench_reading").run(tmp / "x100", tmp))
    # The same runs' logs compressed: bytes per exchange, compact, analyze on zstd frames.
    out.update(importlib.import_module("benchmarks.bench_logs").run(tmp / "s1", tmp / "x100", tmp))
    return out


def bench_first_reads(tmp: Path, thousand: Path | None) -> dict[str, Any]:
    """Issue 29's analysis goals on the scale section's 100x run (and a given 1000x run),
    beside main's figures: each figure is printed with its goal."""
    module = importlib.import_module("benchmarks.bench_first_reads")
    figures: dict[str, Any] = module.run(tmp / "x100", tmp, thousand)
    for line in module.lines(figures):
        print(f"  {line}", file=sys.stderr)
    return figures


def bench_scores(tmp: Path) -> dict[str, Any]:
    """Issue 41's cost: the Distributions section's share of a first analyze at 100x (a
    ratio inside one run; goal at most 1.2) and its memory at 1x and 100x."""
    module = importlib.import_module("benchmarks.bench_scores")
    figures: dict[str, Any] = module.run(tmp / "x100", tmp / "s1", tmp)
    for line in module.lines(figures):
        print(f"  {line}", file=sys.stderr)
    return figures


def bench_http(tmp: Path, quick: bool) -> dict[str, Any]:
    """The affine suite through serve-sim on loopback with 50 ms latency at concurrency 32
    and 256 (``quick``: 256 only): the harness against a bare aiohttp client."""
    try:
        module = importlib.import_module("benchmarks.bench_http")
    except ImportError as exc:
        return {"http_skipped": f"benchmarks.bench_http unavailable: {exc}"}
    return module.run(tmp, (256,) if quick else (32, 256))


def bench_overhead(quick: bool) -> dict[str, Any]:
    """The harness's own CPU per exchange, the network replaced by recorded replies (hot;
    and cold, the loop idling 50 ms between waves, unless ``quick``). In a child process:
    the replies it holds would otherwise count in the peak RSS of every later section's
    child (Linux carries a process's peak RSS across fork and exec)."""
    delays = ["--delay-ms", "0"] if quick else []
    return last_json([sys.executable, "-m", "benchmarks.bench_overhead", "--json", *delays])


def bench_serve(tmp: Path) -> dict[str, Any]:
    """serve-sim's requests per second on each wire format at concurrency 64 and 256."""
    try:
        module = importlib.import_module("benchmarks.bench_serve")
    except ImportError as exc:
        return {"serve_skipped": f"benchmarks.bench_serve unavailable: {exc}"}
    return module.run(tmp)


def bench_probe(tmp: Path, quick: bool) -> dict[str, Any]:
    """The probe's time estimate beside the real run, on System One and the chat wire."""
    from benchmarks.bench_probe import run

    return run(tmp, quick)


def bench_wires(tmp: Path, quick: bool) -> dict[str, Any]:
    """The affine suite through serve-sim on each wire format, beside System One."""
    try:
        module = importlib.import_module("benchmarks.bench_wires")
    except ImportError as exc:
        return {"wires_skipped": f"benchmarks.bench_wires unavailable: {exc}"}
    return module.run(tmp, quick)


def bench_spread(tmp: Path, quick: bool, peers: bool) -> dict[str, Any]:
    """1x (and 100x) with 1 and 2 workers, 4 shards merged, and Inspect AI with --peers."""
    module = importlib.import_module("benchmarks.bench_spread")
    return module.run(tmp, quick=quick, with_peers=peers)


def bench_cache(tmp: Path) -> dict[str, Any]:
    """The request cache: a second affine run against serve-sim at 50 ms (bench_cache)."""
    return importlib.import_module("benchmarks.bench_cache").run(tmp / "cache")


def bench_analysis() -> dict[str, Any]:
    """Full affine analysis and a diff (synthetic run folders)."""
    try:
        module = importlib.import_module("benchmarks.bench_analysis")
    except ImportError as exc:
        return {"analysis_skipped": f"benchmarks.bench_analysis unavailable: {exc}"}
    return module.run()


def bench_html(tmp: Path, quick: bool) -> dict[str, Any]:
    """The HTML report at 1x (and 100x): build time, peak RSS, size, open and filter."""
    try:
        module = importlib.import_module("benchmarks.bench_html")
    except ImportError as exc:
        return {"html_skipped": f"benchmarks.bench_html unavailable: {exc}"}
    if not (tmp / "s1").exists():  # --quick: the scale section did not make the 1x run
        child(_RUN.format(params={}, folder=str(tmp / "s1"), concurrency=64))
    folders = {"1x": tmp / "s1"} if quick else {"1x": tmp / "s1", "100x": tmp / "x100"}
    return module.run(folders)


def main() -> None:
    """Run every section and print the figures, then one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 100x scale run")
    parser.add_argument(
        "--peers", action="store_true", help="also run Inspect AI (its own venv) for the ratio"
    )
    parser.add_argument(
        "--x1000",
        type=Path,
        metavar="PATH",
        help="a 1000x run folder for issue 29's 1000x figures (or NUMERICJEV_BENCH_1000X; "
        "never made here: it takes 38 min); without it that part says it skipped",
    )
    args = parser.parse_args()
    # Every section but the request cache's measures exchanges actually sent: a served
    # model's answers would otherwise come from the cache on the second pair of a section
    # (and from the user's own cache). The variable is read by the command lines of child
    # processes (bench_cache passes --cache read-write with a cache file of its own); the
    # sections that call the library pass RunSettings(cache="off").
    os.environ["NUMERICJEV_CACHE_MODE"] = "off"
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nj-bench-") as name:
        tmp = Path(name)
        sections = [
            ("in-process sim", lambda: bench_inprocess(tmp)),
            ("resume", lambda: bench_resume(tmp)),
        ]
        sections.append(("loopback HTTP", lambda: bench_http(tmp, args.quick)))
        sections.append(("harness's own work", lambda: bench_overhead(args.quick)))
        sections.append(("serve-sim rps", lambda: bench_serve(tmp)))
        sections.append(("wire formats", lambda: bench_wires(tmp, args.quick)))
        sections.append(("probe estimate", lambda: bench_probe(tmp, args.quick)))
        if not args.quick:
            sections.append(("scale 1x/100x", lambda: bench_scale(tmp)))
            sections.append(("first reads", lambda: bench_first_reads(tmp, args.x1000)))
            sections.append(("proper scores", lambda: bench_scores(tmp)))
        sections.append(("workers, shards", lambda: bench_spread(tmp, args.quick, args.peers)))
        sections.append(("request cache", lambda: bench_cache(tmp)))
        sections.append(("analysis", bench_analysis))
        sections.append(("html report", lambda: bench_html(tmp, args.quick)))
        for title, section in sections:
            t0 = time.perf_counter()
            result = section()
            print(f"{title}: {result}  ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
            figures.update(result)
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
