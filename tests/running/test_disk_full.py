"""A write the disk refuses stops the run at once, in one line, and resume finishes it.

The refusal is made real without a full disk: the child process runs under a file size
limit (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored), so a write past it fails with EFBIG as a
write to a full disk fails with ENOSPC. Where ``mount`` is allowed, a 1 MB tmpfs does it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.serve import ServerConfig
from tests.counting import counting_server
from tests.runhelpers import SMALL, cli, records

CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from harness.cli import main
sys.exit(main(sys.argv[2:]))
"""
CONCURRENCY = 4
LIMIT = 150_000  # bytes a file may reach: requests.jsonl passes it after ~100 exchanges


def child(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process whose files may not grow past ``limit`` bytes."""
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def outputs(folder: Path) -> list[dict[str, Any]]:
    """The outputs as a set of lines: order and the run's own id aside."""
    lines = [{k: v for k, v in r.items() if k not in ("run", "seq")} for r in records(folder)]
    return sorted(lines, key=lambda r: (r["job"], r["decoder"], r["status"]))


def model_args(url: str | None, workers: int = 1) -> list[str]:
    if url is None:
        return ["--model", "sim", "--workers", str(workers)]
    return ["--model", "jev-sim", "--base-url", url]


@pytest.mark.parametrize(
    ("served", "workers"),
    [(True, 1), (False, 1), (False, 2)],
    ids=["served", "in-process", "worker-pool"],  # the pool: its parent is the one writer
)
def test_a_refused_write_stops_the_run_in_one_line_and_resume_finishes_it(
    tmp_path: Path, served: bool, workers: int
) -> None:
    folder, clean = tmp_path / "run", tmp_path / "clean"
    common = [*SMALL, "--no-progress", "--cache", "off", "--concurrency", str(CONCURRENCY)]
    with counting_server(ServerConfig(port=0)) as (url, answered):
        model = model_args(url if served else None, workers)
        done = child(LIMIT, "run", *model, *common, "--run", str(folder))
        assert done.returncode == 4, done.stderr
        assert "Traceback" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        assert errors == [
            f"numericjev run: error: cannot write {folder}/requests.jsonl: File too large "
            f"(errno 27); fix that, then: numericjev resume {folder}"
        ]
        kept = len(records(folder / "requests.jsonl"))
        assert kept > 0
        if served:
            # Nothing sent after the failed write: only what was in flight then, and the
            # answers of the event-loop pass whose flush failed, were never recorded.
            answered.settle()
            assert answered.total - kept <= 2 * CONCURRENCY
        sent_before_resume = answered.total
        assert cli("resume", str(folder), "--no-progress") == 0
        if served:
            assert answered.twice <= 2 * CONCURRENCY
            assert answered.total - sent_before_resume < 852  # the rest, not all again
        assert cli("run", *model, *common, "--run", str(clean)) == 0
    assert outputs(folder / "outputs.jsonl") == outputs(clean / "outputs.jsonl")


def test_a_full_tmpfs_stops_the_run_in_one_line(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        folder = disk / "run"
        with counting_server(ServerConfig(port=0)) as (url, answered):
            done = child(
                1 << 40, "run", *model_args(url), *SMALL, "--no-progress", "--cache", "off",
                "--concurrency", str(CONCURRENCY), "--run", str(folder),
            )  # fmt: skip
            assert done.returncode == 4, done.stderr
            assert "Traceback" not in done.stderr
            assert (
                f"No space left on device (errno 28); free space, then: numericjev resume {folder}"
                in done.stderr
            )
            answered.settle()
            assert answered.total - len(records(folder / "requests.jsonl")) <= 2 * CONCURRENCY
    finally:
        subprocess.run(["umount", str(disk)], check=False)
    assert not os.path.ismount(disk)
