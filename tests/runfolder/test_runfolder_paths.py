"""One torn-line rule on every read path (resume, status, analysis), and sessions.jsonl."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from analysis import LogFormatError as AnalysisLogFormatError
from analysis import load_run
from analysis.cli import main as analysis_main
from harness.running.replay import read_logs
from runfolder import LogFormatError, load_manifest, read_sessions
from tests.runhelpers import SMALL, cli, copy_run, final_outputs, records


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ref") / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


def _partial(tmp_path: Path, name: str = "partial", *more: str) -> Path:
    folder = tmp_path / name
    args = ["--run", str(folder), "--no-progress", "--max-requests", "300", *more]
    assert cli("run", *SMALL, *args) == 1
    return folder


def _drop_last_newline(path: Path) -> dict:
    """Make the last record a torn one that still parses; return that record."""
    data = path.read_bytes()
    assert data.endswith(b"}\n")
    path.write_bytes(data[:-1])
    return orjson.loads(data.splitlines()[-1])


def _newest_log(folder: Path) -> str:
    """The log holding the run's last record (the one a crash can tear)."""
    last = {name: records(folder / name)[-1]["seq"] for name in ("outputs.jsonl", "requests.jsonl")}
    return max(last, key=last.__getitem__)


def test_parseable_last_line_without_newline_is_torn_on_every_read_path(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _partial(tmp_path)
    newest = _newest_log(folder)
    whole = {name: len(records(folder / name)) for name in ("outputs.jsonl", "requests.jsonl")}
    torn = _drop_last_newline(folder / newest)  # a crash tears the last record written
    manifest = load_manifest(folder)

    # analysis: the torn record is not read, and it is counted
    run = load_run(folder)
    stats = {"outputs.jsonl": run.outputs.stats, "requests.jsonl": run.requests.stats}
    for name, stat in stats.items():
        assert stat.records == whole[name] - (name == newest)
        assert stat.torn_last_line == (name == newest)
    if newest == "outputs.jsonl":
        names = run.outputs.decoder_names
        pairs = {(j, names[d]) for j, d in zip(run.outputs.job, run.outputs.decoder, strict=True)}
        assert (torn["job"], torn["decoder"]) not in pairs

    # harness: the same records, the torn tail reported
    state = read_logs(folder, manifest.decoders, manifest.run_id)
    assert state.torn == [newest] and state.next_seq == torn["seq"]
    assert cli("status", str(folder)) == 0
    assert f"torn last line in {newest}" in capsys.readouterr().out

    # resume: cut before appending, and the run ends as an uninterrupted one
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    for name in ("outputs.jsonl", "requests.jsonl"):
        data = (folder / name).read_bytes()
        assert data.endswith(b"}\n") and len(records(folder / name)) == data.count(b"\n")


def test_two_torn_logs_are_not_a_crash_and_are_refused(tmp_path: Path) -> None:
    # One process writes one record at a time: a crash tears one line, never one per log.
    # In one process the cap leaves requests after the last output, so tearing both logs
    # leaves a hole (with --workers the last two records may be one of each: no hole).
    folder = _partial(tmp_path, "partial", "--workers", "1")
    for name in ("outputs.jsonl", "requests.jsonl"):
        _drop_last_newline(folder / name)
    manifest = load_manifest(folder)
    with pytest.raises(LogFormatError, match="cut or deleted from the middle of a log"):
        read_logs(folder, manifest.decoders, manifest.run_id)


def test_corrupt_last_line_with_newline_is_an_error_on_every_read_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _partial(tmp_path)
    log = folder / "outputs.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*lines[:-1], lines[-1][:30] + b"\n"]))  # whole line, not JSON
    before = log.read_bytes()
    where = f"outputs.jsonl line {len(lines)} is not a JSON object"
    manifest = load_manifest(folder)
    with pytest.raises(LogFormatError, match=where):
        read_logs(folder, manifest.decoders, manifest.run_id)
    with pytest.raises(AnalysisLogFormatError, match=where):
        load_run(folder)
    for command in (["resume", str(folder), "--no-progress"], ["status", str(folder)]):
        assert cli(*command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"numericjev {command[0]}: error: ")
        assert where in err[0]
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("numericjev analyze: error: ") and where in err[0]
    assert log.read_bytes() == before
    assert len(read_sessions(folder)) == 1  # the refused resume left no session line


def test_sessions_record_each_run_and_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _partial(tmp_path)
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    manifest["source_hash"] = "0" * 64  # as if the code had changed since the run started
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert cli("resume", str(folder), "--no-progress") == 2  # refused: no session recorded
    assert len(read_sessions(folder)) == 1
    assert cli("resume", str(folder), "--no-progress", "--allow-mismatch", "--rps", "5000") == 0
    first, second = read_sessions(folder)
    assert (first["command"], second["command"]) == ("run", "resume")
    assert first["allowed_mismatches"] == []
    edited, changed = second["allowed_mismatches"]
    assert "manifest.json was edited since its last session: field 'source_hash'" in edited
    assert changed == "the harness or suite source changed since the run started"
    assert first["limits"]["max_requests"] == 300 and second["limits"]["max_requests"] is None
    assert second["limits"]["rps"] == 5000
    for session in (first, second):
        assert session["model"] == "sim" and session["base_url"] is None
        assert session["run"] == manifest["run_id"] and len(session["source_hash"]) == 64
        assert list(session) == [
            "utc",
            "command",
            "harness_version",
            "source_hash",
            "model",
            "base_url",
            "limits",
            "allowed_mismatches",
            "run",
            "manifest_sha256",
            "manifest_fields",
        ]
    capsys.readouterr()
    assert cli("status", str(folder)) == 0
    out = capsys.readouterr().out
    assert "sessions: 2 (1 resume;" in out and "2 mismatches let through" in out
    assert len(load_run(folder).sessions) == 2


def test_a_deleted_session_log_is_a_finding_that_only_allow_mismatch_lets_through(
    tmp_path: Path, reference: Path
) -> None:
    # Issue 32: the seal lives in sessions.jsonl, so deleting it must not switch it off.
    folder = _partial(tmp_path)
    (folder / "sessions.jsonl").unlink()
    run = load_run(folder)
    assert run.sessions == () and [f.kind for f in run.seal] == ["sessions_missing"]
    assert cli("status", str(folder)) == 0
    assert cli("resume", str(folder), "--no-progress") == 2
    assert not (folder / "sessions.jsonl").exists()  # refused: nothing recreated silently
    assert cli("resume", str(folder), "--no-progress", "--allow-mismatch") == 0
    sessions = read_sessions(folder)
    assert [s["command"] for s in sessions] == ["resume"]
    assert "sessions.jsonl is missing" in sessions[0]["allowed_mismatches"][0]
    assert final_outputs(folder) == final_outputs(reference)


def test_a_torn_line_followed_by_later_records_is_named_so(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_run(reference, tmp_path / "torn")
    log = folder / "requests.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[100] = lines[100][: len(lines[100]) // 2]  # no newline: record 102 runs on from it
    log.write_bytes(b"".join(lines))
    # export reads the numbers unparsed; status parses the line
    for command in (["export", "--format", "csv"], ["status"]):
        assert cli(command[0], str(folder), *command[1:]) == 2
        err = capsys.readouterr().err.strip()
        assert "requests.jsonl line 101 is a torn line (an incomplete write) followed by " in err
        assert "cut or deleted" not in err and "not a JSON object" not in err


def test_a_byte_that_is_not_utf8_is_named_with_its_file_and_line(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_run(reference, tmp_path / "bytes")
    log = folder / "requests.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[50] = lines[50].replace(b'"job":"', b'"job":"\xff', 1)
    log.write_bytes(b"".join(lines))
    for command in (["status"], ["analyze", "--no-probabilities", "--bootstrap", "0"]):
        assert cli(*command, str(folder)) == 2
        err = capsys.readouterr().err.strip()
        assert f"{log} line 51 is not valid UTF-8 (byte 0xff at column 9)" in err, err
        assert "surrogates" not in err
