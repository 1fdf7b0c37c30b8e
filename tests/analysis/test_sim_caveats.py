"""A sim run's analysis says, where its figures are, what the sim builds in (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.rendering.sim_caveats import SEEDS_POINTER, SIM_CAVEATS, sim_caveats
from tests.runhelpers import SMALL, cli


def test_only_the_sims_affine_runs_get_the_caveats() -> None:
    assert sim_caveats(True, False, "affine") == [*SIM_CAVEATS, SEEDS_POINTER]
    assert sim_caveats(False, False, "affine") == []
    assert sim_caveats(True, True, "affine") == []  # the oracle's exact answers
    assert sim_caveats(True, False, "exploratory") == []


def test_analyze_prints_them_under_the_main_and_paired_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    capsys.readouterr()
    assert cli("analyze", str(folder), "--bootstrap", "50", "--no-probabilities") == 0
    out = capsys.readouterr().out
    for title in ("### Fixed affine-grid evaluation", "### Paired differences vs direct"):
        section = out[out.index(title) :]
        section = section[: section.index("\n### ", 1)]
        for line in (*SIM_CAVEATS, SEEDS_POINTER):
            assert line in section, (title, line)


def test_every_table_analyze_prints_has_its_interval_or_says_why_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42: a cell with a bracket, or a line under the table saying why there is none."""
    import re

    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    capsys.readouterr()
    assert cli("analyze", str(folder), "--bootstrap", "50") == 0
    out = capsys.readouterr().out
    for section in out.split("\n### ")[1:]:
        title = section.splitlines()[0]
        rows = [line for line in section.splitlines() if line.startswith("| ")]
        notes = [line for line in section.splitlines() if line and line[0] not in "|#>"]
        bracketed = any(re.search(r"\[-?\d", row) for row in rows[1:])
        said = any(note.startswith(("No interval", "No brackets")) for note in notes)
        assert bracketed or said, title
