"""Headless Chromium for the HTML report tests: Debian's /usr/bin/chromium driven by
Playwright (no browser download is possible), every request but the page's own refused."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib import image
from playwright.sync_api import BrowserContext, Page, Route, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING = (
    f"the HTML report tests need Chromium at {CHROMIUM}: `make test` installs it as root "
    "(apt-get install -y chromium); without root run `sudo apt-get install -y chromium`"
)


@dataclass
class OpenedPage:
    """A page opened from a file, with every request it tried to make besides itself."""

    page: Page
    url: str
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def chromium() -> Iterator[BrowserContext]:
    """One headless Chromium with a fresh profile; fails (never skips) when it is missing."""
    assert CHROMIUM.is_file(), MISSING
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def open_page(context: BrowserContext, path: Path) -> OpenedPage:
    """Open ``path``; abort and record any request to anything but the file itself."""
    url = path.resolve().as_uri()
    opened = OpenedPage(context.new_page(), url)

    def route(r: Route) -> None:
        if r.request.url == url:
            r.continue_()
        else:
            opened.refused.append(r.request.url)
            r.abort()

    opened.page.route("**/*", route)
    opened.page.on("pageerror", lambda e: opened.errors.append(str(e)))
    opened.page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    opened.page.goto(url)
    # The script sets data-ready once the job data is inflated and the list is drawn.
    opened.page.wait_for_selector("body[data-ready]", state="attached", timeout=30_000)
    return opened


def not_blank(png: bytes) -> float:
    """Share of pixels that differ from the most common colour (0 for a blank shot)."""
    pixels = image.imread(io.BytesIO(png), format="png")[..., :3].reshape(-1, 3)
    quantised = np.round(pixels * 255).astype(np.int64) @ np.array([65536, 256, 1])
    counts = np.bincount(quantised)
    return 1.0 - counts.max() / len(quantised)


def screenshot(
    page_path: Path, out: Path, words: str, width: int = 1100, height: int = 1000
) -> int:
    """Save a PNG of ``page_path``'s job viewer showing the first job ``words`` finds (the
    docs' picture); return its size in bytes."""
    with chromium() as context:
        opened = open_page(context, page_path)
        page = opened.page
        page.set_viewport_size({"width": width, "height": height})
        page.fill("#filter", words)
        page.wait_for_timeout(400)  # the box filters 150 ms after the last keystroke
        page.locator("#job-list tbody tr").first.click()
        page.locator("#job-detail .round").first.wait_for()
        page.locator("#jobs").scroll_into_view_if_needed()
        page.evaluate("() => document.getElementById('jobs').scrollIntoView()")
        out.write_bytes(page.screenshot())
        assert not opened.refused and not opened.errors
    return out.stat().st_size


if __name__ == "__main__":  # python -m tests.browser RUN/report/index.html OUT.png WORDS
    import sys

    print(screenshot(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
