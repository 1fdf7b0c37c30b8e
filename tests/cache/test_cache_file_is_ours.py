"""A cache file is ours before anything is read from or written to it, and each answer is
checked against the digest stored with it (issue 43 item 5)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cache import Entry, Store
from harness.cache.store import APPLICATION_ID, EARLIER, NEW, OURS, verdict
from harness.serve import ServerConfig
from tests.cache.test_cache_runs import outputs, run
from tests.counting import counting_server


def another_apps_database(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    db.executemany("INSERT INTO notes (body) VALUES (?)", [("a",), ("b",)])
    db.commit()
    db.close()


def version_3_without_its_table(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 3")
    db.close()


def ours_without_its_table(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 3")
    db.execute("CREATE TABLE leases (key TEXT PRIMARY KEY)")
    db.close()


def ours_of_a_later_version(path: Path) -> None:
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 9")
    db.close()


def not_sqlite(path: Path) -> None:
    path.write_bytes(b"not a database at all\n" * 200)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (another_apps_database, "another application's SQLite database"),
        (version_3_without_its_table, "exchanges table is missing"),
        (ours_without_its_table, "exchanges table is missing"),
        (ours_of_a_later_version, "schema version 9"),
        (not_sqlite, "not a SQLite file"),
    ],
)
def test_a_file_that_is_not_ours_is_refused_in_one_line_and_left_untouched(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None],
    says: str,
) -> None:
    path = tmp_path / "other.sqlite3"
    make(path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    monkeypatch.setenv("NUMERICJEV_CACHE", str(path))
    capsys.readouterr()
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(tmp_path / "r", url, "--cache", "read-write") == 2
        assert answered.total == 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and says in err and "NUMERICJEV_CACHE" in err
    assert not (tmp_path / "r").exists()  # no run folder, not even half of one
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite3"]  # no -wal, -shm


EARLIER_TABLE = """
CREATE TABLE exchanges (
    key BLOB PRIMARY KEY, model TEXT NOT NULL, served TEXT, response BLOB NOT NULL,
    usage TEXT, cost_usd REAL, t REAL NOT NULL, run TEXT NOT NULL
)
"""


def test_a_cache_made_before_digests_is_adopted_with_its_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)  # as the harness before this one made it: no id, no digest
    db.execute(EARLIER_TABLE)
    db.execute("PRAGMA user_version = 3")
    db.execute("INSERT INTO exchanges VALUES (x'01', 'm', 'm', '{}', NULL, 0.5, 1.0, 'paid')")
    db.commit()
    db.close()
    reader = Store(path, readonly=True)  # read as it is: nothing written, answers unchecked
    assert reader.get(b"\x01") is not None and not reader.digested
    reader.close()
    store = Store(path)
    entry = store.get(b"\x01")
    assert entry is not None and entry.intact and entry.digest and entry.run == "paid"
    assert store.db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert store.version == 3
    store.close()
    assert Store(path, readonly=True).digested


def test_a_new_file_is_marked_ours(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite3")
    assert store.db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == 3
    store.close()


tables = st.dictionaries(
    st.sampled_from(["exchanges", "leases", "presence", "notes"]),
    st.lists(st.sampled_from(["key", "response", "digest"]), max_size=3),
    max_size=3,
)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 9), tables)
def test_only_our_empty_or_marked_files_are_used(
    app: int, version: int, found: dict[str, list[str]]
) -> None:
    said = verdict(app, version, found)
    if said in (OURS, EARLIER):
        assert app in (0, APPLICATION_ID) and 1 <= version <= 3 and "exchanges" in found
        assert (said == OURS) == (app == APPLICATION_ID)
    elif said == NEW:
        assert (app, version, found) == (0, 0, {})
    else:
        assert "\n" not in said and "NUMERICJEV_CACHE" in said


def edit_answers(path: Path, every: int) -> int:
    """Change the choice of each ``every``-th stored answer to another of its options, as a
    hand edit would (the row's digest is left as stored); how many rows were edited."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT key, response FROM exchanges ORDER BY key").fetchall()
    edited = 0
    for key, response in rows[::every]:
        body = orjson.loads(response)
        for answer in body["answers"].values():
            answer["choice"] = next(o for o in answer["probabilities"] if o != answer["choice"])
        db.execute("UPDATE exchanges SET response = ? WHERE key = ?", (orjson.dumps(body), key))
        edited += 1
    db.commit()
    db.close()
    return edited


def test_an_edited_answer_is_asked_again_and_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "request-cache.sqlite3"
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(tmp_path / "clean", url, "--cache", "read-write") == 0
        first = answered.total
        edited = edit_answers(cache, every=5)
        capsys.readouterr()
        assert run(tmp_path / "again", url, "--cache", "read-write") == 0
        assert answered.total == first + edited  # each edited answer asked again, only those
        err = capsys.readouterr().err
        assert f"{first - edited} hits, {edited} misses" in err
        assert f"{edited} cached answers failed their check and were asked again" in err
        # The fresh answers replaced the edited ones: a third run sends nothing.
        assert run(tmp_path / "third", url, "--cache", "read-write") == 0
        assert answered.total == first + edited
    clean = outputs(tmp_path / "clean" / "outputs.jsonl")
    assert outputs(tmp_path / "again" / "outputs.jsonl") == clean
    assert outputs(tmp_path / "third" / "outputs.jsonl") == clean


def test_an_entry_keeps_its_answers_digest(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite3")
    store.put(Entry(b"k", "m", None, b'{"answers":{}}', None, None, time.time(), "r"))
    assert store.get(b"k").intact  # type: ignore[union-attr]
    store.db.execute("UPDATE exchanges SET response = '{\"answers\":{ }}'")
    assert not store.get(b"k").intact  # type: ignore[union-attr]
