"""Benchmark: what the Distributions section (issue 41's proper scores) adds to a first
``analyze``, as a ratio measured inside one run, and the memory it takes.

Each figure is one ``numericjev analyze RUN --bootstrap 1000`` in a fresh interpreter on a
hard-link copy of the run folder (a first read: nothing kept in ``RUN/.columns`` yet), with
``distribution_stats`` wrapped by a timer: the ratio is the command's wall time over the
same wall less the section's time (the analyze as it would be without the section, in the
same run, on the same load). Memory: the process's peak RSS before the section began, the
peak while it ran (``VmHWM`` reset on entry through ``/proc/self/clear_refs``) and what it
added over the RSS at its entry; the process's peak is the larger of the two peaks.
Goal (issue 41): the ratio at 100x at most 1.2.

Run alone: ``python -m benchmarks.bench_scores [--x100 PATH] [--x1 PATH]`` (without
``--x100`` the 100x sim run is made first, about ten minutes).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_first_reads import hard_link_copy
from benchmarks.processes import child

__all__ = ["GOAL", "lines", "measure", "run"]

GOAL = 1.2  # analyze with the section / without it, at 100x

_COMMAND = """
import contextlib, io, time, orjson
import analysis.statistics.probabilities as probabilities
from analysis.cli import main
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
real = probabilities.distribution_stats
seen = {{"s": 0.0, "calls": 0, "peak_before_mb": 0.0, "peak_during_mb": 0.0, "added_mb": 0.0}}
def timed(*args, **kwargs):
    rss = status("VmRSS:")
    seen["peak_before_mb"] = max(seen["peak_before_mb"], status("VmHWM:"))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM back to the RSS now: what follows is the section's peak
    t0 = time.perf_counter()
    try:
        return real(*args, **kwargs)
    finally:
        seen["s"] += time.perf_counter() - t0
        seen["calls"] += 1
        during = status("VmHWM:")
        seen["peak_during_mb"] = max(seen["peak_during_mb"], during)
        seen["added_mb"] = max(seen["added_mb"], during - rss)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
probabilities.distribution_stats = timed
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    code = main({argv!r})
assert code == 0
wall = time.perf_counter() - t0
seen["peak_rss_mb"] = max(seen["peak_before_mb"], seen["peak_during_mb"], status("VmHWM:"))
print(orjson.dumps({{"wall_s": wall, **seen}}).decode())
"""


def measure(folder: Path, tmp: Path, name: str, tree: Path | None = None) -> dict[str, Any]:
    """One first ``analyze`` of ``folder`` (on a hard-link copy) with the section timed
    (``tree``: another revision's source, as ``benchmarks.processes.extract`` made it)."""
    copy = tmp / f"scores-{name}"
    shutil.rmtree(copy, ignore_errors=True)
    hard_link_copy(folder, copy)
    try:
        found = child(_COMMAND.format(argv=["analyze", str(copy), "--bootstrap", "1000"]), tree)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    if not found["calls"]:  # timing nothing would report a ratio of 1: refuse instead
        raise RuntimeError(f"analyze of {folder} never computed the Distributions section")
    wall, spent = found["wall_s"], found["s"]
    return {
        f"scores_{name}_analyze_wall_s": round(wall, 2),
        f"scores_{name}_distributions_s": round(spent, 2),
        f"scores_{name}_ratio": round(wall / (wall - spent), 3) if wall > spent else None,
        f"scores_{name}_calls": found["calls"],
        f"scores_{name}_peak_rss_mb": round(found["peak_rss_mb"], 1),
        f"scores_{name}_peak_before_distributions_mb": round(found["peak_before_mb"], 1),
        f"scores_{name}_peak_during_distributions_mb": round(found["peak_during_mb"], 1),
        f"scores_{name}_distributions_added_mb": round(found["added_mb"], 1),
    }


def run(hundred: Path, one: Path | None, tmp: Path) -> dict[str, Any]:
    """The section's share of a first analyze at 100x (and at 1x, for its memory's growth)."""
    out: dict[str, Any] = {}
    if one is not None:
        out.update(measure(one, tmp, "1x"))
    out.update(measure(hundred, tmp, "100x"))
    return out


def lines(figures: dict[str, Any]) -> list[str]:
    """Each figure, the 100x ratio beside its goal."""
    shown = []
    for key, value in figures.items():
        line = f"{key}: {value}"
        if key == "scores_100x_ratio" and value is not None:
            line += f"  goal: at most {GOAL:g}: {'met' if value <= GOAL else 'NOT met'}"
        shown.append(line)
    return shown


def main() -> None:
    """Measure, print each figure (the ratio with its goal), then one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scores")
    parser.add_argument("--x100", type=Path, help="a 100x affine sim run (default: make one)")
    parser.add_argument("--x1", type=Path, help="a 1x affine sim run (memory at 1x beside 100x)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nj-bench-scores-") as name:
        tmp = Path(name)
        hundred = args.x100
        if hundred is None:
            from benchmarks.sim_runs import make_100x

            hundred = make_100x(tmp)
        figures = run(hundred, args.x1, tmp)
    for line in lines(figures):
        print(line, file=sys.stderr)
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
