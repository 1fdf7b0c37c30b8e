"""Benchmark: reading a 100× run for ``analyze`` and ``report``, today beside before.

"Before" is the analysis of git revision ``BEFORE`` (issue 29's starting point: every
output, exchange and interval answer held as a column while the statistics ran, the job
viewer's probabilities as float32), extracted and run on the same 100× sim run of the scale
section, each measurement in a fresh interpreter (wall time and peak RSS of that process).
"Now" is this tree, three ways:

- ``--no-cache``: one pass over each log, nothing kept (every read from scratch);
- first read: the same pass, then the columns written to ``RUN/.columns/``;
- kept: the columns read back (the logs unchanged since).

``analyze`` runs with the Probabilities section and 1,000 bootstrap replicates; ``report``
with the same, its figures and its HTML page (whose job viewer has columns of its own,
kept on its first build). Goals (issue 29): ``report`` under 300 MB, a first ``analyze``
under 15 s. Each tree's kept files are cleared before its first read (a tree never reads
the other's: the key holds a digest of the reading code), and both trees are measured the
same five ways.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.processes import child, extract

__all__ = ["BEFORE", "run"]

BEFORE = "619941e"  # main before issue 29's memory work

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
    figures: dict[str, dict[str, float]] = {}
    for tree, suffix in ((before, "_before"), (None, "")):
        # Each tree's kept files carry its code digest: the other's are never read.
        shutil.rmtree(kept, ignore_errors=True)
        figures[f"analyze_no_cache{suffix}"] = _measure([*analyze, "--no-cache"], tree)
        figures[f"analyze_first{suffix}"] = _measure(analyze, tree)
        figures[f"analyze_kept{suffix}"] = _measure(analyze, tree)
        # The run's columns are kept by now, the job viewer's not yet; then both are.
        figures[f"report_first{suffix}"] = _measure(report, tree)
        figures[f"report_kept{suffix}"] = _measure(report, tree)
    out: dict[str, Any] = {}
    for name, found in figures.items():
        out[f"reading_100x_{name}_wall_s"] = found["wall_s"]
        out[f"reading_100x_{name}_peak_rss_mb"] = found["peak_rss_mb"]
    for name in [n for n in figures if not n.endswith("_before")]:
        now, base = figures[name], figures[f"{name}_before"]
        out[f"reading_100x_{name}_over_before_time"] = round(now["wall_s"] / base["wall_s"], 3)
        out[f"reading_100x_{name}_over_before_rss"] = round(
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
