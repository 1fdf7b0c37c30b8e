"""Benchmark: reading a 100× run for ``analyze`` and ``report``, today beside before.

"Before" is the analysis of git revision ``BEFORE`` (issue 29's starting point: every
output, exchange and interval answer held as a column while the statistics ran, the job
viewer's probabilities as float32), extracted and run on the same 100× sim run of the scale
section, each measurement in a fresh interpreter (wall time and peak RSS of that process).
"Now" is this tree, three ways:

- ``--no-cache``: one pass over each log, nothing kept (every read from scratch), with and
  without the Probabilities section (without it, only the outputs and exchanges are read);
- first read: the same pass, then the columns written to ``RUN/.columns/``;
- kept: the columns read back (the logs unchanged since).

``analyze`` runs with the Probabilities section and 1,000 bootstrap replicates; ``report``
with the same, its figures and its HTML page (whose job viewer has columns of its own,
kept on its first build). Goals (issue 29): ``report`` under 300 MB, a first ``analyze``
under 15 s, ``analyze`` at 1000× under 1 GB on a first read. CPU seconds are given beside
wall time: on a shared VM their ratio is the steadier one. Each tree's kept files are
cleared before its first read (a tree never reads the other's: the key holds a digest of
the reading code), and both trees are measured the same six ways.
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
usage = resource.getrusage(resource.RUSAGE_SELF)
rss, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
print(orjson.dumps({{"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss}}).decode())
"""


_FIGURES = ("wall_s", "cpu_s", "peak_rss_mb")


def _measure(argv: list[str], tree: Path | None = None) -> dict[str, float]:
    found = child(_COMMAND.format(argv=argv), tree)
    return {key: round(found[key], 2 if key.endswith("_s") else 1) for key in _FIGURES}


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
        # The outputs and exchanges alone (issue 29's 1000× goal: under 1 GB on a first read).
        plain = [*analyze, "--no-cache", "--no-probabilities"]
        figures[f"analyze_no_probabilities_no_cache{suffix}"] = _measure(plain, tree)
        figures[f"analyze_first{suffix}"] = _measure(analyze, tree)
        figures[f"analyze_kept{suffix}"] = _measure(analyze, tree)
        # The run's columns are kept by now, the job viewer's not yet; then both are.
        figures[f"report_first{suffix}"] = _measure(report, tree)
        figures[f"report_kept{suffix}"] = _measure(report, tree)
    out: dict[str, Any] = {}
    for name, found in figures.items():
        for key in _FIGURES:
            out[f"reading_100x_{name}_{key}"] = found[key]
    for name in [n for n in figures if not n.endswith("_before")]:
        now, base = figures[name], figures[f"{name}_before"]
        out[f"reading_100x_{name}_over_before_time"] = round(now["wall_s"] / base["wall_s"], 3)
        out[f"reading_100x_{name}_over_before_cpu"] = round(now["cpu_s"] / base["cpu_s"], 3)
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
