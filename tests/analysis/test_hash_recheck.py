"""``analyze`` recomputes the manifest's case and source hashes and says what it found."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from analysis.loading.provenance import recheck
from runfolder import load_manifest
from tests.runhelpers import SMALL, cli, copy_run


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small oracle run, made once for the module."""
    folder = tmp_path_factory.mktemp("pristine") / "run"
    assert cli("run", *SMALL, "--model", "oracle", "--run", str(folder), "--no-progress") == 0
    return folder


@pytest.fixture
def run(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the oracle run of the test's own, to edit."""
    return copy_run(pristine, tmp_path / "run")


def test_a_fresh_run_matches_both_hashes(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("analyze", str(run), "--strict") == 0
    out = capsys.readouterr().out
    assert "cases.json matches the manifest's case hash" in out
    assert "harness source is the run's" in out
    assert cli("analyze", str(run), "--json") == 0
    hashes = orjson.loads(capsys.readouterr().out)["hashes"]
    assert hashes["case"] == "match" and hashes["source"] == "match"


def test_an_edited_case_set_is_a_warning_and_strict_refuses(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = orjson.loads((run / "cases.json").read_bytes())
    cases["cases"][0]["target"] = "12345"
    (run / "cases.json").write_bytes(orjson.dumps(cases))
    assert cli("analyze", str(run)) == 0
    assert "does not match its manifest's case hash" in capsys.readouterr().out
    assert cli("analyze", str(run), "--strict") != 0


def test_runs_without_a_case_file_say_so(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "cases.json").unlink()
    assert cli("analyze", str(run), "--strict") == 0
    assert "case hash not rechecked" in capsys.readouterr().out


def test_another_revisions_source_is_named_not_refused(run: Path, tmp_path: Path) -> None:
    checkout = tmp_path / "other"
    for package in ("runfolder", "harness", "suites"):
        (checkout / package).mkdir(parents=True)
        (checkout / package / "x.py").write_text("changed = True\n")
    found = recheck(run, load_manifest(run), checkout)
    assert found.case == "match" and found.source == "differs"
    assert "another revision made it" in found.line()
    assert recheck(run, load_manifest(run), tmp_path / "nowhere").source == "absent"
