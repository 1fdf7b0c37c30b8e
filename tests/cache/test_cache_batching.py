"""The answers of one event-loop pass are stored in one transaction (alone with the file,
with the next passes' up to ``COMMIT_S`` later), and a SIGKILL loses only uncommitted
answers, never part of a transaction (issue 29, item 3)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from harness.cache import RequestCache, Store, lookup
from harness.calling.attempt import Attempt

SPEC = {"name": "m", "backend": "systemone", "params": {}}

# A child that saves PER answers in each event-loop pass, a pass every millisecond, and
# prints how many answers are committed whenever that grows.
CHILD = """
import sys, time
import anyio
from pathlib import Path
from harness.cache import RequestCache, Store
from tests.cache.test_cache_batching import PER, SPEC, answered

async def main() -> None:
    cache = RequestCache(Store(Path(sys.argv[1])), True, SPEC, "r")
    count = "SELECT COUNT(*) FROM exchanges"
    n = shown = 0
    while True:
        for i in range(PER):
            cache.save(f"{n}-{i}", answered())
        await anyio.sleep(0.001)  # the pass ends: its answers committed or held
        n += 1
        stored = cache.store.db.execute(count).fetchone()[0]
        if stored > shown:
            print(stored, flush=True)
            shown = stored

anyio.run(main)
"""
PER = 7


def answered() -> Attempt:
    """A live answer that passed validation."""
    body = b'{"answers":{"q1":"3"}}'
    return Attempt(
        1, 0.0, 1.0, 200, None, None, {"answers": {"q1": "3"}}, "m", None, 0.01, None,
        response_json=body,
    )  # fmt: skip


def test_one_pass_is_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = RequestCache(Store(path), True, SPEC, "r")
    other = Store(path, readonly=True)

    async def main() -> tuple[int, int]:
        for i in range(PER):
            cache.save(f"k{i}", answered())
        during = other.stats().entries  # the pass has not ended: nothing committed yet
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        return during, other.stats().entries

    assert anyio.run(main) == (0, PER)
    cache.save("late", answered())  # off the loop: stored at once
    assert other.stats().entries == PER + 1
    cache.close()


def test_answers_alone_wait_at_most_commit_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lookup, "COMMIT_S", 0.3)  # long enough for a loaded machine
    path = tmp_path / "c.sqlite3"
    cache = RequestCache(Store(path), True, SPEC, "r")
    other = Store(path, readonly=True)

    async def main() -> list[int]:
        seen = []
        for n in range(2):
            for i in range(PER):
                cache.save(f"{n}-{i}", answered())
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
            seen.append(other.stats().entries)
        await anyio.sleep(0.6)  # the held pass's commit is due
        seen.append(other.stats().entries)
        for i in range(PER):
            cache.save(f"last-{i}", answered())
        return seen

    # The first pass is committed as it ends, the second held for COMMIT_S, the last one's
    # (held too) stored by close.
    assert anyio.run(main) == [PER, PER, 2 * PER]
    cache.close()
    assert other.stats().entries == 3 * PER


def test_sigkill_loses_only_uncommitted_whole_passes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    Store(path).close()
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, cwd=root
    )
    assert child.stdout is not None
    stored = 0
    while stored < 100 * PER:
        stored = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    rest = child.stdout.read().split()
    child.stdout.close()
    stored = int(rest[-1]) if rest else stored
    store = Store(path)
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {r[0] for r in store.db.execute("SELECT key FROM exchanges")}
    # Every answer reported committed is there, and what is there is whole passes, in order
    # (commits are never torn): the passes after the last commit are all a kill loses.
    passes = len(keys) // PER
    assert keys == {f"{n}-{i}" for n in range(passes) for i in range(PER)}
    assert len(keys) >= stored
