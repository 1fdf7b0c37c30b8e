"""Single flight across processes (issue 32, case 7): two runs at once on one cache pay for
each body once; a SIGKILLed leaseholder's leases are taken over at once on its host."""

from __future__ import annotations

import hashlib
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from harness.cache import Store
from harness.cache.leases import HOST, LEASE_S, Claim, Flight
from harness.serve import ServerConfig
from tests.cache.test_cache_runs import outputs
from tests.counting import counting_server
from tests.runhelpers import answered, records

TINY = ["--param", "per_operator=1"]  # 64 jobs, ~430 exchanges


def start(folder: Path, url: str) -> subprocess.Popen[bytes]:
    """A run of the small suite on the test's cache, in its own process."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", *TINY, "--model", "jev-sim",
         "--base-url", url, "--run", str(folder), "--no-progress", "--cache", "read-write",
         "--concurrency", "8"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def sent(folder: Path) -> int:
    """Exchanges a run paid for (answered live, not from the cache)."""
    return sum(1 for r in records(folder / "requests.jsonl") if "cache" not in r)


def test_alone_no_lease_is_taken_until_another_process_comes(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite3")
    first, second = Flight(), Flight()
    first.join(store.db)
    assert not first.ask("a")  # alone: asked without a lease
    assert store.write((), (), (), first) == {} and not first.shared
    second.join(store.db)  # another process opens the file: it sees the first at once ...
    assert second.shared and second.ask("a")
    # ... but sends nothing until the first has seen it (the first's misses are unknown).
    assert store.write((), (), ("b",), second) == {"b": Claim.HELD}
    store.write((), (), (), first)  # the first's next commit: it sees the second, leases "a"
    assert first.shared and first.leased == {"a"}
    assert store.write((), (), ("a", "b"), second) == {"a": Claim.HELD, "b": Claim.MINE}
    assert first.done("a")  # answered: its lease is given back with the answer
    store.write((), ("a",), (), first)
    assert store.write((), (), ("a",), second) == {"a": Claim.MINE}
    first.leave(store.db)
    store.write((), (), (), second)
    assert not second.shared


def test_two_runs_at_once_pay_for_each_body_once(tmp_path: Path) -> None:
    # 150 ms a reply, 8 at a time: each run takes ~8 s, long beside a process's start-up,
    # so the later run catches up with the earlier one's answers and then asks beside it.
    waited = 0
    with counting_server(ServerConfig(port=0, latency_ms=150)) as (url, paid):
        runs = [start(tmp_path / name, url) for name in ("a", "b")]
        for child in runs:
            _, err = child.communicate(timeout=300)
            assert child.returncode == 0, err.decode()
            waited += int(re.findall(rb"(\d+) waited for another process", err)[-1])
    a, b = tmp_path / "a", tmp_path / "b"
    exchanges = sum(answered(a).values())
    assert sum(answered(b).values()) == exchanges
    print(f"\ntwo runs at once: a paid {sent(a)}, b paid {sent(b)} of {exchanges} each; "
          f"{waited} answers waited for; paid twice {paid.twice}")  # fmt: skip
    assert waited > 0  # the runs overlapped: one waited for answers the other was asking
    assert sent(a) + sent(b) == exchanges == paid.total  # each body paid by one run only
    assert outputs(a / "outputs.jsonl") == outputs(b / "outputs.jsonl")
    leases = Store(tmp_path / "request-cache.sqlite3").db.execute("SELECT COUNT(*) FROM leases")
    assert leases.fetchone()[0] == 0  # every lease given back


def test_a_killed_leaseholder_is_waited_for_no_longer(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    store = Store(path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs: a holder SIGKILLed mid-exchange
    with store.db:
        store.db.execute(
            "INSERT INTO leases VALUES ('k', 'gone', ?, ?, ?)", (HOST, dead.pid, time.time() + 60)
        )
        store.db.execute(
            "INSERT INTO leases VALUES ('j', 'live', ?, ?, ?)", (HOST, 1, time.time() + 60)
        )
        store.db.execute("INSERT INTO leases VALUES ('x', 'far', 'elsewhere', 1, ?)", (0.0,))
        store.db.execute("INSERT INTO leases VALUES ('y', 'gone', ?, ?, ?)", (HOST, dead.pid, 9e9))
        store.db.execute(
            "INSERT INTO presence VALUES ('gone', ?, ?, ?)", (HOST, dead.pid, time.time())
        )
    flight = Flight()
    flight.join(store.db)
    found = store.write((), (), ("k", "j", "x", "new"), flight)
    # The dead holder's lease and the expired one are taken; a live holder's is waited for.
    assert found == {"k": Claim.MINE, "j": Claim.HELD, "x": Claim.MINE, "new": Claim.MINE}
    # The dead process's presence and every lease it held are gone with it.
    assert store.db.execute("SELECT holder FROM presence").fetchall() == [(flight.holder,)]
    assert store.db.execute("SELECT COUNT(*) FROM leases WHERE holder = 'gone'").fetchone() == (0,)


@pytest.mark.soak
def test_a_run_killed_mid_flight_costs_the_other_only_its_in_flight(tmp_path: Path) -> None:
    with counting_server(ServerConfig(port=0, latency_ms=20)) as (url, paid):
        killed = start(tmp_path / "killed", url)
        log = tmp_path / "killed" / "requests.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (log.exists() and log.stat().st_size > 30_000):
            time.sleep(0.01)  # noqa: TID251 - polling a child process
        other = start(tmp_path / "other", url)
        time.sleep(0.2)  # noqa: TID251 - both asking at once
        killed.send_signal(signal.SIGKILL)
        killed.communicate()
        t0 = time.monotonic()
        _, err = other.communicate(timeout=300)
        assert other.returncode == 0, err.decode()
        assert time.monotonic() - t0 < LEASE_S / 2  # the dead holder's leases were not waited out
    # Paid twice: only what the killed run had in flight (its leases, at most its concurrency:
    # no answer in its log) and answers it had not stored yet, each its job's latest round.
    twice = {body for body, n in paid.counts.items() if n > 1}
    latest: dict[str, int] = {}
    logged: dict[bytes, tuple[str, int]] = {}
    for r in records(log):
        if r["error"] is None and "cache" not in r:
            latest[r["job"]] = max(latest.get(r["job"], -1), r["round"])
            logged[hashlib.sha1(orjson.dumps(r["request"])).digest()] = (r["job"], r["round"])
    assert logged.keys() <= paid.counts.keys()  # its log's bodies are the bytes it sent
    assert sum(n - 1 for body, n in paid.counts.items() if body not in logged) <= 8
    assert all(latest[logged[body][0]] == logged[body][1] for body in twice if body in logged)


def test_a_look_made_while_a_newcomer_waits_for_the_lock_does_not_count_as_seeing_it(
    tmp_path: Path,
) -> None:
    first_store = Store(tmp_path / "c.sqlite3")
    # The second process's connection, used from the thread that makes it wait.
    db = sqlite3.connect(tmp_path / "c.sqlite3", timeout=30, isolation_level=None,
                         check_same_thread=False)  # fmt: skip
    first, second = Flight(), Flight()

    def claim(key: str) -> Claim:
        with db:
            db.execute("BEGIN IMMEDIATE")
            return second.settle(db, (), (key,))[key]

    first.join(first_store.db)
    first_store.db.execute("BEGIN IMMEDIATE")  # the first's commit has the lock ...
    joining = threading.Thread(target=second.join, args=(db,))
    joining.start()  # ... while the second comes and waits for it
    time.sleep(0.05)  # noqa: TID251 - the second is waiting on SQLite's busy handler
    first_store.db.execute(  # the first says it looked now, not having seen the second
        "UPDATE presence SET seen = ? WHERE holder = ?", (time.time(), first.holder)
    )
    first_store.db.execute("COMMIT")
    joining.join()
    assert second.shared
    # It must wait for the first to have seen it, else both would ask the same keys.
    assert claim("a") is Claim.HELD
    first_store.write((), (), (), first)  # the first looks: now it sees the second
    assert first.shared
    assert claim("a") is Claim.MINE
