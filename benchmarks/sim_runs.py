"""The in-process sim runs the benchmarks time and read: one script, run in a child process.

Apart from ``benchmarks.__main__`` so that a bench that needs a 100x run
(``bench_first_reads``) imports it without importing the runner that imports the bench.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.processes import child

RUN = """
import resource, time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, load_suite, run
suite = load_suite("affine", params={params!r})
t0, c0 = time.perf_counter(), time.process_time()
result = run(suite, ModelSpec("sim"), Limits(concurrency={concurrency}), folder=Path({folder!r}))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c = result.counters
print(orjson.dumps({{"jobs": c.jobs_done, "requests": c.requests, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss}}).decode())
"""


def run_100x(tmp: Path) -> dict[str, Any]:
    """Run the 100x affine sim (102,400 jobs) into ``tmp / "x100"``; its timings."""
    return child(RUN.format(params={"repeats": "100"}, folder=str(tmp / "x100"), concurrency=64))


def make_100x(tmp: Path) -> Path:
    """The 100x affine sim run (102,400 jobs) in ``tmp / "x100"``."""
    run_100x(tmp)
    return tmp / "x100"
