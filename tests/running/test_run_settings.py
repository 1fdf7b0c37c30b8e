"""A run's settings (the request cache's mode, the logs' form) reach every process of the run
as an argument (``RunSettings`` inside the plan): no worker reads them from the environment,
and no command writes them into it. ``NUMERICJEV_CACHE_MODE`` is the user's input, read once
by the command line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.running.settings import RunSettings
from harness.spreading.pool import Pool
from harness.spreading.raylaunch import Ray
from runfolder import REQUESTS
from tests.runhelpers import SMALL, cached_entries, cli
from tests.spreading.test_ray_driver import FakeRay

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"per_operator": "1"}


def hits(folder: Path) -> int:
    """Request lines the request cache answered."""
    lines = (folder / REQUESTS).read_bytes().splitlines()
    return sum("cache" in orjson.loads(line) for line in lines)


@pytest.fixture
def no_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cache mode in this process's environment, so none for a forked worker to inherit."""
    monkeypatch.delenv("NUMERICJEV_CACHE_MODE", raising=False)


@pytest.mark.usefixtures("no_mode")
def test_forked_workers_take_the_cache_mode_from_their_plan(tmp_path: Path) -> None:
    suite = load_suite("affine", params=PARAMS)
    # The sim is uncached under auto (the default): read-write is what makes workers store.
    plain = run(suite, ModelSpec("sim"), placement=Pool(2), folder=tmp_path / "a")
    assert plain.complete and cached_entries() == 0
    written = RunSettings(cache="read-write")
    first = run(suite, ModelSpec("sim"), placement=Pool(2), folder=tmp_path / "b", settings=written)
    assert first.complete and cached_entries() == first.counters.requests > 0
    again = RunSettings(cache="read-only")
    second = run(suite, ModelSpec("sim"), placement=Pool(2), folder=tmp_path / "c", settings=again)
    assert second.complete and hits(tmp_path / "c") == second.counters.requests


@pytest.mark.usefixtures("no_mode")
def test_ray_shards_take_the_cache_mode_from_the_driver(tmp_path: Path) -> None:
    suite = load_suite("affine", params=PARAMS)
    result = run(
        suite,
        ModelSpec("sim"),
        Limits(concurrency=4),
        folder=tmp_path / "ray",
        placement=Ray(2, ray=FakeRay(lose={})),
        settings=RunSettings(cache="read-write"),
    )
    assert result.complete and cached_entries() == result.counters.requests > 0


@pytest.mark.usefixtures("no_mode")
def test_run_and_compare_leave_the_environment_as_they_found_it(tmp_path: Path) -> None:
    before = dict(os.environ)
    folder = tmp_path / "r"
    args = ("--run", str(folder), "--workers", "2", "--compress", "--cache", "read-write")
    assert cli("run", *SMALL, *args, "--no-progress") == 0
    assert (folder / "requests.jsonl.zst").is_file() and cached_entries() > 0
    out = tmp_path / "cmp"
    status = cli(
        "compare", "--models", "sim,sim:seed=7", "--suites", "affine", "--param",
        "per_operator=1", "--out", str(out), "--compress", "--no-progress", "--bootstrap", "0",
    )  # fmt: skip
    assert status == 0
    assert len(list(out.glob("*/requests.jsonl.zst"))) == 2
    assert dict(os.environ) == before
    # The next run in this process is plain and uncached, as its own options say.
    plain = tmp_path / "p"
    entries = cached_entries()
    assert cli("run", *SMALL, "--run", str(plain), "--workers", "2", "--no-progress") == 0
    assert (plain / "requests.jsonl").is_file() and cached_entries() == entries


def test_the_environment_s_cache_mode_is_the_command_line_s_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMERICJEV_CACHE_MODE", "read-write")
    assert cli("run", *SMALL, "--run", str(tmp_path / "a"), "--no-progress") == 0
    assert cached_entries() > 0
    entries = cached_entries()
    args = ("--run", str(tmp_path / "b"), "--cache", "off", "--model", "sim:seed=9")
    assert cli("run", *SMALL, *args, "--no-progress") == 0
    assert cached_entries() == entries  # --cache wins over the environment
    monkeypatch.setenv("NUMERICJEV_CACHE_MODE", "sometimes")
    assert cli("run", *SMALL, "--run", str(tmp_path / "c"), "--no-progress") == 2
    assert not (tmp_path / "c").exists()


def test_no_library_code_writes_the_environment() -> None:
    writes = re.compile(r"os\.environ\[[^]]+\]\s*=|os\.environ\.(update|setdefault|pop)\(|putenv")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "harness").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if writes.search(line)
    ]
    assert found == []
