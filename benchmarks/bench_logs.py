"""Benchmark: run-folder logs compressed (``runfolder.zlog``), beside the plain ones.

On the scale section's 1x and 100x sim runs (plain logs):

- bytes per exchange of ``requests.jsonl`` plain, written with ``--compress`` (a 1x run,
  one zstd frame per flush), and compacted (``numericjev compact``, 1 MiB frames);
- ``compact`` itself at 100x (wall time);
- ``numericjev analyze --no-probabilities`` (1,000 replicates) on the 100x run plain and
  compacted, each in a fresh process: what reading zstd frames adds to the analysis.

Run directly with ``python -m benchmarks.bench_logs ONE_X HUNDRED_X`` (two run folders).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_probabilities import _ANALYZE
from benchmarks.processes import child

__all__ = ["run"]

_COMPRESSED_RUN = """
import time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, RunSettings, load_suite, run
t0 = time.perf_counter()
result = run(load_suite("affine", params={params!r}), ModelSpec("sim"), Limits(concurrency=64),
                   folder=Path({folder!r}), settings=RunSettings(compress=True))
print(orjson.dumps({{"wall_s": time.perf_counter() - t0, "requests": result.counters.requests}}).decode())
"""


def _per_exchange(folder: Path, name: str, exchanges: int) -> float:
    return round((folder / name).stat().st_size / exchanges, 1)


def _exchanges(folder: Path) -> int:
    with (folder / "requests.jsonl").open("rb") as handle:
        return sum(1 for _ in handle)


def run(
    one: Path, hundred: Path, tmp: Path, params: dict[str, str] | None = None
) -> dict[str, Any]:
    """The figures above; ``one`` and ``hundred`` are plain 1x and 100x sim runs (``params``:
    the compressed run's suite parameters, for a smaller one than ``one``'s default)."""
    from runfolder.compact import compact_run

    out: dict[str, Any] = {}
    n1 = _exchanges(one)
    out["logs_1x_plain_bytes_per_exchange"] = _per_exchange(one, "requests.jsonl", n1)
    packed = tmp / "x1-compressed"
    plain_run = child(_COMPRESSED_RUN.format(folder=str(packed), params=params or {}))
    out["logs_1x_run_compress_wall_s"] = round(plain_run["wall_s"], 2)
    out["logs_1x_run_compress_bytes_per_exchange"] = _per_exchange(
        packed, "requests.jsonl.zst", plain_run["requests"]
    )
    n100 = _exchanges(hundred)
    out["logs_100x_plain_bytes_per_exchange"] = _per_exchange(hundred, "requests.jsonl", n100)
    copy = tmp / "x100-compacted"
    shutil.copytree(hundred, copy, ignore=shutil.ignore_patterns("report", "export"))
    t0 = time.perf_counter()
    compact_run(copy)
    out["logs_100x_compact_wall_s"] = round(time.perf_counter() - t0, 2)
    out["logs_100x_compacted_bytes_per_exchange"] = _per_exchange(copy, "requests.jsonl.zst", n100)
    for side, folder in (("plain", hundred), ("compacted", copy)):
        extra = ["--no-probabilities", "--no-cache"]  # the logs read, not kept columns
        analysed = child(_ANALYZE.format(folder=str(folder), extra=extra))
        out[f"logs_100x_analyze_{side}_s"] = round(analysed["wall_s"], 2)
        out[f"logs_100x_analyze_{side}_peak_rss_mb"] = round(analysed["peak_rss_mb"], 1)
    out["logs_100x_analyze_compacted_over_plain"] = round(
        out["logs_100x_analyze_compacted_s"] / out["logs_100x_analyze_plain_s"], 2
    )
    shutil.rmtree(copy)
    return out


if __name__ == "__main__":
    import tempfile

    import orjson

    with tempfile.TemporaryDirectory(prefix="nj-bench-logs-") as name:
        figures = run(Path(sys.argv[1]), Path(sys.argv[2]), Path(name))
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(orjson.dumps(figures).decode())
