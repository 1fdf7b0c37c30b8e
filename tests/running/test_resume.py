"""Resume: SIGKILL part-way, torn and foreign lines, locks, hash mismatches, spend caps."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import orjson
import pytest

from runfolder import RunLock
from tests.runhelpers import answered, cli, final_outputs, records, spawn

MEDIUM = ["--param", "per_operator=4"]  # 16 families, 256 jobs


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ref") / "run"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress") == 0
    return folder


def kill_after(folder: Path, args: list[str], min_lines: int) -> None:
    """Start a run in a child process and SIGKILL it once ``min_lines`` requests are logged."""
    child = spawn("run", *args, "--run", str(folder), "--no-progress")
    log = folder / "requests.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if log.exists() and log.stat().st_size > 0 and log.read_bytes().count(b"\n") >= min_lines:
            break
        time.sleep(0.005)  # noqa: TID251 - polling a child process, not the event loop
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "killed"
    kill_after(folder, MEDIUM, min_lines=600)
    partial = final_outputs(folder)
    assert len(partial) < len(final_outputs(reference))  # really interrupted
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    counts = answered(folder)
    assert max(counts.values()) == 1, "an answered request was sent again"
    assert sum(counts.values()) == sum(answered(reference).values())


def test_torn_last_line_is_cut_and_the_run_continues(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "torn"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "400") == 1
    with (folder / "requests.jsonl").open("ab") as handle:
        handle.write(b'{"job": "affine/f1/int/arithmetic/asc')  # a crash mid-write
    with (folder / "outputs.jsonl").open("ab") as handle:
        handle.write(b'{"job": "aff')
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    for name in ("requests.jsonl", "outputs.jsonl"):
        assert (folder / name).read_bytes().endswith(b"}\n")
        records(folder / name)  # every line parses


def test_corrupt_line_in_the_middle_stops_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "corrupt"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "200") == 1
    log = folder / "requests.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[10] = b"this is not json\n"
    log.write_bytes(b"".join(lines))
    before = log.read_bytes()
    assert cli("resume", str(folder), "--no-progress") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 11" in err[0] and "not a JSON object" in err[0]
    assert log.read_bytes() == before  # nothing recorded is touched


def test_duplicated_line_does_not_double_count(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "dup"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "300") == 1
    log = folder / "requests.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*lines, lines[5]]))
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)


def test_second_process_is_kept_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "locked"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "50") == 1
    with RunLock(folder):
        assert cli("resume", str(folder), "--no-progress") == 2
    err = capsys.readouterr().err
    assert f"pid {os.getpid()}" in err and "in use by another process" in err


def test_hash_mismatch_refuses_unless_overridden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "edited"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "50") == 1
    path = folder / "manifest.json"
    manifest = orjson.loads(path.read_bytes())
    manifest["source_hash"] = "0" * 64
    path.write_bytes(orjson.dumps(manifest))
    size = (folder / "requests.jsonl").stat().st_size
    assert cli("resume", str(folder), "--no-progress") == 2
    assert "--allow-mismatch" in capsys.readouterr().err
    assert (folder / "requests.jsonl").stat().st_size == size
    assert cli("resume", str(folder), "--no-progress", "--allow-mismatch") == 0


def test_missing_or_foreign_manifest_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "nomanifest"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "20") == 1
    (folder / "manifest.json").unlink()
    assert cli("resume", str(folder)) == 2
    assert "not a run folder" in capsys.readouterr().err
    (folder / "manifest.json").write_text('{"hello": "world"}')
    assert cli("resume", str(folder)) == 2
    assert "not a NumericJev manifest" in capsys.readouterr().err
    assert cli("status", str(tmp_path / "nowhere")) == 2


def test_spend_cap_holds_across_restarts(tmp_path: Path) -> None:
    folder = tmp_path / "capped"
    price = ["--price-per-million", "10"]  # make the free sim cost something
    cap = 0.5
    assert (
        cli(
            "run",
            *MEDIUM,
            *price,
            "--run",
            str(folder),
            "--no-progress",
            "--max-cost-usd",
            str(cap),
        )
        == 1
    )
    assert cli("resume", str(folder), "--no-progress") == 1  # the cap is kept in the manifest
    assert cli("resume", str(folder), "--no-progress", "--max-cost-usd", str(cap)) == 1
    costs = [r["cost_usd"] for r in records(folder / "requests.jsonl") if r["error"] is None]
    assert costs and sum(costs) <= cap + max(costs)
    # Raising the cap continues from where the run stopped, still never paying twice.
    assert cli("resume", str(folder), "--no-progress", "--max-cost-usd", "1000") == 0
    assert max(answered(folder).values()) == 1


def test_request_cap_stops_cleanly_and_resume_finishes(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "reqcap"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "100") == 1
    assert len(records(folder / "requests.jsonl")) == 100
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)


def test_a_line_from_another_run_stops_resume(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "foreign"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", "100") == 1
    # A whole, valid line of the same suite and job, but from another run folder.
    ours = records(folder / "requests.jsonl")
    theirs = [r for r in records(reference / "requests.jsonl") if r["job"] == ours[-1]["job"]]
    log = folder / "requests.jsonl"
    last = max(
        r["seq"] for name in ("requests.jsonl", "outputs.jsonl") for r in records(folder / name)
    )
    clean = log.read_bytes()
    # Numbered after ours, and under a number ours already used (which a repeat of our own
    # line would carry, and is skipped as one): refused by name either way.
    for seq in (last + 1, 2):
        log.write_bytes(clean + orjson.dumps({**theirs[-1], "seq": seq}) + b"\n")
        before = log.read_bytes()
        assert cli("resume", str(folder), "--no-progress") == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "another run" in err[0], seq
        assert log.read_bytes() == before
