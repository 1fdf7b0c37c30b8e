"""Helpers for tests that run the harness: in-process CLI calls and log readers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from harness.cli import main
from runfolder import whole_lines

SMALL = ["--param", "per_operator=2"]  # 8 families: 128 jobs, a fraction of a second on sim


def cli(*args: str) -> int:
    """Run the CLI in process and return its exit status."""
    return main(list(args))


def copy_run(source: Path, folder: Path) -> Path:
    """A copy of a run folder made once per module, for a test that changes it (cheaper
    than running the sim again; a run folder holds no path of its own)."""
    shutil.copytree(source, folder)
    return folder


def spawn(*args: str) -> subprocess.Popen[bytes]:
    """Start the CLI in a child process (for kills)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def records(path: Path) -> list[dict[str, Any]]:
    """Every whole JSONL record of a file (a torn tail is skipped); a log stored compressed
    (``path.zst``) is read through the one reader."""
    if not path.exists():
        return [orjson.loads(line) for line in whole_lines(path)]
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line.endswith(b"\n"):
            out.append(orjson.loads(line))
    return out


def final_outputs(folder: Path) -> dict[tuple[str, str], tuple[Any, str]]:
    """(job, decoder) -> (value, status), last line wins."""
    return {
        (r["job"], r["decoder"]): (r["value"], r["status"])
        for r in records(folder / "outputs.jsonl")
    }


def answered(folder: Path) -> Counter[tuple[str, int]]:
    """How often each (job, round) was answered successfully."""
    return Counter(
        (r["job"], r["round"]) for r in records(folder / "requests.jsonl") if r["error"] is None
    )


def cached_entries() -> int:
    """Entries in the test's request cache (``$NUMERICJEV_CACHE``; 0: none, or no file)."""
    from harness.cache import Store, default_path

    if not default_path().exists():
        return 0
    store = Store(default_path(), readonly=True)
    try:
        return store.stats().entries
    finally:
        store.close()
