"""Single flight across processes: a lease row per exchange being asked (issue 32, case 7).

Two runs (or a run's worker processes) that miss the same key at once would each pay for
it. Before a miss is sent, its process takes a lease on the key, in the same write
transaction that stores the pass's answers (``settle``); a process that finds the lease
held by another waits for that answer instead of asking again. Storing the answer releases
the lease in the same transaction, so no reader ever sees the lease gone and the answer
not yet there.

Kill-safe: a lease names its holder's host and pid and expires ``LEASE_S`` after it was
taken. A holder found dead on this host (a SIGKILL, a crash) loses its leases at once; one
on another host, once they expire. What the dead holder had in flight is then asked again:
the only exchanges two processes may both pay for.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Sequence
from enum import Enum

LEASE_S = 120.0  # a lease outlives any one exchange's attempts (the client's deadline is 30 s)

SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    holder TEXT NOT NULL,         -- the process (host:pid:nonce) asking it now
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL         -- epoch seconds; past it, anyone may take the lease
)
"""
HOST = socket.gethostname()


class Claim(Enum):
    """What taking a lease on a key found."""

    MINE = "mine"  # this process asks it
    HELD = "held"  # another live process is asking it: wait for its answer
    STORED = "stored"  # answered meanwhile: read it


def new_holder() -> str:
    """A name for this process's leases (unique across hosts, pids and forks)."""
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _dead(host: str, pid: int) -> bool:
    """Whether the holder ``host:pid`` is known dead (only a process on this host can be)."""
    if host != HOST or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def settle(
    db: sqlite3.Connection, releases: Sequence[str], claims: Sequence[str], holder: str
) -> dict[str, Claim]:
    """Inside the caller's write transaction: drop ``holder``'s leases on ``releases``,
    then try to take a lease on each of ``claims``; what each claim found."""
    if releases:
        db.executemany(
            "DELETE FROM leases WHERE key = ? AND holder = ?", [(k, holder) for k in releases]
        )
    found: dict[str, Claim] = {}
    now = time.time()
    pid = os.getpid()
    for key in claims:
        if db.execute("SELECT 1 FROM exchanges WHERE key = ?", (key,)).fetchone():
            found[key] = Claim.STORED
            continue
        row = db.execute(
            "SELECT holder, host, pid, expires FROM leases WHERE key = ?", (key,)
        ).fetchone()
        if row is not None and row[0] != holder and row[3] > now and not _dead(row[1], row[2]):
            found[key] = Claim.HELD
            continue
        db.execute(
            "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?)",
            (key, holder, HOST, pid, now + LEASE_S),
        )
        found[key] = Claim.MINE
    return found
