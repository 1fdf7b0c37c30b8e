"""A content-addressed SQLite cache of answered exchanges, shared by runs, processes, machines.

One table, one row per key (``keys.keyer``); ``PRAGMA user_version`` says how the file's keys
were made (``keys.KEY_VERSIONS``). docs/cache.md, "Safety" and "A file that is ours", gives
what WAL mode, one transaction per write and the first answer kept (``_INSERT``) promise.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import xxhash

from harness.cache.keys import KEY_VERSIONS, SCHEMA_VERSION, Key
from harness.cache.leases import SCHEMA as LEASES
from harness.cache.leases import Claim, Flight
from harness.errors import ConfigError

# One table in every version; only the key's type and bytes differ (``keys.KEY_VERSIONS``):
# hex text up to version 2, the digest's 16 bytes in the files made now (version 3: a
# smaller index to search and insert into). The digest column was added later, beside a
# version 1, 2 or 3 table (``Store._settle``).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    key BLOB PRIMARY KEY,
    model TEXT NOT NULL,          -- the model spec's name (prune --model)
    served TEXT,                  -- the model the server said answered
    response BLOB NOT NULL,       -- the response body as received (JSON bytes)
    usage TEXT,                   -- JSON, or NULL
    cost_usd REAL,                -- what the live answer cost (NULL: unknown)
    t REAL NOT NULL,              -- epoch seconds when it was stored
    run TEXT NOT NULL,            -- the run that paid for it
    digest BLOB NOT NULL          -- answer_digest(response), checked on every read
)
"""
# "NJEV": SQLite's application_id of a NumericJev request cache (a signed 32-bit header field).
APPLICATION_ID = 0x4E4A4556
_COLUMNS = ("key", "model", "served", "response", "usage", "cost_usd", "t", "run", "digest")
_TABLES = frozenset({"exchanges", "leases", "presence"})  # leases.SCHEMA's two beside ours
NEW, OURS, EARLIER = "new", "ours", "earlier"  # ``verdict``'s answers other than a refusal
_USABLE = (NEW, OURS, EARLIER)

# The first answer stored under a key stays, unless it no longer matches its digest (an
# answer changed in the file, asked again): then the fresh answer replaces it.
_INSERT = (
    f"INSERT INTO exchanges VALUES ({', '.join('?' * len(_COLUMNS))}) ON CONFLICT(key) DO "
    f"UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[1:])} "
    "WHERE answer_digest(exchanges.response) IS NOT exchanges.digest"
)
_CHUNK = 64


def answer_digest(response: bytes | str) -> bytes:
    """The digest a row keeps of its answer: XXH3-128 of the response's bytes (it finds an
    answer changed by hand or by a fault in the file, not one changed with its digest).
    Text is its UTF-8 (a hand edit in the ``sqlite3`` shell stores the answer as text)."""
    return xxhash.xxh3_128_digest(response.encode() if isinstance(response, str) else response)


def verdict(app: int, version: int, tables: Mapping[str, Sequence[str]]) -> str:
    """Whether a SQLite file of ``application_id`` ``app``, ``user_version`` ``version``
    and ``tables`` (name -> columns) is a cache to use: ``NEW`` (empty: make it ours),
    ``OURS``, ``EARLIER`` (made before answers had digests: add them), or else why not, as
    the end of a sentence that begins with the file's name."""
    if app == 0 and version == 0 and not tables:
        return NEW
    if app not in (0, APPLICATION_ID) or not tables.keys() <= _TABLES:
        names = ", ".join(sorted(tables)) or "none"
        return (
            f"is not a NumericJev cache but another application's SQLite database "
            f"(application id {app}, schema version {version}, tables: {names}); nothing was "
            "written to it: set NUMERICJEV_CACHE to another path"
        )
    if version not in KEY_VERSIONS:
        return (
            f"has schema version {version}, this harness reads "
            f"{' and '.join(map(str, KEY_VERSIONS))}; keep it for the version that wrote it and "
            "set NUMERICJEV_CACHE to another path for this one"
        )
    columns = tuple(tables.get("exchanges", ()))
    if columns == _COLUMNS and app == APPLICATION_ID:
        return OURS
    if columns == _COLUMNS[:-1] and app == 0:
        return EARLIER
    return (
        f"is a version {version} cache whose exchanges table is missing or not as this "
        f"harness makes it (columns: {', '.join(columns) or 'none'}); delete it or set "
        "NUMERICJEV_CACHE to another path"
    )


def _inspect(db: sqlite3.Connection) -> str:
    """``verdict`` of the open file (raises ``sqlite3.DatabaseError`` if it is not SQLite)."""
    app = db.execute("PRAGMA application_id").fetchone()[0]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    names = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    tables = {name: [c[1] for c in db.execute(f"PRAGMA table_info({name!r})")] for (name,) in names}
    return verdict(app, version, tables)


def _select(digest: str) -> dict[int, str]:
    """The lookups of up to 64 keys, by width (a few statements' texts, all kept
    prepared), reading ``digest`` as the digest column (``NULL``: a file without it)."""
    columns = ", ".join((*_COLUMNS[:-1], digest))
    return {
        1 << n: f"SELECT {columns} FROM exchanges WHERE key IN ({', '.join('?' * (1 << n))})"
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
    digest: bytes | None = None  # as stored (None: read-only, a file made before digests)

    def row(self) -> tuple[object, ...]:
        """The entry as the table's columns (its digest made from its answer)."""
        return (
            self.key, self.model, self.served, self.response, self.usage,
            self.cost_usd, self.t, self.run, answer_digest(self.response),
        )  # fmt: skip

    @property
    def intact(self) -> bool:
        """Whether its answer is the one stored (its digest matches; unknown: assumed)."""
        return self.digest is None or answer_digest(self.response) == self.digest


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


# What to do about a cache that cannot be written, for a run (``Store``'s ``unwritable``).
READ_IT_AS_IT_IS = (
    "to read it as it is use --cache read-only, or set NUMERICJEV_CACHE to a writable path"
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
    """``path`` opened read-only (``mode=ro``), and whether as ``immutable=1``: in a read-only
    directory, where SQLite cannot make the ``-shm`` file (docs/cache.md, "Read-only caches")."""
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

    def __init__(
        self, path: Path, *, readonly: bool = False, unwritable: str = READ_IT_AS_IT_IS
    ) -> None:
        """Open (creating unless ``readonly``) the cache at ``path``; a file this harness cannot
        use (``verdict``) is one ``ConfigError`` before anything is read or written.
        ``unwritable``: what that line says to do when the file cannot be written."""
        self.path = path
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
            self.db.create_function("answer_digest", 1, answer_digest, deterministic=True)
            found = _inspect(self.db) if readonly else self._settle()
            if found in _USABLE and not readonly:
                _use_wal(self.db)
                # NORMAL in WAL mode: a power cut may lose the last commits, never the file.
                self.db.execute("PRAGMA synchronous = NORMAL")
        except (OSError, sqlite3.OperationalError) as exc:  # no folder; SQLite cannot open it
            raise ConfigError(
                f"request cache {path} cannot be opened ({exc}); check that it is readable"
                if readonly
                else f"request cache {path} cannot be written ({exc}); {unwritable}"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"request cache {path} is not a SQLite file ({exc}); move it away "
                "or set NUMERICJEV_CACHE to another path"
            ) from exc
        if found == NEW and readonly:
            found = "is empty; run once with --cache read-write"
        if found not in _USABLE:
            self.db.close()
            raise ConfigError(f"request cache {path} {found}")
        # Read-only, a file made before digests is read as it is, its answers unchecked.
        self.digested = found != EARLIER or not readonly
        self._select_in = _select("digest" if self.digested else "NULL")
        self.version: int = self.db.execute("PRAGMA user_version").fetchone()[0]

    def _settle(self) -> str:
        """``verdict`` of the file, under its write lock (another process may be making it
        too), and what it needs done: a new file made ours, an earlier one given digests.
        Anything else is left as it was: nothing is written to it."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")  # takes a lock; writes nothing to the file by itself
        try:
            found = _inspect(db)
            if found == NEW:
                db.execute(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif found == EARLIER:  # our table without digests: adopted as it is now
                db.execute("ALTER TABLE exchanges ADD COLUMN digest BLOB NOT NULL DEFAULT x''")
                db.execute("UPDATE exchanges SET digest = answer_digest(response)")
            if found in (NEW, EARLIER):
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        if found in _USABLE:
            db.executescript(LEASES)  # added beside version 1's table (``leases``)
        return found

    def get(self, key: Key) -> Entry | None:
        """The entry stored under ``key``, if any."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[Key]) -> dict[Key, Entry]:
        """The entries stored under ``keys``, by key, in one ``SELECT`` per 64 keys."""
        found: dict[Key, Entry] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            # Padded to a power of two: a few statements' texts, all kept prepared.
            width = 1 << (len(chunk) - 1).bit_length()
            chunk += chunk[-1:] * (width - len(chunk))
            for row in self.db.execute(self._select_in[width], chunk):
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
                # A file made before digests: its answers' digests made as they come in.
                digest = "digest" if other.digested else "answer_digest(response)"
                self.db.execute(
                    f"INSERT OR IGNORE INTO exchanges SELECT {', '.join(_COLUMNS[:-1])}, "
                    f"{digest} FROM other.exchanges"
                )
        finally:
            self.db.execute("DETACH DATABASE other")
        return self.db.total_changes - before

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
