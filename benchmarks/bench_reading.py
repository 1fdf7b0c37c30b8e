"""Benchmark: reading a 100× run for ``analyze`` and ``report``, today beside before.

"Before" is the analysis of git revision ``BEFORE`` (each log read two to four times, once
per reader, lists of rows; issue 24's starting point), extracted and run on the same 100×
sim run of the scale section, each measurement in a fresh interpreter (wall time and peak
RSS of that process). "Now" is this tree, three ways:

- ``--no-cache``: one pass over each log, nothing kept (every read from scratch);
- first read: the same pass, then the columns written to ``RUN/.columns/``;
- kept: the columns read back (the logs unchanged since).

``analyze`` runs with the Probabilities section and 1,000 bootstrap replicates; ``report``
with the same, its figures and its HTML page (whose job viewer has columns of its own,
kept on its first build). Goals (issue 24): ``analyze`` under 5 s, ``report`` under 300 MB.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.processes import child, extract

__all__ = ["BEFORE", "run"]

BEFORE = "a1b3324"  # main before issue 24's reading work

_COMMAND = """
import contextlib, io, resource, time, orjson
from analysis.cli import main
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    code = main({argv!r})
assert code == 0
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(orjson.dumps({{"wall_s": wall, "peak_rss_mb": rss}}).decode())
"""


def _measure(argv: list[str], tree: Path | None = None) -> dict[str, float]:
    found = child(_COMMAND.format(argv=argv), tree)
    return {"wall_s": round(found["wall_s"], 2), "peak_rss_mb": round(found["peak_rss_mb"], 1)}


def run(hundred: Path, tmp: Path) -> dict[str, Any]:
    """The figures above for the 100× run folder ``hundred``."""
    before = extract(BEFORE, tmp / "before", ("runfolder", "analysis"))
    folder = str(hundred)
    kept = hundred / ".columns"
    shutil.rmtree(kept, ignore_errors=True)
    analyze = ["analyze", folder, "--bootstrap", "1000"]
    report = ["report", folder, "--bootstrap", "1000", "--out", str(tmp / "report")]
    figures = {
        "analyze_before": _measure(analyze, before),
        "analyze_no_cache": _measure([*analyze, "--no-cache"]),
        "analyze_first": _measure(analyze),
        "analyze_kept": _measure(analyze),
        "report_before": _measure(report, before),
        "report_first": _measure(report),  # the run's columns kept, the viewer's not yet
        "report_kept": _measure(report),
    }
    out: dict[str, Any] = {}
    for name, found in figures.items():
        out[f"reading_100x_{name}_wall_s"] = found["wall_s"]
        out[f"reading_100x_{name}_peak_rss_mb"] = found["peak_rss_mb"]
    for command in ("analyze", "report"):
        base = figures[f"{command}_before"]
        for way in ("no_cache", "first", "kept"):
            now = figures.get(f"{command}_{way}")
            if now is None:
                continue
            out[f"reading_100x_{command}_{way}_over_before_time"] = round(
                now["wall_s"] / base["wall_s"], 3
            )
            out[f"reading_100x_{command}_{way}_over_before_rss"] = round(
                now["peak_rss_mb"] / base["peak_rss_mb"], 3
            )
    out["reading_100x_kept_mb"] = round(sum(p.stat().st_size for p in kept.iterdir()) / 2**20, 1)
    shutil.rmtree(tmp / "report", ignore_errors=True)
    return out


if __name__ == "__main__":
    import tempfile

    import orjson

    with tempfile.TemporaryDirectory(prefix="nj-bench-reading-") as name:
        results = run(Path(sys.argv[1]), Path(name))
    for key, value in results.items():
        print(f"{key}: {value}")
    print(orjson.dumps(results).decode())
