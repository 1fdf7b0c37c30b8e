"""Ctrl-C and SIGTERM drain what is in flight: no request is paid for twice across a resume.

The run is a child process (signals go to it, not to pytest) against a loopback serve-sim
that counts the bodies it answered; an answer is counted when the server reads the body,
as a hosted API bills it, whether or not the client stays for the reply.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import load_suite, run
from harness.comparing.comparison import run_comparison
from harness.running.interrupts import Interrupts
from harness.serve import ServerConfig
from runfolder import scan_logs
from tests.counting import Answered, counting_server
from tests.runhelpers import answered, cli, final_outputs, records

SUITE = ["--param", "per_operator=1"]  # 64 jobs


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ref") / "run"
    assert cli("run", *SUITE, "--run", str(folder), "--no-progress") == 0
    return folder


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def start(url: str, folder: Path, *extra: str, suite: list[str] = SUITE) -> subprocess.Popen[bytes]:
    args = ["resume", str(folder)] if (folder / "manifest.json").exists() else ["run", *suite]
    if args[0] == "run":
        args += ["--model", "jev-sim", "--base-url", url, "--run", str(folder)]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            *args,
            "--no-progress",
            "--concurrency",
            "32",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def interrupt(child: subprocess.Popen[bytes], log: Path, after: int, signum: int) -> list[str]:
    """Signal ``child`` once ``after`` more request lines are logged; its stderr lines."""
    target = lines(log) + after
    deadline = time.monotonic() + 60
    while child.poll() is None and lines(log) < target and time.monotonic() < deadline:
        time.sleep(0.005)  # noqa: TID251 - polling a child process
    ended = child.poll() is not None
    if not ended:
        child.send_signal(signum)
    _, err = child.communicate(timeout=30)
    assert not ended, "the run ended before it could be interrupted"
    return err.decode().strip().splitlines()


def check(folder: Path, reference: Path, served: Answered) -> None:
    """Resume to the end: same outputs, and no body answered twice by the server."""
    assert cli("resume", str(folder), "--no-progress", "--concurrency", "64") == 0
    assert final_outputs(folder) == final_outputs(reference)
    assert served.twice == 0, f"{served.twice} requests were answered twice (paid twice)"
    assert served.total == sum(answered(folder).values()) == sum(answered(reference).values())


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_drains_the_requests_in_flight_and_nothing_is_paid_twice(
    tmp_path: Path, reference: Path, signum: int, status: int
) -> None:
    folder = tmp_path / "run"
    # 150 ms per reply: every signal lands with the 32 requests in flight.
    with counting_server(ServerConfig(port=0, latency_ms=150)) as (url, served):
        child = start(url, folder)
        err = interrupt(child, folder / "requests.jsonl", after=40, signum=signum)
        assert child.returncode == status
        name = signal.Signals(signum).name
        assert len(err) == 1 and f"interrupted by {name}" in err[0]
        assert f"run folder {folder}" in err[0] and f"numericjev resume {folder}" in err[0]
        assert "were answered and recorded" in err[0]
        assert served.total == sum(answered(folder).values())  # every answer was recorded
        check(folder, reference, served)


def test_a_sigkill_loses_at_most_what_was_in_flight_and_the_last_pass(
    tmp_path: Path, reference: Path
) -> None:
    # runfolder.sequence: over HTTP each event-loop pass hands its exchanges to the OS, so a
    # SIGKILL loses the requests in flight and the answers of the pass it lands in: together
    # at most twice the concurrency (32). Those are what resume pays for again; no other.
    folder = tmp_path / "run"
    with counting_server(ServerConfig(port=0, latency_ms=150)) as (url, served):
        child = start(url, folder)
        log = folder / "requests.jsonl"
        deadline = time.monotonic() + 60
        while child.poll() is None and lines(log) < 40 and time.monotonic() < deadline:
            time.sleep(0.005)  # noqa: TID251 - polling a child process
        assert child.poll() is None, "the run ended before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        served.settle()  # the dead child's last bodies: counted or dropped, before we look
        scan_logs(folder)  # records 1..N: what reached the OS is a prefix
        lost = served.total - sum(answered(folder).values())
        assert 0 <= lost <= 2 * 32
        assert cli("resume", str(folder), "--no-progress", "--concurrency", "64") == 0
        assert served.twice == lost  # paid twice: exactly what the kill lost
    assert final_outputs(folder) == final_outputs(reference)


def start_compare(url: str, folder: Path, *extra: str) -> subprocess.Popen[bytes]:
    """A comparison of the in-process sim (first cell) and jev-sim through ``url``."""
    args = ["--models", f"sim,jev-sim:base_url={url}", "--suites", "affine", *SUITE]
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "compare", *args, "--out", str(folder),
         "--skip-check", "--bootstrap", "0", "--no-progress", "--concurrency", "32", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_compare_drains_and_nothing_is_paid_twice(
    tmp_path: Path, reference: Path, signum: int, status: int
) -> None:
    folder = tmp_path / "cmp"
    cell = folder / "affine-m2-jev-sim"  # named by the model, not its server's address
    with counting_server(ServerConfig(port=0, latency_ms=150)) as (url, served):
        child = start_compare(url, folder)
        err = interrupt(child, cell / "requests.jsonl", after=40, signum=signum)
        assert child.returncode == status
        assert len(err) == 1 and f"interrupted by {signal.Signals(signum).name}" in err[0]
        assert f"comparison folder {folder};" in err[0] and "were answered and recorded" in err[0]
        assert err[0].endswith(f"continue with: numericjev resume {folder}")
        assert served.total == sum(answered(cell).values())  # every answer was recorded
        assert not (folder / "summary.md").exists()
        assert cli("resume", str(folder), "--no-progress") == 0
        assert served.twice == 0, f"{served.twice} requests were answered twice (paid twice)"
    assert final_outputs(cell) == final_outputs(reference)
    assert (folder / "summary.md").exists()


def ctrl_c_twice(child: subprocess.Popen[bytes], served: Answered) -> tuple[float, list[str]]:
    """Ctrl-C ``child`` once the server holds one of its requests (``served``), then again
    while it drains; the time from the first Ctrl-C to its end, and its stderr lines."""
    deadline = time.monotonic() + 60
    while not served.total and time.monotonic() < deadline:
        time.sleep(0.005)  # noqa: TID251 - watching the server's thread
    began = time.monotonic()
    child.send_signal(signal.SIGINT)
    # The replies take 20 s: a child ended in this wait did not drain (a busy machine can
    # only make the wait pass, never fail it).
    time.sleep(0.3)  # noqa: TID251 - the first Ctrl-C drains
    draining = child.poll() is None  # still waiting for the replies in flight
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert draining, "the first Ctrl-C did not wait for the replies in flight"
    return time.monotonic() - began, err.decode().strip().splitlines()


@pytest.mark.parametrize("what", ["run", "comparison"])
def test_a_second_ctrl_c_stops_at_once(tmp_path: Path, what: str) -> None:
    folder = tmp_path / what
    # Replies take 20 s and the drain would wait 60: only the second Ctrl-C ends it soon.
    with counting_server(ServerConfig(port=0, latency_ms=20_000)) as (url, served):
        if what == "run":
            child, run = start(url, folder, "--drain-seconds", "60"), folder
        else:
            child = start_compare(url, folder, "--drain-seconds", "60")
            run = folder / "affine-m2-jev-sim"  # the cell served over HTTP
        took, lines_ = ctrl_c_twice(child, served)
    assert child.returncode == 130 and took < 15  # not the 20 s replies, nor the 60 s drain
    assert len(lines_) == 1 and "cut off" in lines_[0]
    assert f"{what} folder {folder}; continue with: numericjev resume {folder}" in lines_[0]
    assert records(run / "requests.jsonl") == []  # nothing answered, nothing recorded


def test_a_signal_between_two_cells_starts_no_other(tmp_path: Path) -> None:
    # In process: Interrupts.receive is what the signal handler calls.
    folder = tmp_path / "cmp"
    args = ["--models", "sim,sim:seed=7", "--suites", "exploratory", "--out", str(folder)]
    assert cli("compare", *args, "--max-requests", "0", "--no-progress") == 1  # no cell begun
    interrupts = Interrupts()
    interrupts.receive(signal.SIGTERM)  # before the first cell
    result = run_comparison(folder, interrupts=interrupts)
    assert result.interrupted == signal.SIGTERM and result.cells == ()
    assert result.stopped == "interrupted by SIGTERM before cell exploratory-m1-sim"
    # A session that attaches after a signal sends nothing: it is stopped before it starts.
    session = run(load_suite("exploratory"), folder=tmp_path / "run", interrupts=interrupts)
    assert session.interrupted == signal.SIGTERM and session.attempts == 0
    assert session.pending == 48 and session.stopped == "interrupted by SIGTERM"


@pytest.mark.soak
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ten_interrupts_then_resume_pay_for_nothing_twice(tmp_path: Path, signum: int) -> None:
    suite = ["--param", "per_operator=4"]  # 256 jobs, 1,729 requests: room for ten stops
    reference = tmp_path / "reference"
    assert cli("run", *suite, "--run", str(reference), "--no-progress") == 0
    folder = tmp_path / "run"
    with counting_server(ServerConfig(port=0, latency_ms=100)) as (url, served):
        for _ in range(10):
            child = start(url, folder, suite=suite)
            interrupt(child, folder / "requests.jsonl", after=60, signum=signum)
            assert child.returncode == (130 if signum == signal.SIGINT else 143)
        check(folder, reference, served)
