"""The HTML pages of `report` and `diff --html`, opened in headless Chromium.

One browser for the module; small real sim runs (128 jobs). The pages must render their
tables, figures and job viewer, find a job through the filter, show its rounds, make no
request of any kind, and show log text (labels, expressions) as text, never as markup.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from analysis.loading.names import decoder_label
from tests.browser import chromium, not_blank, open_page
from tests.runhelpers import SMALL, cli, records

# Log text that would run if it ever reached the page as markup.
HOSTILE_EXPRESSION = "</script><script>window.__pwned=1</script><b>bold</b>"
HOSTILE_DOMAIN = "x</script><script>window.__pwned=2</script>"
HOSTILE_DECODER = "<img src=x onerror=window.__pwned=3>"


def _make_hostile(folder: Path) -> None:
    """Rename the bits decoder, the x0.01 domain and one case's expression in the logs."""
    requests = (folder / "requests.jsonl").read_bytes()
    first = records(folder / "requests.jsonl")[0]
    expression = first["request"]["state"]["expression"].encode()
    requests = requests.replace(b'"' + expression + b'"', b'"' + HOSTILE_EXPRESSION.encode() + b'"')
    requests = requests.replace(b'"bits/', b'"' + HOSTILE_DECODER.encode() + b"/")
    (folder / "requests.jsonl").write_bytes(requests)
    outputs = (folder / "outputs.jsonl").read_bytes()
    outputs = outputs.replace(b'"decoder":"bits"', b'"decoder":"' + HOSTILE_DECODER.encode() + b'"')
    outputs = outputs.replace(b'"domain":"x0.01"', b'"domain":"' + HOSTILE_DOMAIN.encode() + b'"')
    (folder / "outputs.jsonl").write_bytes(outputs)
    manifest = (folder / "manifest.json").read_bytes()
    manifest = manifest.replace(b'"bits"', b'"' + HOSTILE_DECODER.encode() + b'"')
    (folder / "manifest.json").write_bytes(manifest)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("html")
    runs = {"a": root / "a", "b": root / "b", "hostile": root / "hostile"}
    assert cli("run", *SMALL, "--run", str(runs["a"]), "--no-progress") == 0
    assert (
        cli("run", *SMALL, "--model", "sim:seed=7", "--run", str(runs["b"]), "--no-progress") == 0
    )
    shutil.copytree(runs["a"], runs["hostile"])
    _make_hostile(runs["hostile"])
    for name in ("a", "hostile"):
        assert cli("report", str(runs[name]), "--bootstrap", "200") == 0
    diff = root / "diff.html"
    args = ["diff", str(runs["a"]), str(runs["b"]), "--bootstrap", "200", "--html", str(diff)]
    assert cli(*args) == 0
    runs["diff"] = diff
    return runs


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserContext]:
    with chromium() as context:
        yield context


def _expected_matches(folder: Path, words: list[str]) -> int:
    """What the page's filter should find: every word in the job text or the decoder."""
    latest = {(r["job"], r["decoder"]): r for r in records(folder / "outputs.jsonl")}
    found = 0
    for r in latest.values():
        text = f"{r['job']} {r['case']} {r['family']}".lower()
        names = (r["decoder"].lower(), decoder_label(r["decoder"], "affine").lower())
        found += all(w in text or any(w in n for n in names) for w in words)
    return found


def test_report_page_renders_tables_figures_and_rounds(
    folders: dict[str, Path], browser: BrowserContext
) -> None:
    opened = open_page(browser, folders["a"] / "report" / "index.html")
    page = opened.page
    # The answer first: the page opens with the main table and its figure (NMAE), under the
    # SIMULATED warning; provenance is folded below, complete, and opens on a click.
    assert page.locator(".warning").first.inner_text().startswith("⚠ SIMULATED")
    assert page.locator("main section").nth(1).get_attribute("id") == "main"
    main = page.locator("#main figure.table")
    assert main.count() == 1 and main.first.locator("tbody tr").count() == 6
    assert page.locator("main figure.table").first.get_attribute("id") == "main-1"
    assert "NMAE" in page.locator("#main figure.plot figcaption").inner_text()
    provenance = page.locator("#provenance details")
    assert provenance.evaluate("d => d.open") is False
    assert not page.locator("#provenance table").is_visible()
    assert page.locator("#provenance summary").inner_text().startswith("Provenance: ")
    page.locator("#provenance summary").click()
    expect(page.locator("#provenance table")).to_be_visible()
    assert page.locator("#provenance tbody tr").count() >= 20
    assert page.locator("#tables figure.table").count() >= 3
    assert page.locator("#figures svg.figure").count() >= 3
    tables = main
    # Sorting a numeric column puts its smallest value first.
    header = tables.first.locator("thead th").nth(1)
    header.click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    column = [
        float(t.split()[0])
        for t in tables.first.locator("tbody tr td:nth-child(2)").all_inner_texts()
    ]
    assert column == sorted(column)
    # The filter finds a job; the chosen job shows each of its rounds.
    page.fill("#filter", "f1/ tree10 provided")
    n = _expected_matches(folders["a"], ["f1/", "tree10", "provided"])
    assert n == 8  # family 1: 4 domains × 2 orders in the provided condition
    expect(page.locator("#job-count")).to_have_text(re.compile(rf"^{n} of "))
    page.locator("#job-list tbody tr").first.click()
    rounds = page.locator("#job-detail .round")
    expect(rounds.first).to_be_visible()
    assert rounds.count() == 2  # a ten-way tree on 100 cells asks twice
    assert page.locator("#job-detail .tag.chosen").count() == 2
    assert page.locator("#job-detail .round table.options").first.locator("tbody tr").count() == 10
    assert "decoded" in page.locator("#job-detail .verdict").inner_text()
    assert not_blank(page.screenshot()) > 0.05
    assert opened.refused == [] and opened.errors == []


def test_report_page_shows_the_pit_histograms_and_the_coverage_plot(
    folders: dict[str, Path], browser: BrowserContext
) -> None:
    opened = open_page(browser, folders["a"] / "report" / "index.html")
    plots = opened.page.locator("#figures figure.plot")
    captions = plots.locator("figcaption").all_inner_texts()
    for name in ("PIT histogram", "Coverage of the central 50/80/90% intervals"):
        (caption,) = [c for c in captions if c.startswith(name)]
        assert "ours, not in the paper" in caption and "SIMULATED" in caption
        figure = plots.filter(has_text=caption)
        expect(figure.locator("svg.figure")).to_be_visible()
        drawn = figure.locator("svg.figure").text_content() or ""  # matplotlib keeps text as text
        assert "ours, not in the paper" in drawn and "SIMULATED" in drawn
    # Every decoder the Distributions section scored has its own PIT panel.
    pit = plots.filter(has_text="PIT histogram").locator("svg.figure").text_content() or ""
    for decoder in ("direct", "tree2", "tree4", "tree10"):
        assert decoder_label(decoder, "affine") in pit
    assert opened.refused == [] and opened.errors == []


def test_worst_case_rows_open_their_job(folders: dict[str, Path], browser: BrowserContext) -> None:
    opened = open_page(browser, folders["a"] / "report" / "index.html")
    row = opened.page.locator("#worst tr.link").first
    job = row.locator("td").first.inner_text()
    row.click()
    expect(opened.page.locator("#job-detail h3")).to_contain_text(job)
    assert "#job=" in opened.page.url
    assert opened.refused == [] and opened.errors == []


def test_log_text_is_shown_as_text_never_run(
    folders: dict[str, Path], browser: BrowserContext
) -> None:
    index = folders["hostile"] / "report" / "index.html"
    html = index.read_text()
    # Inside the JSON block `</script>` would end the element: it is written escaped.
    meta = html.split('<script type="application/json" id="meta">')[1].split("</script>")[0]
    assert "window.__pwned=2" in meta and "<" not in meta
    opened = open_page(browser, index)
    page = opened.page
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img").count() == 0
    options = page.locator("#f-domain option").all_inner_texts()
    assert HOSTILE_DOMAIN in options
    assert HOSTILE_DECODER in page.locator("#tables").inner_text()
    page.fill("#filter", "onerror")
    expect(page.locator("#job-count")).not_to_have_text(re.compile(r"^0 of"))
    # A job whose expression is hostile shows it literally in its rounds.
    page.fill("#filter", "")
    page.select_option("#f-decoder", "direct")
    first = records(folders["hostile"] / "requests.jsonl")[0]["job"]
    page.fill("#filter", first)
    expect(page.locator("#job-count")).to_have_text(re.compile(r"^1 of"))
    page.locator("#job-list tbody tr").first.click()
    # The state as sent: the expression, then the result in the provided condition.
    expect(page.locator("#job-detail .state").first).to_have_text(
        re.compile(rf"^expression: {re.escape(HOSTILE_EXPRESSION)}(\s+result: \S+)?$")
    )
    assert page.evaluate("() => window.__pwned") is None
    assert opened.refused == [] and opened.errors == []


def test_diff_page_shows_both_runs_side_by_side(
    folders: dict[str, Path], browser: BrowserContext
) -> None:
    opened = open_page(browser, folders["diff"])
    page = opened.page
    summary = page.locator("#provenance summary")
    assert "differ between runs" in summary.inner_text()  # closed, but says to open it
    summary.click()
    assert page.locator("#provenance thead th").all_inner_texts() == ["Field", "A", "B"]
    differing = page.locator("#provenance tr.differs th").all_inner_texts()
    assert "Model parameters (sim knobs)" in differing and "Run" in differing
    assert "Case hash" not in differing
    page.locator("#tables tr.link").first.click()
    sides = page.locator("#job-detail .side")
    expect(sides).to_have_count(2)
    assert sides.nth(0).locator("h3").inner_text().startswith("A · ")
    assert sides.nth(1).locator("h3").inner_text().startswith("B · ")
    assert sides.nth(1).locator(".round").count() >= 1
    assert not_blank(page.screenshot()) > 0.05
    assert opened.refused == [] and opened.errors == []
