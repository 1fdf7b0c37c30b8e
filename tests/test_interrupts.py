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

from harness.serve import ServerConfig
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


def test_a_second_ctrl_c_stops_at_once(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "run"
    # Replies take 20 s and the drain would wait 60: only the second Ctrl-C ends it soon.
    with counting_server(ServerConfig(port=0, latency_ms=20_000)) as (url, _):
        child = start(url, folder, "--drain-seconds", "60")
        deadline = time.monotonic() + 60
        while not (folder / "sessions.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.005)  # noqa: TID251 - polling a child process
        time.sleep(0.5)  # noqa: TID251 - let the first requests go out
        began = time.monotonic()
        child.send_signal(signal.SIGINT)
        time.sleep(0.3)  # noqa: TID251 - the first Ctrl-C drains
        assert child.poll() is None  # still waiting for the replies in flight
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        took = time.monotonic() - began
    lines_ = err.decode().strip().splitlines()
    assert child.returncode == 130 and took < 15  # not the 20 s replies, nor the 60 s drain
    assert (
        len(lines_) == 1 and "cut off" in lines_[0] and f"numericjev resume {folder}" in lines_[0]
    )
    assert records(folder / "requests.jsonl") == []  # nothing answered, nothing recorded


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
