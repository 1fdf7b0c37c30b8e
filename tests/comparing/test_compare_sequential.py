"""``compare --sequential``: stops asking once every cell has stopped; a resume asks nothing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harness.cli import main
from runfolder import read_totals


def _requests(folder: Path) -> int:
    record = orjson.loads((folder / "compare.json").read_bytes())
    total = 0
    for cell in record["cells"]:
        totals = read_totals(folder / cell["folder"])
        assert totals is not None
        total += totals["requests"]
    return total


def test_sequential_stops_early_on_a_large_difference_and_resume_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    argv = ["compare", "--models", "sim,sim:confusion=0.9", "--suites", "affine"]
    argv += ["--param", "affine.per_operator=8", "--sequential", "--out", str(out)]
    assert main([*argv, "--no-progress", "--bootstrap", "0"]) == 0
    summary = orjson.loads((out / "summary.json").read_bytes())["sequential"]
    # 32 families in four looks of 8: a confusion of 0.9 is decided before the last look.
    assert summary["families_asked"] < summary["families"] == 32
    assert summary["requests"] < summary["requests_full_projected"]
    reasons = {c["reason"] for c in summary["cells"]}
    assert "decided" in reasons and "open" not in reasons
    assert "## Sequential" in (out / "summary.md").read_text()
    assert (out / "sequential_path.svg").is_file()
    assert "path over the looks" in (out / "index.html").read_text()  # the figure, inlined
    asked = _requests(out)
    assert main(["resume", str(out), "--no-progress"]) == 0
    assert _requests(out) == asked  # the looks already taken are replayed: nothing sent
    again = orjson.loads((out / "summary.json").read_bytes())["sequential"]
    assert again["cells"] == summary["cells"]


def test_sequential_refuses_two_suites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "--models", "sim,sim:seed=2", "--suites", "affine,exploratory"]
    assert main([*argv, "--sequential", "--out", str(tmp_path / "c")]) == 2
    assert "one suite at a time" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
