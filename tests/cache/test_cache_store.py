"""The request cache's SQLite file under kills, two writers, versions, export and import."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cache import Entry, RequestCache, Store
from harness.cache.keys import keyer
from harness.calling.attempt import Attempt
from harness.errors import ConfigError
from harness.wire.encoded import EncodedBody, encoded

# A child that stores entries as fast as it can, naming each on stdout once committed.
WRITER = """
import sys, time
from pathlib import Path
from harness.cache import Entry, Store
store = Store(Path(sys.argv[1]))
tag = sys.argv[2]
for i in range(int(sys.argv[3])):
    store.put(Entry(f"{tag}-{i}", "m", "m", b'{"answers":{}}' * 50, None, 0.01, time.time(), tag))
    print(i, flush=True)
"""


def entry(key: str, run: str = "r") -> Entry:
    return Entry(key, "m", "m-v1", b'{"answers":{}}', '{"input_tokens":3}', 0.5, time.time(), run)


def writer(path: Path, tag: str, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), tag, str(n)], stdout=subprocess.PIPE, text=True
    )


def test_sigkill_mid_writes_loses_at_most_the_entry_being_written(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    Store(path).close()
    child = writer(path, "k", 1_000_000)
    assert child.stdout is not None
    committed = -1
    while committed < 300:  # well into the writes, then killed between or inside one
        committed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    # Every line the child printed before it died is still in the pipe: the last committed.
    rest = child.stdout.read().split()
    child.stdout.close()
    committed = int(rest[-1]) if rest else committed
    store = Store(path)
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {r[0] for r in store.db.execute("SELECT key FROM exchanges")}
    # Every entry reported committed is there, and at most one more: the one committed as
    # the kill landed, before its line was printed.
    assert {f"k-{i}" for i in range(committed + 1)} <= keys
    assert len(keys) <= committed + 2
    assert store.put(entry("after-the-kill"))  # and the file still takes writes
    store.close()


def test_two_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    Store(path).close()
    children = [writer(path, tag, 400) for tag in ("a", "b")]
    for child in children:
        child.communicate(timeout=120)
        assert child.returncode == 0
    store = Store(path)
    assert store.stats().entries == 800
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_another_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(ConfigError, match="schema version 99") as err:
        Store(path)
    assert "\n" not in str(err.value)


def test_export_then_import_twice_adds_once(tmp_path: Path) -> None:
    src = Store(tmp_path / "a.sqlite3")
    for i in range(5):
        src.put(entry(f"e{i}"))
    src.export(tmp_path / "moved.sqlite3")
    dst = Store(tmp_path / "b.sqlite3")
    dst.put(entry("e0", run="other"))  # already there: the first stored stays
    assert dst.import_from(tmp_path / "moved.sqlite3") == 4
    assert dst.import_from(tmp_path / "moved.sqlite3") == 0
    assert dst.stats().entries == 5
    assert dst.get("e0") is not None and dst.get("e0").run == "other"  # type: ignore[union-attr]


def test_prune_by_model_and_age(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.sqlite3")
    store.put(Entry("old", "a", None, b"{}", None, None, time.time() - 10 * 86400, "r"))
    store.put(Entry("new", "a", None, b"{}", None, None, time.time(), "r"))
    store.put(Entry("other", "b", None, b"{}", None, None, time.time(), "r"))
    assert store.prune(86400, None) == 1
    assert store.prune(None, "b") == 1
    assert store.get("new") is not None and store.stats().entries == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5), st.text(max_size=5))
def test_key_ignores_the_price_but_not_the_model(body: dict, name: str) -> None:
    spec = {"name": "m", "backend": "systemone", "params": {"price": 1.0, "t": 0}}
    flipped = dict(reversed(list(body.items())))
    repriced = spec | {"params": {"t": 0, "price": 9.0}}
    # Version 1 keys the sorted body; versions 2 and 3 the body as built, whose order
    # reaches the model (the criteria's order is a prompt's order).
    assert keyer(spec, 1)(body, "") == keyer(repriced, 1)(flipped, "")
    for version in (2, 3):
        key = keyer(spec, version)(body, "")
        assert key == keyer(repriced, version)(body, "")
        assert (key == keyer(spec, version)(flipped, "")) == (list(body) == list(flipped))
        if name != "m":
            assert keyer(spec | {"name": name}, version)(body, "") != key
        assert keyer(spec, version)(body | {"__extra": 1}, "") != key or "__extra" in body
        assert keyer(spec, version)(body, "j#2") != key


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_a_body_serialised_once_keys_and_sends_the_same_bytes(body: dict) -> None:
    spec = {"name": "m", "backend": "systemone", "params": {}}
    once = encoded(body)
    assert isinstance(once, EncodedBody) and once == body
    assert once.json == orjson.dumps(body) == orjson.dumps(once)  # what systemone sends
    for version in (1, 2, 3):
        assert keyer(spec, version)(once, "j#1") == keyer(spec, version)(body, "j#1")
    assert encoded(once) is once
    weird = {"x": object()}
    assert encoded(weird) is weird  # not JSON: left to whoever serialises it to refuse


SPEC = {
    "name": "m", "backend": "chat", "base_url": "http://h/v1",
    "params": {"price": 1.0, "timeout_s": 30.0, "concurrency": 8, "top_logprobs": 5},
}  # fmt: skip
BODY = {"questions": {"q1": {"type": "choice", "criteria": {"b": "y", "a": "x"}}}}


def test_keys_of_older_files_are_made_as_before() -> None:
    # As the harness before version 3 keyed SPEC, BODY and "j#1" (computed by that code):
    # an old file's entries stay found.
    assert keyer(SPEC, 1)(BODY, "j#1") == (
        "9d7fc31dc14ec5287c69a105524f10bd34979faa649e822751bf72c601989328"
    )
    assert keyer(SPEC, 2)(BODY, "j#1") == (
        "49e79579c3ab0221a351631350b62e3595745f39738e19b461c7a039241897dc"
    )
    key = keyer(SPEC)(BODY, "j#1")
    assert isinstance(key, bytes) and len(key) == 16


def test_settings_that_do_not_change_the_answer_split_only_older_files() -> None:
    params = SPEC["params"]
    assert isinstance(params, dict)
    tuned = SPEC | {
        "params": params | {"timeout_s": 5.0, "connect_timeout_s": 2.0, "concurrency": 64,
                            "api_key_set": True, "key_env": "MY_KEY"}
    }  # fmt: skip
    sampled = SPEC | {"params": params | {"top_logprobs": 20}}
    assert keyer(tuned)(BODY, "j#1") == keyer(SPEC)(BODY, "j#1")
    assert keyer(sampled)(BODY, "j#1") != keyer(SPEC)(BODY, "j#1")
    for version in (1, 2):  # what an old file's keys mean never changes
        assert keyer(tuned, version)(BODY, "j#1") != keyer(SPEC, version)(BODY, "j#1")


# The table as the harness made it before answers had digests (and files an application id).
EARLIER_SCHEMA = """
CREATE TABLE exchanges (
    key {key} PRIMARY KEY, model TEXT NOT NULL, served TEXT, response BLOB NOT NULL,
    usage TEXT, cost_usd REAL, t REAL NOT NULL, run TEXT NOT NULL
)
"""


def old_cache(path: Path, version: int) -> None:
    """A cache file as the harness of key ``version`` (1 or 2) made it."""
    db = sqlite3.connect(path)
    db.execute(EARLIER_SCHEMA.format(key="TEXT"))
    db.execute(f"PRAGMA user_version = {version}")
    db.close()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_cache_is_read_and_written_under_its_own_keys(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "old.sqlite3"
    old_cache(path, version)
    spec = {"name": "m", "backend": "systemone", "params": {}}
    body = {"questions": {"q1": {"type": "choice", "criteria": {"b": "y", "a": "x"}}}}
    answered = b'{"answers":{"q1":{"choice":"a"}}}'
    old = Store(path)
    old.put(Entry(keyer(spec, version)(body, "j#1"), "m", "m", answered,
                  None, 0.5, time.time(), "paid"))  # fmt: skip
    cache = RequestCache(Store(path), True, spec, "r")
    answer = Attempt(1, 0.0, 1.0, 200, None, None, {"answers": {"q1": {"choice": "b"}}}, "m",
                     None, 0.1, None)  # fmt: skip

    async def ask() -> None:
        _, hit = await cache.find(body, "j#1")
        assert hit is not None and hit.cached is not None and hit.cached["from_run"] == "paid"
        missed, none = await cache.find(body, "j#2")
        assert none is None and missed == keyer(spec, version)(body, "j#2")
        cache.save(missed, answer)  # stored under the old key

    anyio.run(ask)
    cache.close()
    again = Store(path)
    assert again.version == version and again.stats().entries == 2
    assert again.get(keyer(spec, version)(body, "j#2")) is not None


def test_a_new_cache_is_version_3_and_keeps_its_answers(tmp_path: Path) -> None:
    spec = {"name": "m", "backend": "systemone", "params": {}}
    answer = Attempt(1, 0.0, 1.0, 200, None, None, {"answers": {"q1": {"choice": "b"}}}, "m",
                     None, 0.1, None)  # fmt: skip
    cache = RequestCache(Store(tmp_path / "c.sqlite3"), True, spec, "paid")

    async def ask() -> None:
        key, none = await cache.find(BODY, "j#1")
        assert none is None and isinstance(key, bytes)
        cache.save(key, answer)

    anyio.run(ask)
    cache.close()
    again = RequestCache(Store(tmp_path / "c.sqlite3", readonly=True), False, spec, "r")
    assert again.store.version == 3
    _, hit = anyio.run(again.find, BODY, "j#1")
    assert hit is not None and hit.answers["q1"].choice == "b" and again.hits == 1


def test_import_across_key_versions_is_refused_and_both_stay(tmp_path: Path) -> None:
    old_cache(tmp_path / "old.sqlite3", 2)
    Store(tmp_path / "old.sqlite3").put(entry("e0"))
    new = Store(tmp_path / "new.sqlite3")
    with pytest.raises(ConfigError, match=r"version 2 cache .* version 3") as err:
        new.import_from(tmp_path / "old.sqlite3")
    assert "\n" not in str(err.value) and "NUMERICJEV_CACHE=" in str(err.value)
    assert new.stats().entries == 0 and Store(tmp_path / "old.sqlite3").stats().entries == 1
    assert Store(tmp_path / "old.sqlite3").version == 2


def test_cache_command_moves_a_cache_between_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    here = Store(tmp_path / "here.sqlite3")
    for i in range(3):
        here.put(entry(f"e{i}"))
    here.close()
    monkeypatch.setenv("NUMERICJEV_CACHE", str(tmp_path / "here.sqlite3"))
    assert main(["cache", "export", str(tmp_path / "moved.sqlite3")]) == 0
    monkeypatch.setenv("NUMERICJEV_CACHE", str(tmp_path / "there.sqlite3"))
    assert main(["cache", "import", str(tmp_path / "moved.sqlite3")]) == 0
    assert main(["cache", "import", str(tmp_path / "moved.sqlite3")]) == 0
    assert main(["cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "imported 3 new" in out and "imported 0 new" in out and "3 entries" in out
    assert main(["cache", "prune"]) == 2
    assert main(["cache", "prune", "--model", "m"]) == 0
    assert "pruned 3 entries" in capsys.readouterr().out


def test_processes_opening_a_new_cache_at_once_all_open_it(tmp_path: Path) -> None:
    # Shards and workers start together on a cache that does not exist yet; switching a new
    # file to WAL made SQLite answer "database is locked" at once to some of them (about 1
    # open in 60 with three at a time), which refused their run.
    failures: list[str] = []

    def open_close(path: Path) -> None:
        try:
            Store(path).close()
        except ConfigError as exc:
            failures.append(str(exc))

    for n in range(200):
        path = tmp_path / f"c{n}.sqlite3"
        threads = [threading.Thread(target=open_close, args=(path,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
