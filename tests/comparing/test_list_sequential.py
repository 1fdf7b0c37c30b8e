"""``list`` and ``status`` tell a ``compare --sequential`` comparison its rule stopped (its
cells' unasked families pending on purpose) from one cut short before the rule stopped it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from runfolder import list_rows
from tests.runhelpers import cli

# 8 families in looks of 5, 6 and 8; an interval inside +-1000 points is futile at once, so
# the rule stops every cell at the first look (5 families asked).
ARGV = ("compare", "--models", "sim,sim:seed=2", "--suites", "affine", "--sequential")
ARGV += ("--param", "affine.per_operator=2", "--margin", "1000", "--bootstrap", "0")
STOPPED = "stopped at look 1 of 3 (sequential)"


def _ends(folder: Path) -> list[str]:
    """How the comparison's line and then each cell's line end, as ``list`` prints them."""
    row = list_rows([folder])[0]
    return [line.line().rsplit("  ", 1)[1] for line in (row, *row.cells)]


def test_a_comparison_its_rule_stopped_says_so_one_cut_short_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "seq"
    # Cut short inside the first look (a request cap): the rule has not stopped it.
    assert cli(*ARGV, "--out", str(folder), "--no-progress", "--max-requests", "300") == 1
    assert _ends(folder) == ["INCOMPLETE"] * 3
    assert cli("resume", str(folder), "--no-progress") == 0
    cell = f"{STOPPED}: pending families left unasked by its rule"
    assert _ends(folder) == [STOPPED, cell, cell]
    rows = list_rows([folder])
    assert all(c.pending for c in rows[0].cells)  # the unasked families' jobs, on purpose
    capsys.readouterr()
    # list of the folder that holds it, status of it, list of the comparison folder itself
    assert cli("list", str(tmp_path)) == 0 and cli("status", str(folder)) == 0
    assert cli("list", str(folder)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.endswith(STOPPED) for line in lines] == [True, False, False] * 2 + [False] * 2
    assert sum(line.endswith(cell) for line in lines) == 6

    # `report` writes the summary again, the looks with it (once it dropped them).
    before = orjson.loads((folder / "summary.json").read_bytes())["sequential"]
    assert cli("report", str(folder), "--bootstrap", "0") == 0
    assert orjson.loads((folder / "summary.json").read_bytes())["sequential"] == before
    assert "## Sequential (compare --sequential)" in (folder / "summary.md").read_text()
    assert _ends(folder) == [STOPPED, cell, cell]

    # The summary says the rule still asks (a cell open): not stopped, whatever it asked.
    summary = folder / "summary.json"
    written = summary.read_bytes()
    opened = orjson.loads(written)
    opened["sequential"]["cells"][0]["reason"] = "open"
    summary.write_bytes(orjson.dumps(opened))
    assert _ends(folder) == ["INCOMPLETE"] * 3
    summary.write_bytes(written)
    # A cell asked again since the summary (resumed on its own to the end): the summary no
    # longer says where the comparison stands.
    first = folder / orjson.loads((folder / "compare.json").read_bytes())["cells"][0]["folder"]
    assert cli("resume", str(first), "--no-progress") == 0
    assert _ends(folder) == ["INCOMPLETE", "complete", "INCOMPLETE"]
