"""The HTML report of a sim run at 1x and 100x: build time, peak RSS, file size, and the
time headless Chromium takes to open the page and to filter its 10^5-10^6 outputs.

Each build runs in a fresh interpreter (peak RSS is per process). The browser figures need
/usr/bin/chromium (``make test`` installs it); without it they are reported as skipped.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import child

# The logs are read, not columns kept by an earlier section (bench_reading measures those).
_BUILD = """
import os, resource, time, orjson
os.environ["NUMERICJEV_COLUMN_CACHE"] = "off"
from pathlib import Path
from analysis.loading.run import load_run
from analysis.rendering.report import select_path, write_report_files, write_report_page
from analysis.statistics.summary import analyze_run
folder = Path({folder!r})
t0 = time.perf_counter()
run = load_run(folder)
analysis = analyze_run(run, 1000)
written = write_report_files(analysis, select_path(run, None), folder / "report")
del analysis, run
t1 = time.perf_counter()
index = write_report_page(written, folder / "report")
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(orjson.dumps({{"report_s": t2 - t0, "html_s": t2 - t1, "peak_rss_mb": rss,
                    "html_mb": index.stat().st_size / 2**20}}).decode())
"""


def browse(page: Path, word: str) -> dict[str, float]:
    """Seconds to open ``page`` until its job list is drawn, and to filter it by ``word``."""
    from playwright.sync_api import expect

    from tests.browser import CHROMIUM, chromium, open_page

    if not CHROMIUM.is_file():
        return {}
    with chromium() as context:
        t0 = time.perf_counter()
        opened = open_page(context, page)
        opened_s = time.perf_counter() - t0
        count = opened.page.locator("#job-count")
        before = count.inner_text()
        t1 = time.perf_counter()
        opened.page.fill("#filter", word)
        expect(count).not_to_have_text(before, timeout=60_000)
        # The box waits 150 ms for more typing before it filters: not the page's work.
        filter_s = time.perf_counter() - t1 - 0.15
        assert re.match(r"^[\d,]+ of", count.inner_text()) and not opened.refused
    return {"open_s": opened_s, "filter_s": filter_s}


def run(folders: dict[str, Path]) -> dict[str, Any]:
    """Build and open the page of each run folder, named by scale ("1x", "100x")."""
    out: dict[str, Any] = {}
    for scale, folder in folders.items():
        built = child(_BUILD.format(folder=str(folder)))
        opened = browse(folder / "report" / "index.html", "f12 minus50 tree10")
        for key, value in {**built, **opened}.items():
            out[f"html_{scale}_{key}"] = round(value, 3 if key.endswith("_s") else 1)
        if not opened:
            out[f"html_{scale}_browser"] = "skipped: no /usr/bin/chromium"
    return out


if __name__ == "__main__":  # python -m benchmarks.bench_html RUN [RUN...]
    with tempfile.TemporaryDirectory():
        print(orjson.dumps(run({Path(p).name: Path(p) for p in sys.argv[1:]})).decode())
