"""The answers of one event-loop pass are stored in one transaction, and a SIGKILL loses at
most that pass's (issue 29, item 3)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel

from harness.cache import RequestCache, Store
from harness.calling.attempt import Attempt

SPEC = {"name": "m", "backend": "systemone", "params": {}}

# A child that saves PER answers in each event-loop pass, then prints how many passes have
# ended (their commits done), as fast as it can.
CHILD = """
import sys, time
import anyio
from pathlib import Path
from harness.cache import RequestCache, Store
from tests.cache.test_cache_batching import PER, SPEC, answered

async def main() -> None:
    cache = RequestCache(Store(Path(sys.argv[1])), True, SPEC, "r")
    n = 0
    while True:
        for i in range(PER):
            cache.save(f"{n}-{i}", answered())
        await anyio.sleep(0)  # the pass ends: its answers are committed
        await anyio.sleep(0)
        n += 1
        print(n, flush=True)

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


def test_sigkill_loses_at_most_one_pass(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    Store(path).close()
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, cwd=root
    )
    assert child.stdout is not None
    ended = 0
    while ended < 200:
        ended = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    rest = child.stdout.read().split()
    child.stdout.close()
    ended = int(rest[-1]) if rest else ended
    store = Store(path)
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {r[0] for r in store.db.execute("SELECT key FROM exchanges")}
    # Every pass reported ended is stored whole; at most the next one besides, whole too.
    assert {f"{n}-{i}" for n in range(ended) for i in range(PER)} <= keys
    assert len(keys) in (ended * PER, (ended + 1) * PER)


def test_one_pass_lookups_are_one_select(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    filler = RequestCache(Store(path), True, SPEC, "paid")
    question = {"type": "choice", "criteria": {"a": "x", "b": "y"}}
    bodies = [{"questions": {"q1": question}, "n": i} for i in range(10)]
    choice = {"answers": {"q1": {"choice": "a"}}}
    for i in (1, 4, 7):  # stored earlier: hits
        filler.save(
            filler.key(bodies[i], f"j{i}#1"),
            Attempt(1, 0.0, 1.0, 200, None, None, choice, "m", None, 0.01, None),
        )
    filler.close()
    cache = RequestCache(Store(path), True, SPEC, "r")
    selects: list[str] = []
    cache.store.db.set_trace_callback(
        lambda sql: selects.append(sql) if sql.startswith("SELECT * FROM exchanges") else None
    )
    found: dict[int, object] = {}

    async def one(i: int) -> None:
        key, hit = await cache.find(bodies[i], f"j{i}#1")
        assert key == cache.key(bodies[i], f"j{i}#1")
        found[i] = hit

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
            with anyio.CancelScope() as scope:  # a lookup cut off before its pass ends
                scope.cancel()
                await cache.find(bodies[0], "j0#9")

    anyio.run(main)
    assert len(selects) == 1  # ten lookups (eleven asked) in one SELECT
    assert {i for i, hit in found.items() if hit is not None} == {1, 4, 7}
    assert (cache.hits, cache.misses) == (3, 7)
    cache.close()


def test_a_body_that_is_not_json_fails_its_own_lookup_only(tmp_path: Path) -> None:
    cache = RequestCache(Store(tmp_path / "c.sqlite3"), True, SPEC, "r")
    outcomes: list[str] = []

    async def one(body: dict[str, object]) -> None:
        try:
            _, hit = await cache.find(body, "j#1")
            outcomes.append("miss" if hit is None else "hit")
        except TypeError:
            outcomes.append("error")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, {"questions": {}, "x": object()})
            tg.start_soon(one, {"questions": {}})

    anyio.run(main)
    assert sorted(outcomes) == ["error", "miss"]
    cache.close()
