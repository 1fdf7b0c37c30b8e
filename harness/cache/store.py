"""A content-addressed SQLite cache of answered exchanges, shared by runs, processes, machines.

One table, one row per key (``keying.cache_key``). SQLite in WAL mode gives what the run
itself survives: each ``put`` (or ``write``, the answers a run held: ``RequestCache._schedule``)
is one transaction (a SIGKILL mid-write loses those rows and no others: the WAL's uncommitted
frames are discarded on the next open), many readers with one
writer at a time (a second writer waits on ``busy_timeout`` rather than failing), and a
reader never blocks a writer. ``INSERT OR IGNORE``: the first answer stored for a key stays,
so two runs writing the same key at once store it once, and importing twice adds nothing.

The schema version (``PRAGMA user_version``) also says how the file's keys were made
(``keys.KEY_VERSIONS``): a version 1 or 2 file keeps its keys (SHA-256, as hex text) for as
long as it is used, a new file is made at version 3 (a 16-byte digest in a BLOB key). All
are read and written; only entries of one version can be imported into another.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cache.keys import KEY_VERSIONS, SCHEMA_VERSION, Key
from harness.cache.leases import SCHEMA as LEASES
from harness.cache.leases import Claim, Flight
from harness.errors import ConfigError

# One table in every version; only the key's type and bytes differ (``keys.KEY_VERSIONS``):
# hex text up to version 2, the digest's 16 bytes from 3 (a smaller index to search and
# insert into).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    key {key} PRIMARY KEY,
    model TEXT NOT NULL,          -- the model spec's name (prune --model)
    served TEXT,                  -- the model the server said answered
    response BLOB NOT NULL,       -- the response body as received (JSON bytes)
    usage TEXT,                   -- JSON, or NULL
    cost_usd REAL,                -- what the live answer cost (NULL: unknown)
    t REAL NOT NULL,              -- epoch seconds when it was stored
    run TEXT NOT NULL             -- the run that paid for it
)
"""


_INSERT = "INSERT OR IGNORE INTO exchanges VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_CHUNK = 64
_SELECT_IN = {
    1 << n: f"SELECT * FROM exchanges WHERE key IN ({', '.join('?' * (1 << n))})"
    for n in range(_CHUNK.bit_length())
}


@dataclass(frozen=True)
class Entry:
    """One cached answer: what the live exchange returned, and who paid for it when."""

    key: Key
    model: str
    served: str | None
    response: bytes
    usage: str | None
    cost_usd: float | None
    t: float
    run: str

    def row(self) -> tuple[object, ...]:
        """The entry as the table's columns."""
        return (
            self.key, self.model, self.served, self.response, self.usage,
            self.cost_usd, self.t, self.run,
        )  # fmt: skip


@dataclass(frozen=True)
class Stats:
    """What ``numericjev cache stats`` prints."""

    path: Path
    entries: int
    bytes: int
    cost_usd: float
    models: dict[str, int]


def default_path() -> Path:
    """``$NUMERICJEV_CACHE``, else ``$XDG_CACHE_HOME/numericjev/cache.sqlite3`` (~/.cache)."""
    env = os.environ.get("NUMERICJEV_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "numericjev" / "cache.sqlite3"


def _unwritable(path: Path, exc: Exception) -> str:
    """The one line for a cache this process cannot write: its entries stay usable."""
    return (
        f"request cache {path} cannot be written ({exc}); to read it as it is use --cache "
        "read-only, or set NUMERICJEV_CACHE to a writable path"
    )


def _use_wal(db: sqlite3.Connection, tries: int = 20) -> None:
    """Switch ``db`` to WAL. Switching needs the file's exclusive lock, and SQLite answers
    "locked" at once, without its busy wait, while another connection is switching a new
    file too (measured: 16 of 900 opens of fresh files, three threads at a time); so wait
    for that connection's lock the way SQLite waits (``BEGIN IMMEDIATE`` honours the busy
    timeout), then ask again: by then the file is usually WAL already."""
    for attempt in range(tries):
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")


def _connect_readonly(path: Path) -> tuple[sqlite3.Connection, bool]:
    """``path`` opened read-only (``mode=ro``), and whether as immutable.

    A read-only WAL database still needs its ``-shm`` file, which SQLite cannot create in
    a read-only directory; there the file is opened with ``immutable=1``, which reads the
    database file alone (no locks, no WAL): right on a read-only mount, where nothing can
    change it; answers still in an uncheckpointed ``-wal`` are then misses, never wrong.
    """
    uri = path.resolve().as_uri()
    for immutable in (False, True):
        db = sqlite3.connect(
            f"{uri}?mode=ro{'&immutable=1' if immutable else ''}",
            uri=True,
            timeout=30.0,
            isolation_level=None,
        )
        try:
            db.execute("PRAGMA user_version").fetchone()
        except sqlite3.OperationalError:
            db.close()
            if immutable:
                raise
            continue
        return db, immutable
    raise AssertionError("unreachable")


class Store:
    """An open cache file; one per process (connections are not shared across a fork)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        """Open (creating unless ``readonly``) the cache at ``path``; a file of another
        schema version is refused with a one-line ``ConfigError``. ``readonly`` opens it
        as SQLite's read-only URI, so a cache on a read-only directory or mount serves hits
        (``immutable`` says it was opened as a file nothing may change, see ``_connect_readonly``)."""
        self.path = path
        self.readonly = readonly
        self.immutable = False
        if readonly and not path.exists():
            raise ConfigError(f"no request cache at {path}; run once with --cache read-write")
        try:
            if readonly:
                self.db, self.immutable = _connect_readonly(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                # URI filenames on, so that ``import_from`` can attach a file read-only.
                self.db = sqlite3.connect(
                    path.resolve().as_uri(), uri=True, timeout=30.0, isolation_level=None
                )
                self.db.execute("PRAGMA busy_timeout = 30000")
                _use_wal(self.db)
                # NORMAL in WAL mode: a power cut may lose the last commits, never the file.
                self.db.execute("PRAGMA synchronous = NORMAL")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not readonly:
                with self.db:
                    self.db.execute("BEGIN IMMEDIATE")
                    self.db.execute(_SCHEMA.format(key="BLOB"))
                    self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                version = SCHEMA_VERSION
        except OSError as exc:  # its folder cannot be made
            raise ConfigError(_unwritable(path, exc)) from exc
        except sqlite3.OperationalError as exc:  # a file SQLite cannot open or write
            raise ConfigError(
                _unwritable(path, exc)
                if not readonly
                else f"request cache {path} cannot be opened ({exc}); check that it is readable"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"request cache {path} is not a SQLite file ({exc}); move it away "
                "or set NUMERICJEV_CACHE to another path"
            ) from exc
        if version not in KEY_VERSIONS:
            self.db.close()
            raise ConfigError(
                f"request cache {path} has schema version {version}, this harness reads "
                f"{' and '.join(map(str, KEY_VERSIONS))}; keep it for the version that wrote "
                "it and set NUMERICJEV_CACHE to another path for this one"
            )
        self.version: int = version  # how its keys are made (KEY_VERSIONS)
        if not readonly:  # added beside version 1's table: a harness without them ignores them
            self.db.executescript(LEASES)

    def get(self, key: Key) -> Entry | None:
        """The entry stored under ``key``, if any."""
        row = self.db.execute("SELECT * FROM exchanges WHERE key = ?", (key,)).fetchone()
        return None if row is None else Entry(*row)

    def get_many(self, keys: Sequence[Key]) -> dict[Key, Entry]:
        """The entries stored under ``keys``, by key, in one ``SELECT`` per 64 keys."""
        found: dict[Key, Entry] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            # Padded to a power of two: a few statements' texts, all kept prepared.
            width = 1 << (len(chunk) - 1).bit_length()
            chunk += chunk[-1:] * (width - len(chunk))
            for row in self.db.execute(_SELECT_IN[width], chunk):
                found[row[0]] = Entry(*row)
        return found

    def put(self, entry: Entry) -> bool:
        """Store ``entry`` in one transaction unless its key is there; whether it was added."""
        return self.db.execute(_INSERT, entry.row()).rowcount == 1

    def begin_read(self) -> None:
        """Start a read transaction (the lookups until ``end_read`` take one snapshot)."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    def end_read(self) -> None:
        """End the read transaction ``begin_read`` started, if any."""
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def put_many(self, entries: Sequence[Entry]) -> int:
        """Store ``entries`` in ONE transaction (a SIGKILL loses all of them or none); how
        many were added."""
        before = self.db.total_changes
        self.write([e.row() for e in entries])
        return self.db.total_changes - before

    def write(
        self,
        rows: Sequence[tuple[object, ...]],
        releases: Sequence[Key] = (),
        claims: Sequence[Key] = (),
        flight: Flight | None = None,
        look: bool = True,
    ) -> dict[Key, Claim]:
        """In ONE transaction: store ``rows`` (``Entry.row``), and settle ``flight``'s
        leases (give back ``releases``, try each of ``claims``, and where ``look``, look for
        other processes: ``harness.cache.leases``)."""
        self.end_read()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if rows:
                self.db.executemany(_INSERT, rows)
            return {} if flight is None else flight.settle(self.db, releases, claims, look)

    def stats(self) -> Stats:
        """Counts, size on disk and what the stored answers cost when they were paid."""
        n, cost = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(cost_usd), 0) FROM exchanges"
        ).fetchone()
        models = dict(
            self.db.execute("SELECT model, COUNT(*) FROM exchanges GROUP BY model").fetchall()
        )
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()  # the WAL holds commits not yet checkpointed
        )
        return Stats(self.path, int(n), size, float(cost), models)

    def prune(self, older_than_s: float | None, model: str | None) -> int:
        """Delete entries stored more than ``older_than_s`` ago and/or of ``model``; how many."""
        where: list[str] = ["1"]
        args: list[float | str] = []
        if older_than_s is not None:
            where.append("t < ?")
            args.append(time.time() - older_than_s)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        cur = self.db.execute(f"DELETE FROM exchanges WHERE {' AND '.join(where)}", args)
        return cur.rowcount

    def export(self, target: Path) -> int:
        """Copy the whole cache to one self-contained SQLite file; how many entries."""
        if target.exists():
            raise ConfigError(f"{target} exists; export writes a new file, pick another name")
        out = sqlite3.connect(target)
        try:
            self.db.backup(out)  # a consistent snapshot, even while runs write
            out.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal beside it
        finally:
            out.close()
        return self.stats().entries

    def import_from(self, source: Path) -> int:
        """Add ``source``'s entries whose keys are not here yet; how many were added."""
        other = Store(source, readonly=True)
        other.db.close()
        if other.version != self.version:  # its entries would never be found under our keys
            raise ConfigError(
                f"{source} is a version {other.version} cache and {self.path} version "
                f"{self.version}: their keys differ, so one cannot be imported into the "
                f"other; use {source} as it is (NUMERICJEV_CACHE={source}), or import it into "
                f"another version {other.version} cache"
            )
        before = self.db.total_changes
        flags = "mode=ro&immutable=1" if other.immutable else "mode=ro"
        self.db.execute("ATTACH DATABASE ? AS other", (f"{source.resolve().as_uri()}?{flags}",))
        try:
            with self.db:
                self.db.execute("INSERT OR IGNORE INTO exchanges SELECT * FROM other.exchanges")
        finally:
            self.db.execute("DETACH DATABASE other")
        return self.db.total_changes - before

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
