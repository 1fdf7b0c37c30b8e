"""A run in several processes (``--workers N``, ``harness.spreading.pool``): one run folder, the same records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.cli import main
from harness.errors import ConfigError
from harness.spreading.pool import Pool, processes_for
from runfolder import OUTPUTS, REQUESTS, read_totals, scan_logs
from tests.runhelpers import answered, final_outputs, spawn

PARAMS = {"per_operator": "3"}  # 192 jobs: a few hundred milliseconds a run
ARGS = ["run", "--param", "per_operator=3", "--no-progress"]


def _records(folder: Path, name: str) -> list[dict]:
    """A log's records without what differs between two runs (order, time, numbering)."""
    found = []
    for line in (folder / name).read_bytes().splitlines():
        record = orjson.loads(line)
        for key in ("run", "seq", "t", "latency_ms"):
            record.pop(key, None)
        found.append(record)
    return sorted(found, key=lambda r: orjson.dumps(r, option=orjson.OPT_SORT_KEYS))


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite run in one process."""
    folder = tmp_path_factory.mktemp("one") / "run"
    run(load_suite("affine", params=PARAMS), ModelSpec("sim"), folder=folder)
    return folder


def test_workers_write_the_records_of_one_process_into_one_run_folder(
    tmp_path: Path, one: Path
) -> None:
    folder = tmp_path / "three"
    suite = load_suite("affine", params=PARAMS)
    result = run(suite, ModelSpec("sim"), folder=folder, placement=Pool(3))
    assert result.complete and result.simulated and result.stopped is None
    assert not (folder / "shards").exists()
    for name in (REQUESTS, OUTPUTS):
        assert _records(folder, name) == _records(one, name)
    # Numbered 1..N in the order written: the folder reads as any run's.
    last = scan_logs(folder).last_seq
    assert last == len(_records(folder, REQUESTS)) + len(_records(folder, OUTPUTS))
    totals = read_totals(folder)
    assert totals is not None and totals["requests"] == result.counters.requests
    assert totals["requests_end"] == (folder / REQUESTS).stat().st_size


def test_the_request_cap_counts_every_worker_and_resume_finishes(
    tmp_path: Path, one: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "two"
    capped = [*ARGS, "--run", str(folder), "--workers", "2", "--max-requests", "41"]
    assert main(capped) == 1  # stopped by the cap
    assert sum(answered(folder).values()) == 41  # exactly the cap, across both processes
    assert "request cap reached" in capsys.readouterr().out
    # Resumed in processes too, capped again, then finished in one.
    resume = ["resume", str(folder), "--no-progress"]
    assert main([*resume, "--workers", "2", "--max-requests", "30"]) == 1
    assert sum(answered(folder).values()) == 71
    assert main([*resume, "--workers", "1"]) == 0
    assert final_outputs(folder) == final_outputs(one)
    assert max(answered(folder).values()) == 1


def test_auto_is_one_process_per_core_for_models_answered_here_only() -> None:
    assert processes_for("sim", None, cores=4) == 4
    assert processes_for("oracle", None, cores=2) == 2
    assert processes_for("jev-latest", None, cores=4) == 1
    assert processes_for("gguf:/m.gguf", None, cores=4) == 1
    assert processes_for("sim", 1) == 1
    with pytest.raises(ConfigError, match="--workers 2: only a model answered in this process"):
        processes_for("jev-latest", 2)
    with pytest.raises(ConfigError, match="at least 1"):
        processes_for("sim", 0)


def test_workers_for_a_served_model_are_refused_before_any_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "served"
    args = [*ARGS, "--model", "jev-latest", "--base-url", "http://127.0.0.1:9", "--skip-check"]
    assert main([*args, "--run", str(folder), "--workers", "2"]) == 2
    assert "only a model answered in this process" in capsys.readouterr().err
    assert not folder.exists()


def test_the_oracle_in_processes_is_labelled_oracle(tmp_path: Path) -> None:
    folder = tmp_path / "oracle"
    suite = load_suite("affine", params={"per_operator": "1"})
    result = run(suite, ModelSpec("oracle"), folder=folder, placement=Pool(2))
    assert result.oracle and not result.simulated and result.complete
    lines = [orjson.loads(line) for line in (folder / OUTPUTS).read_bytes().splitlines()]
    assert lines and all(line.get("oracle") is True for line in lines)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(folder: Path, child: subprocess.Popen[bytes], size: int) -> None:
    log = folder / REQUESTS
    deadline = time.monotonic() + 30
    while child.poll() is None and time.monotonic() < deadline:
        if log.exists() and log.stat().st_size > size:
            return
        time.sleep(0.005)  # noqa: TID251 - polling a child process


# 512 jobs, ~8 MB of requests log: the kills below land at 200 KB, a few per cent in, so the
# run is still going; the whole suite (2,048 jobs) checked nothing more and cost seconds a test.
TWICE = {"per_operator": "4", "repeats": "2"}
TWICE_ARGS = [f"--param={name}={value}" for name, value in TWICE.items()]


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quarter of the suite at two repeats, in one process (long enough to be interrupted)."""
    folder = tmp_path_factory.mktemp("twice") / "run"
    suite = load_suite("affine", params=TWICE)
    run(suite, ModelSpec("sim"), Limits(), folder=folder)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_run_takes_its_workers_and_resumes(tmp_path: Path, twice: Path) -> None:
    folder = tmp_path / "killed"
    child = spawn("run", *TWICE_ARGS, "--run", str(folder), "--workers", "2")
    _wait_for(folder, child, 200_000)
    assert child.poll() is None, "the run finished before it could be killed"
    workers = _children(child.pid)
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.01)  # noqa: TID251 - the kernel delivers the workers' SIGKILL
    assert len(workers) == 2 and not any(_alive(pid) for pid in workers)
    assert main(["status", str(folder)]) == 0  # a prefix of the records: readable as it is
    assert main(["resume", str(folder), "--no-progress"]) == 0
    assert final_outputs(folder) == final_outputs(twice)
    assert max(answered(folder).values()) == 1


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_every_worker_and_resume_finishes(
    tmp_path: Path, twice: Path, signum: int, status: int
) -> None:
    folder = tmp_path / "interrupted"
    child = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", *TWICE_ARGS, "--run",
         str(folder), "--workers", "2", "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    _wait_for(folder, child, 200_000)
    assert child.poll() is None, "the run finished before it could be interrupted"
    workers = _children(child.pid)
    child.send_signal(signum)
    _, err = child.communicate(timeout=30)
    assert child.returncode == status, err.decode()
    assert f"interrupted by {signal.Signals(signum).name}" in err.decode()
    assert not any(_alive(pid) for pid in workers)
    totals = read_totals(folder)
    assert totals is not None and totals["requests_end"] == (folder / REQUESTS).stat().st_size
    assert main(["resume", str(folder), "--no-progress"]) == 0
    assert final_outputs(folder) == final_outputs(twice)
    assert max(answered(folder).values()) == 1
