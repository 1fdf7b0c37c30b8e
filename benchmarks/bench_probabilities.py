"""Benchmark: the Probabilities section on the scale section's 1× and 100× sim runs.

Each measurement runs in a fresh interpreter (wall time and peak RSS of that process):

- the section alone: ``load_answers`` (outputs.jsonl, then requests.jsonl, streamed) and
  ``probability_stats``.

A whole ``numericjev analyze`` of the 100× run with and without the section is measured by
``bench_first_reads`` (the same figure names, beside main's).

Target: peak RSS well under 1 GB at 100× (requests.jsonl is ~1.6 GB there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.processes import child

__all__ = ["run"]

_SECTION = """
import resource, time, orjson
from analysis.loading.probabilities.answers import load_answers
from analysis.statistics.probabilities import probability_stats
t0 = time.perf_counter()
log = load_answers({folder!r})
stats = probability_stats(log, ("direct", "tree2", "tree4", "tree10"), ("arithmetic", "provided"))
wall = time.perf_counter() - t0
assert all(g.holds for g in stats.divergence)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(orjson.dumps({{"wall_s": wall, "peak_rss_mb": rss, "questions": len(log.q_unit)}}).decode())
"""

# A whole ``numericjev analyze`` in a fresh process (``bench_logs`` runs it on compressed logs).
_ANALYZE = """
import contextlib, io, resource, time, orjson
from analysis.cli import main
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["analyze", {folder!r}, "--bootstrap", "1000", *{extra!r}])
assert code == 0
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(orjson.dumps({{"wall_s": wall, "peak_rss_mb": rss}}).decode())
"""


def run(one: Path, hundred: Path) -> dict[str, Any]:
    """Time the section on run folders ``one`` (1×) and ``hundred`` (100×)."""
    small = child(_SECTION.format(folder=str(one)))
    large = child(_SECTION.format(folder=str(hundred)))
    return {
        "probabilities_1x_wall_s": round(small["wall_s"], 2),
        "probabilities_1x_peak_rss_mb": round(small["peak_rss_mb"], 1),
        "probabilities_100x_wall_s": round(large["wall_s"], 2),
        "probabilities_100x_peak_rss_mb": round(large["peak_rss_mb"], 1),
        "probabilities_100x_questions": large["questions"],
        "probabilities_time_ratio_100x_over_1x": round(large["wall_s"] / small["wall_s"], 1),
    }
