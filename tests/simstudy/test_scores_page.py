"""``make scores-page``: the measured part of docs/scores.md is rewritten between its markers
from a run, with the section's tables and figures, and nothing else on the page changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstudy.scores_page import PAGE, begin_marker, end_marker, main, rewrite
from tests.runhelpers import SMALL, cli


def test_rewrite_replaces_only_what_lies_between_the_markers() -> None:
    page = f"intro\n{begin_marker('sim')}\nold\n{end_marker('sim')}\noutro\n"
    new = rewrite(page, "sim", ["fresh"])
    assert new.startswith("intro\n") and new.endswith("outro\n")
    assert "old" not in new and "fresh" in new
    assert rewrite(new, "sim", ["fresh"]) == new  # written twice: the same page
    with pytest.raises(ValueError, match="needs one"):
        rewrite("no markers here", "sim", ["x"])


def test_the_docs_page_has_the_sim_markers_once() -> None:
    text = PAGE.read_text()
    assert text.count(begin_marker("sim")) == 1 and text.count(end_marker("sim")) == 1


def test_a_sim_run_writes_its_tables_and_figures(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert cli("run", *SMALL, "--run", str(run), "--no-progress") == 0
    page = tmp_path / "scores.md"
    page.write_text(f"# hand\n{begin_marker('sim')}\n{end_marker('sim')}\n## after\n")
    assert main([str(run), "--page", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# hand\n") and text.endswith("## after\n")
    assert "SIMULATED" in text and "Ranking by score" in text and "by CRPS" in text
    for stem in ("scores_pit_sim", "scores_coverage_sim"):
        assert f"]({stem}.png)" in text and (tmp_path / f"{stem}.png").is_file()
        assert not (tmp_path / f"{stem}.svg").exists()


def test_a_page_without_markers_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert cli("run", *SMALL, "--run", str(run), "--no-progress") == 0
    page = tmp_path / "scores.md"
    page.write_text("# nothing to fill\n")
    assert main([str(run), "--page", str(page)]) == 2
    assert page.read_text() == "# nothing to fill\n"
    assert not list(tmp_path.glob("*.png"))  # refused before any figure was drawn
    err = capsys.readouterr().err.strip()
    assert err.startswith("scores-page: the page needs one") and "\n" not in err
