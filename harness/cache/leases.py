"""Single flight across processes: a lease row per exchange being asked (issue 32, case 7).

docs/cache.md, "Two runs at once pay once", gives the rules (a process alone takes no
lease; a newcomer waits until each process there before it has looked) and the measurements.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Sequence
from enum import Enum

from harness.cache.keys import Key

LEASE_S = 120.0  # a lease outlives any one exchange's attempts (the client's deadline is 30 s)
PRESENCE_S = 120.0  # a process not heard of for this long is taken to be gone
BEAT_S = 10.0  # how often a process alone renews its presence (at a commit or a tick)
TICK_S = 0.5  # how often a process looks for others while it has the file open

SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    holder TEXT NOT NULL,         -- the process (host:pid:nonce) asking it now
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL         -- epoch seconds; past it, anyone may take the lease
);
CREATE TABLE IF NOT EXISTS presence (
    holder TEXT PRIMARY KEY,      -- a process using the file now
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    seen REAL NOT NULL            -- epoch seconds: when it last looked for others
);
"""
HOST = socket.gethostname()


class Claim(Enum):
    """What taking a lease on a key found."""

    MINE = "mine"  # this process asks it
    HELD = "held"  # another live process is asking it: wait for its answer
    STORED = "stored"  # answered meanwhile: read it


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


class Flight:
    """One process's leases on one cache file (module docstring)."""

    def __init__(self) -> None:
        self.holder = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # unique across forks too
        self.shared = False  # another live process uses the file: every miss is leased
        self.asking: set[Key] = set()  # misses this process is asking now
        self.leased: set[Key] = set()  # those whose lease it holds
        self.joined = 0.0  # when it opened the file
        self._acked = False  # every process here before it has seen it since
        self._beat = 0.0  # when its presence is next renewed, alone

    def join(self, db: sqlite3.Connection) -> None:
        """Say this process is here, and look whether another is."""
        with db:
            db.execute("BEGIN IMMEDIATE")
            # Timed under the write lock, never before it: a process that looked while this
            # one waited for the lock (so did not see it) must not count as having seen it.
            self.joined = time.time()
            self._look(db, self.joined)

    def leave(self, db: sqlite3.Connection) -> None:
        """Give back every lease and say this process has gone."""
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM leases WHERE holder = ?", (self.holder,))
            db.execute("DELETE FROM presence WHERE holder = ?", (self.holder,))

    def ask(self, key: Key) -> bool:
        """This process misses ``key`` and will ask it; whether it must take the lease first."""
        if self.shared:
            return True
        self.asking.add(key)
        return False

    def done(self, key: Key) -> bool:
        """``key`` was asked (answered or not); whether its lease is to be given back."""
        self.asking.discard(key)
        if key in self.leased:
            self.leased.discard(key)
            return True
        return False

    def _look(self, db: sqlite3.Connection, now: float) -> None:
        """Look for other live processes; lease what this one asks if one has just come;
        say so (``seen``)."""
        rows = db.execute(
            "SELECT holder, host, pid, seen FROM presence WHERE holder != ?", (self.holder,)
        ).fetchall()
        dead = {holder for holder, host, pid, _ in rows if _dead(host, pid)}
        live = [
            seen for holder, _, _, seen in rows if seen > now - PRESENCE_S and holder not in dead
        ]
        if dead:  # SIGKILLed on this host: their rows and leases go with them
            gone = [(holder,) for holder in dead]
            db.executemany("DELETE FROM leases WHERE holder = ?", gone)
            db.executemany("DELETE FROM presence WHERE holder = ?", gone)
        was, self.shared = self.shared, bool(live)
        self._acked = self._acked or all(seen >= self.joined for seen in live)
        if self.shared and not was:
            for key in self.asking - self.leased:
                if self._take(db, key, now, replace=False):
                    self.leased.add(key)
        if self.shared or now >= self._beat:
            db.execute(
                "INSERT OR REPLACE INTO presence VALUES (?, ?, ?, ?)",
                (self.holder, HOST, os.getpid(), now),
            )
            self._beat = now + BEAT_S

    def settle(
        self,
        db: sqlite3.Connection,
        releases: Sequence[Key],
        claims: Sequence[Key],
        look: bool = True,
    ) -> dict[Key, Claim]:
        """Inside the caller's write transaction: give back the leases on ``releases``,
        look for others (``_look``: where ``look``, or always once another is there), then
        try a lease on each of ``claims``; what each found."""
        now = time.time()
        if releases:
            db.executemany(
                "DELETE FROM leases WHERE key = ? AND holder = ?",
                [(k, self.holder) for k in releases],
            )
        if look or self.shared or claims:  # alone, a look per pass would be a read per pass
            self._look(db, now)
        found: dict[Key, Claim] = {}
        for key in claims:
            # Not yet seen by a process here before this one: what it asks is unknown.
            found[key] = claim = self._claim(db, key, now) if self._acked else Claim.HELD
            if claim is Claim.MINE:
                self.asking.add(key)
                self.leased.add(key)
        return found

    def _claim(self, db: sqlite3.Connection, key: Key, now: float) -> Claim:
        if db.execute("SELECT 1 FROM exchanges WHERE key = ?", (key,)).fetchone():
            return Claim.STORED  # answered since this pass's lookup
        if self._take(db, key, now, replace=False):
            return Claim.MINE
        row = db.execute(
            "SELECT holder, host, pid, expires FROM leases WHERE key = ?", (key,)
        ).fetchone()
        if row is not None and row[0] != self.holder and row[3] > now and not _dead(*row[1:3]):
            return Claim.HELD
        self._take(db, key, now, replace=True)  # expired, or its holder died
        return Claim.MINE

    def _take(self, db: sqlite3.Connection, key: Key, now: float, *, replace: bool) -> bool:
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        cur = db.execute(
            f"{verb} INTO leases VALUES (?, ?, ?, ?, ?)",
            (key, self.holder, HOST, os.getpid(), now + LEASE_S),
        )
        return cur.rowcount == 1
