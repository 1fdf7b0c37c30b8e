"""Bad input of every kind the CLI takes: one line on stderr, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runhelpers import cli

BAD_RUNS = {
    "unknown suite": (["run", "--suite", "nope"], "unknown suite 'nope'"),
    "unknown suite parameter": (["run", "--param", "colour=red"], "no parameter 'colour'"),
    "bad parameter value": (["run", "--param", "cells=many"], "cells='many' is not valid"),
    "parameter without =": (["run", "--param", "cells"], "KEY=VALUE"),
    "grid over 255 options": (["run", "--param", "cells=300"], "at most 255"),
    "tree over 255 options": (["run", "--decoders", "tree256"], "at most 255"),
    "unknown decoder": (["run", "--decoders", "direct,magic"], "unknown decoder 'magic'"),
    "tree1": (["run", "--decoders", "tree1"], "K >= 2"),
    "empty decoders": (["run", "--decoders", ","], "at least one decoder"),
    "hosted model without key": (["run", "--model", "jev-latest"], "TYPESAFE_API_KEY"),
    "sim knob for another model": (
        ["run", "--model", "oracle:seed=1"],
        "oracle takes no option 'seed'",
    ),
    "unknown sim knob": (["run", "--model", "sim:wisdom=1"], "no knob 'wisdom'"),
    "unknown sim knob in a dry run": (
        ["run", "--dry-run", "--model", "sim:wisdom=1"],
        "no knob 'wisdom'",
    ),
    "sim knob for another model in a dry run": (
        ["run", "--dry-run", "--model", "sim:seed=x"],
        "sim knob seed='x' is not a number",
    ),
    "spend cap without a price": (
        ["run", "--model", "my-model", "--base-url", "http://127.0.0.1:9", "--max-cost-usd", "1"],
        "--price-per-million",
    ),
    "base url for the in-process sim": (
        ["run", "--base-url", "http://127.0.0.1:9"],
        "--base-url applies to models served over HTTP",
    ),
    "no workers in a dry run": (["run", "--dry-run", "--workers", "0"], "--workers"),
    "workers for a served model in a dry run": (
        [
            "run",
            "--dry-run",
            "--model",
            "my-model",
            "--base-url",
            "http://127.0.0.1:9",
            "--workers",
            "2",
        ],
        "--workers 2",
    ),
    "negative drain": (["run", "--drain-seconds", "-1"], "--drain-seconds"),
    "negative wait ceiling": (["run", "--max-wait-seconds", "-1"], "--max-wait-seconds"),
    "sim knob out of range": (["run", "--model", "sim:slip_bit=2"], "must lie in [0, 1]"),
    "zero concurrency": (["run", "--concurrency", "0"], "--concurrency"),
    "negative cap": (["run", "--max-cost-usd", "-1"], "--max-cost-usd"),
    "bad timeout": (["run", "--timeout", "0"], "--timeout"),
    "check unknown suite": (["check", "--suite", "nope"], "unknown suite"),
    "resume of no folder": (["resume", "nowhere"], "not a folder"),
    "status of no folder": (["status", "nowhere"], "not a folder"),
}


@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_bad_input_is_one_line_and_writes_nothing(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, message = BAD_RUNS[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.delenv("TYPESAFE_BASE_URL", raising=False)
    extra = ["--no-progress"] if args[0] in ("run", "resume") else []
    assert cli(*args, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("numericjev ") and message in err[0]
    assert list(tmp_path.iterdir()) == []  # no runs/ folder, no partial run


def test_a_run_folder_of_another_suite_is_refused_by_resume_on_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A manifest edited to name another suite cannot be continued.
    folder = tmp_path / "run"
    assert cli("run", "--param", "per_operator=1", "--run", str(folder), "--no-progress") == 0
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"suite": "affine"', '"suite": "exploratory"'))
    before = (folder / "outputs.jsonl").read_bytes()
    assert cli("resume", str(folder), "--no-progress") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'suite' was edited" in err[0] and "cannot be rebuilt" in err[0]
    assert (folder / "outputs.jsonl").read_bytes() == before


def test_an_existing_run_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", "--param", "per_operator=1", "--run", str(folder), "--no-progress") == 0
    before = (folder / "requests.jsonl").read_bytes()
    assert cli("run", "--param", "per_operator=1", "--run", str(folder), "--no-progress") == 2
    assert "numericjev resume" in capsys.readouterr().err
    assert (folder / "requests.jsonl").read_bytes() == before


def test_a_dry_run_refuses_a_run_folder_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "notes.md"
    taken.write_text("mine\n")
    assert cli("run", "--dry-run", "--run", str(taken)) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and len(err.strip().splitlines()) == 1


def test_resume_of_no_run_prints_only_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("resume", str(tmp_path / "nowhere")) == 2
    out, err = capsys.readouterr()
    assert out == "" and "does not exist" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--workers", "abc"],
        ["run", "--wire", "bogus"],
        ["bogus"],
        ["analyze", "latest", "--bootstrap", "-1"],
        ["diff", "only-one"],
    ],
)
def test_usage_errors_are_one_line_too(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # argparse's own errors print the whole usage first; here they are one line, exit 2.
    with pytest.raises(SystemExit) as stopped:
        status = cli(*args)
        raise SystemExit(status)  # analysis returns the status instead of exiting
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--help)" in err
