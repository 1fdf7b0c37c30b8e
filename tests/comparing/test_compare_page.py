"""The comparison's HTML page (``DIR/index.html``) in headless Chromium."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from tests.browser import chromium, not_blank, open_page
from tests.runhelpers import cli


def test_comparison_page_shows_every_run_the_verdicts_and_the_models_side_by_side(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cmp"
    assert cli("compare", "--models", "sim,sim:seed=7", "--suites", "exploratory,historical",
               "--out", str(folder), "--no-progress") == 0  # fmt: skip
    with chromium() as browser:
        opened = open_page(browser, folder / "index.html")
        page = opened.page
        # The answer first: the first table is the verdict table, coloured by verdict, then
        # the figure of the paired differences; provenance is folded below.
        assert page.locator("main figure.table").first.get_attribute("id") == "verdicts-1"
        # The verdict is the first column, and the table fits a 1,280 px window unscrolled.
        assert page.locator("#verdicts thead th").first.inner_text().startswith("Verdict")
        wide = "s => [s.scrollWidth, s.clientWidth]"
        scroll, shown = page.locator("#verdicts figure.table .scroll").evaluate(wide)
        assert scroll <= shown
        cells = page.locator("#verdicts td.verdict-none")
        assert cells.count() >= 1 and cells.first.inner_text().startswith(
            ("no clear difference", "no verdict")
        )
        # Beside each "no clear difference": what the comparison could have seen.
        unclear = page.locator("#verdicts td.verdict-none", has_text="no clear difference")
        assert all("(MDE " in t or "every family" in t for t in unclear.all_inner_texts())
        # The page states the verdict test and its promise (issue 44).
        assert "Verdict test: cluster bootstrap-t" in page.locator("#verdicts").inner_text()
        worse = page.locator("#verdicts td.verdict-worse, #verdicts td.verdict-better")
        for i in range(worse.count()):  # coloured, and the word is there too
            colour = worse.nth(i).evaluate("td => getComputedStyle(td).backgroundColor")
            assert colour not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
        forest = page.locator("#verdicts figure.plot")
        assert forest.count() == 1 and "Paired differences" in forest.inner_text()
        assert forest.locator("svg[role=img]").count() == 1
        assert (folder / "paired_differences.png").stat().st_size > 0
        summary = page.locator("#provenance summary")
        assert page.locator("#provenance details").evaluate("d => d.open") is False
        assert "differ between runs" in summary.inner_text()
        summary.click()
        assert page.locator("#provenance thead th").all_inner_texts() == [
            "Field",
            "exploratory · sim",
            "exploratory · sim:seed=7",
            "historical · sim",
            "historical · sim:seed=7",
        ]
        assert (
            "Model parameters (sim knobs)"
            in page.locator("#provenance tr.differs th").all_inner_texts()
        )
        verdicts = page.locator("#verdicts figure.table tbody tr")
        assert verdicts.count() == 7 + 2  # exploratory: 7 decoders; historical: 2 conditions
        assert "no verdict" in verdicts.last.inner_text()  # three dates: no interval
        assert page.locator(".warning").first.inner_text().startswith("⚠ Runs marked SIMULATED")
        # The viewer lists the first suite's jobs and shows both models' rounds.
        page.locator("#job-list tbody tr").first.click()
        sides = page.locator("#job-detail .side")
        expect(sides).to_have_count(2)
        assert sides.nth(1).locator("h3").inner_text().startswith("exploratory · sim:seed=7 · ")
        assert not_blank(page.screenshot()) > 0.05
        assert opened.refused == [] and opened.errors == []


def test_a_sequential_comparison_shows_each_cells_path_over_the_looks(tmp_path: Path) -> None:
    folder = tmp_path / "seq"
    assert cli("compare", "--models", "sim,sim:confusion=0.9", "--suites", "affine",
               "--param", "affine.per_operator=4", "--sequential", "--bootstrap", "0",
               "--out", str(folder), "--no-progress") == 0  # fmt: skip
    with chromium() as browser:
        opened = open_page(browser, folder / "index.html")
        page = opened.page
        path = page.locator("figure.plot", has_text="path over the looks")
        assert path.count() == 1 and path.locator("svg[role=img]").count() == 1
        assert "SIMULATED" in path.inner_text()  # the figure's title says so
        wide = "f => [f.scrollWidth, f.clientWidth]"
        scroll, shown = path.evaluate(wide)
        assert scroll <= shown  # fits the page's width, no horizontal scroll
        assert opened.refused == [] and opened.errors == []
