"""A good cache on a read-only directory serves hits (issue 32, case 3), and no error ever
advises discarding a valid cache.

Tests run as root here, where a chmod does not stop writes: the child process then runs
without the capabilities that let root past a file's mode (``setpriv`` drops
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), so the kernel holds it to the directory's mode
as any user. Run as anyone else, the chmod alone does it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cache import Store
from harness.errors import ConfigError
from harness.serve import ServerConfig
from tests.cache.test_cache_runs import outputs, run
from tests.cache.test_cache_store import entry
from tests.counting import counting_server
from tests.runhelpers import SMALL, records

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _as_user() -> list[str]:
    """A prefix that runs a command bound by the directory's mode, even as root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a chmod cannot make a folder read-only")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def cli_as_user(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process under ``_as_user``, the cache at ``cache``."""
    env = {**os.environ, "NUMERICJEV_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("NUMERICJEV_CACHE_MODE", None)
    return subprocess.run(
        [*_as_user(), sys.executable, "-m", "harness.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _locked(directory: Path) -> None:
    """``directory`` and its files read-only (``-wal`` and ``-shm`` gone: a clean close)."""
    for path in directory.iterdir():
        path.chmod(0o444)
    directory.chmod(0o555)


def test_a_run_reads_a_cache_on_a_read_only_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    cache = cache_dir / "cache.sqlite3"
    runs = tmp_path / "runs"
    monkeypatch.setenv("NUMERICJEV_CACHE", str(cache))
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(runs / "a", url, "--cache", "read-write") == 0
        paid = answered.total
        _locked(cache_dir)
        assert sorted(p.name for p in cache_dir.iterdir()) == ["cache.sqlite3"]
        base = ["run", *SMALL, "--model", "jev-sim", "--base-url", url, "--no-progress"]
        done = cli_as_user(cache, *base, "--run", str(runs / "b"), "--cache", "read-only")
        assert done.returncode == 0, done.stderr
        assert answered.total == paid  # every exchange a hit: nothing sent
        # Writing is refused in one line that keeps the cache and names the way to read it.
        refused = cli_as_user(cache, *base, "--run", str(runs / "c"), "--cache", "read-write")
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line and "--cache read-only" in line and "move it away" not in line
    assert outputs(runs / "b" / "outputs.jsonl") == outputs(runs / "a" / "outputs.jsonl")
    assert all(r["cache"]["hit"] for r in records(runs / "b" / "requests.jsonl"))
    stats = cli_as_user(cache, "cache", "stats")
    assert stats.returncode == 0, stats.stderr
    assert f"{len(records(runs / 'a' / 'requests.jsonl')):,} entries" in stats.stdout
    # prune takes no --cache: its refusal names what works for it.
    pruned = cli_as_user(cache, "cache", "prune", "--model", "jev-sim")
    line = pruned.stderr.strip()
    assert pruned.returncode == 2 and "\n" not in line, line
    assert "--cache" not in line and "a writable copy and point NUMERICJEV_CACHE" in line
    cache_dir.chmod(0o755)  # for pytest's cleanup


def test_read_only_opens_without_writing_anything(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    store = Store(path)
    store.put(entry("e0"))
    store.close()
    before = path.read_bytes()
    reader = Store(path, readonly=True)
    assert reader.get("e0") is not None and not reader.immutable
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.db.execute("DELETE FROM exchanges")
    reader.close()
    assert path.read_bytes() == before


def test_errors_never_advise_discarding_a_valid_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(ConfigError) as err:
        Store(path)
    assert "move it away" not in str(err.value) and "NUMERICJEV_CACHE" in str(err.value)
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ConfigError, match="not a SQLite file"):
        Store(junk)  # not a cache: moving it away is the fix
