"""Repeated SIGKILLs at random moments, each followed by resume, change nothing."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from runfolder import scan_logs, whole_lines
from tests.runhelpers import answered, cli, final_outputs, records, spawn

SUITE = ["--param", "per_operator=4"]
# Twenty kills need a run that outlasts them: on a quiet machine the small suite (1,729
# exchanges) finished after 11-13 kills, each landing a 64 KB block or more past its target.
LONG_SUITE = ["--param", "per_operator=16"]


def lines(path: Path) -> int:
    """Whole lines of a log so far, plain or compressed."""
    if path.exists():
        return path.read_bytes().count(b"\n")
    return sum(1 for _ in whole_lines(path))


def check_what_a_kill_left(folder: Path, reference: Path) -> None:
    """What ``runfolder.sequence`` says a SIGKILL leaves: records 1..N (a torn last line at
    most, in one log), and every exchange of each job whose outputs are on disk; what it
    lost (the in-process sim's 64 KB blocks) are exchanges of jobs still running."""
    scan = scan_logs(folder)  # refuses logs that are not exactly records 1..N
    assert len(scan.torn) <= 1
    asked = answered(folder)
    expected = answered(reference)
    for job in {r["job"] for r in records(folder / "outputs.jsonl")}:
        assert {k for k in asked if k[0] == job} == {k for k in expected if k[0] == job}, job


def kill_repeatedly(
    folder: Path,
    kills: int,
    seed: int,
    reference: Path,
    suite: list[str] = SUITE,
    compress: bool = False,
) -> int:
    """Start, then SIGKILL and resume ``kills`` times at random log positions, checking what
    each kill left; returns kills done."""
    rng = random.Random(seed)
    done = 0
    log = folder / "requests.jsonl"
    while done < kills:
        args = ["resume", str(folder)] if (folder / "manifest.json").exists() else ["run", *suite]
        if args[0] == "run":
            args += ["--run", str(folder), *(["--compress"] if compress else [])]
        start = lines(log)
        child = spawn(*args, "--no-progress")
        target = start + rng.randint(5, 120)
        deadline = time.monotonic() + 60
        while child.poll() is None and lines(log) < target and time.monotonic() < deadline:
            time.sleep(0.002)  # noqa: TID251 - polling a child process
        if child.poll() is not None:
            break  # it finished before the kill: nothing left to interrupt
        child.send_signal(signal.SIGKILL)
        child.wait()
        check_what_a_kill_left(folder, reference)
        done += 1
    return done


def check_against_reference(folder: Path, reference: Path) -> None:
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    counts = answered(folder)
    assert max(counts.values()) == 1, "an answered request was sent again"
    assert sum(counts.values()) == sum(answered(reference).values())


def uninterrupted(factory: pytest.TempPathFactory, name: str, suite: list[str]) -> Path:
    """A run of ``suite`` that nothing killed: what every killed run must end up as."""
    folder = factory.mktemp("ref") / name
    assert cli("run", *suite, "--run", str(folder), "--no-progress") == 0
    return folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return uninterrupted(tmp_path_factory, "run", SUITE)


@pytest.fixture(scope="module")
def long_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return uninterrupted(tmp_path_factory, "long", LONG_SUITE)


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zstd"])
def test_three_kills_then_resume(tmp_path: Path, reference: Path, compress: bool) -> None:
    # The compressed logs (zstd frames, one per flush) survive what the plain ones survive.
    folder = tmp_path / "killed"
    assert kill_repeatedly(folder, kills=3, seed=1, reference=reference, compress=compress) == 3
    check_against_reference(folder, reference)
    assert (folder / "requests.jsonl.zst").exists() == compress
    assert (folder / "requests.jsonl").exists() != compress


@pytest.mark.soak
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zstd"])
def test_twenty_kills_then_resume(tmp_path: Path, long_reference: Path, compress: bool) -> None:
    folder = tmp_path / "killed20"
    kills = kill_repeatedly(
        folder, 20, 20260923, long_reference, suite=LONG_SUITE, compress=compress
    )
    assert kills >= 15  # a late kill may find the run already finished
    check_against_reference(folder, long_reference)
