"""A run's answers are stored many at once, and a SIGKILL loses at most each job's latest
round (issue 29, item 3: a job sends one request per round)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel

from harness.cache import RequestCache, Store
from harness.cache.keys import keyer
from harness.cache.leases import TICK_S
from harness.calling.attempt import Attempt

SPEC = {"name": "m", "backend": "systemone", "params": {}}
JOBS = 16

# A child whose JOBS jobs each ask round after round (a lookup, an exchange of random
# length, the answer saved), printing "JOB ROUND" as each answer is saved, as fast as it can.
CHILD = """
import random, sys
import anyio
from pathlib import Path
from harness.cache import RequestCache, Store
from tests.cache.test_cache_batching import JOBS, SPEC, answered, body

async def job(cache: RequestCache, j: int) -> None:
    for r in range(10**9):
        key, _ = await cache.find(body(r), f"j{j}#{r}")
        await anyio.sleep(random.random() * 0.002)  # the exchange
        cache.save(key, answered())
        print(j, r, flush=True)

async def main() -> None:
    cache = RequestCache(Store(Path(sys.argv[1])), True, SPEC, "r")
    async with anyio.create_task_group() as tg:
        for j in range(JOBS):
            tg.start_soon(job, cache, j)

anyio.run(main)
"""


def body(r: int) -> dict[str, object]:
    """Round ``r``'s request body."""
    return {"questions": {}, "round": r}


def answered() -> Attempt:
    """A live answer that passed validation."""
    response = b'{"answers":{"q1":"3"}}'
    return Attempt(
        1, 0.0, 1.0, 200, None, None, {"answers": {"q1": "3"}}, "m", None, 0.01, None,
        response_json=response,
    )  # fmt: skip


def stored(path: Path) -> int:
    """Entries another process sees in the file now."""
    other = Store(path, readonly=True)
    try:
        return other.stats().entries
    finally:
        other.close()


def test_answers_wait_for_their_jobs_next_round(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = RequestCache(Store(path), True, SPEC, "r")
    commits: list[str] = []
    cache.store.db.set_trace_callback(
        lambda sql: commits.append(sql) if sql.startswith("BEGIN IMMEDIATE") else None
    )

    async def ask(job: str, r: int) -> None:
        key, hit = await cache.find(body(r), f"{job}#{r}")
        assert hit is None
        cache.save(key, answered())

    async def main() -> list[int]:
        seen = []
        for job in "abc":  # three jobs' first rounds: held over their passes
            await ask(job, 1)
        await anyio.lowlevel.checkpoint()
        seen.append(stored(path))
        await ask("b", 2)  # b's next round: b#1 (and the others queued) stored first
        seen.append(stored(path))
        await anyio.lowlevel.checkpoint()
        seen.append(stored(path))
        return seen

    assert anyio.run(main) == [0, 3, 3]  # b#2, its job's latest, waits for the next commit
    assert len(commits) == 1
    cache.close()
    assert stored(path) == 4


def test_a_store_that_fails_is_reported_and_the_exchange_goes_on(tmp_path: Path) -> None:
    cache = RequestCache(Store(tmp_path / "c.sqlite3"), True, SPEC, "r")
    reported: list[BaseException] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context["exception"]))
        key, _ = await cache.find(body(1), "a#1")
        cache.save(key, answered())
        key, _ = await cache.find(body(2), "a#2")
        cache.store.db.close()  # the file can no longer be written
        cache.save(key, answered())  # a#1 is stored first, and fails: reported, not raised

    anyio.run(main)
    # Reported by the loop (the save, then the pass's end), as a pass's commit always was.
    assert reported and all(isinstance(exc, sqlite3.Error) for exc in reported)


def test_answers_are_stored_within_a_tick(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = RequestCache(Store(path), True, SPEC, "r")

    async def main() -> tuple[int, int]:
        key, _ = await cache.find(body(1), "a#1")
        cache.save(key, answered())
        await anyio.lowlevel.checkpoint()
        before = stored(path)
        await anyio.sleep(TICK_S * 1.5)
        return before, stored(path)

    assert anyio.run(main) == (0, 1)
    cache.close()


def test_answers_without_a_job_are_stored_as_their_pass_ends(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = RequestCache(Store(path), True, SPEC, "r")

    async def main() -> tuple[int, int]:
        for i in range(7):  # keyed by their callers (a probe), not by ``find``
            cache.save(f"k{i}", answered())
        during = stored(path)  # the pass has not ended: nothing committed yet
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        return during, stored(path)

    assert anyio.run(main) == (0, 7)
    cache.close()


def test_a_newcomer_finds_the_answers_queued_before_it_came(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    first = RequestCache(Store(path), True, SPEC, "first")

    async def main() -> tuple[object, int]:
        key, _ = await first.find(body(1), "a#1")
        first.save(key, answered())  # queued: its job has no other round yet
        await anyio.lowlevel.checkpoint()
        second = RequestCache(Store(path), True, SPEC, "second")  # another process comes
        try:
            again, hit = await second.find(body(1), "a#1")
            assert hit is None  # not stored yet ...
            # ... and not asked again: the first stores it where it sees the second
            return await second.claim(again, body(1)), second.waited
        finally:
            second.close()

    hit, waited = anyio.run(main)
    assert hit is not None and waited == 1
    first.close()


def test_sigkill_loses_at_most_each_jobs_latest_round(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    Store(path).close()
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, cwd=root
    )
    assert child.stdout is not None
    latest = dict.fromkeys(range(JOBS), -1)  # each job's latest round saved
    for _ in range(1500):
        j, r = map(int, child.stdout.readline().split())
        latest[j] = r
    child.send_signal(signal.SIGKILL)
    child.wait()
    for line in child.stdout.read().splitlines():
        if len(words := line.split()) == 2:  # a line cut off by the kill is not counted
            latest[int(words[0])] = int(words[1])
    child.stdout.close()
    store = Store(path)
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {r[0] for r in store.db.execute("SELECT key FROM exchanges")}
    store.close()
    key = keyer(SPEC)
    for j, last in latest.items():
        rounds = {r for r in range(last + 2) if key(body(r), f"j{j}#{r}") in keys}
        # Every round before the job's latest is stored; the latest (and one saved but not
        # yet printed) may be lost, and nothing after a lost round is stored.
        assert set(range(last)) <= rounds, (j, last, sorted(rounds))
        assert rounds == set(range(len(rounds)))


def test_one_pass_lookups_are_one_select(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    filler = RequestCache(Store(path), True, SPEC, "paid")
    question = {"type": "choice", "criteria": {"a": "x", "b": "y"}}
    bodies = [{"questions": {"q1": question}, "n": i} for i in range(10)]
    choice = {"answers": {"q1": {"choice": "a"}}}

    async def fill() -> None:
        for i in (1, 4, 7):  # stored earlier: hits
            filler.save(
                filler.key(bodies[i], f"j{i}#1"),
                Attempt(1, 0.0, 1.0, 200, None, None, choice, "m", None, 0.01, None),
            )

    anyio.run(fill)
    filler.close()
    cache = RequestCache(Store(path), True, SPEC, "r")
    selects: list[str] = []
    cache.store.db.set_trace_callback(
        lambda sql: selects.append(sql) if "FROM exchanges WHERE key IN" in sql else None
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
