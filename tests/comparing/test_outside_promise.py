"""A called cell whose two sides' spreads differ by ``SPREAD_FLAG`` or more says it lies
outside the measured promise, in the terminal, summary.md, summary.json and the page
(issue 44 item 2); a cell below the threshold, or not called, says nothing of it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import orjson

from analysis.statistics.promise import SPREAD_FLAG
from tests.runhelpers import cli


def test_a_called_cell_with_spreads_far_apart_carries_the_note_everywhere(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    out = io.StringIO()
    # A much more confused model: its tree cells are worse, and spread far wider (SIMULATED).
    argv = ["compare", "--models", "sim,sim:confusion=0.6", "--suites", "affine"]
    argv += ["--param", "affine.per_operator=8", "--bootstrap", "999", "--no-progress"]
    with contextlib.redirect_stdout(out):
        assert cli(*argv, "--out", str(folder)) == 0
    rows = orjson.loads((folder / "summary.json").read_bytes())["rows"]
    marked = [r for r in rows if r["outside_promise"]]
    assert marked, "expected a called cell with spreads far apart"
    for r in rows:
        called = r["verdict"] in ("better", "worse")
        far = r["spread_ratio"] is not None and r["spread_ratio"] >= SPREAD_FLAG
        assert bool(r["outside_promise"]) == (called and far)
    note = marked[0]["outside_promise"]
    assert re.fullmatch(r"spreads differ ×\d+\.\d: outside the measured promise", note)
    assert f"{marked[0]['verdict']} · {note}" in out.getvalue()
    assert f"{marked[0]['verdict']} · {note}" in (folder / "summary.md").read_text()
    page = (folder / "index.html").read_text()
    assert f"{marked[0]['verdict']} · {note}" in page
    assert f"{len(marked)} of them outside the measured promise" in out.getvalue()
