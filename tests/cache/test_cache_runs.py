"""Whole runs through the request cache against serve-sim on loopback (counting answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.serve import ServerConfig
from tests.counting import counting_server
from tests.runhelpers import SMALL, cli, records


def run(folder: Path, url: str, *extra: str, model: str = "jev-sim") -> int:
    return cli(
        "run", *SMALL, "--model", model, "--base-url", url, "--run", str(folder),
        "--no-progress", *extra,
    )  # fmt: skip


def outputs(folder: Path) -> list[dict[str, Any]]:
    """The outputs as a set of lines: order (completion order) and the run's own id aside."""
    lines = [{k: v for k, v in r.items() if k not in ("run", "seq")} for r in records(folder)]
    return sorted(lines, key=lambda r: (r["job"], r["decoder"], r["status"]))


def test_second_run_sends_nothing_and_gives_the_same_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with counting_server(ServerConfig(port=0, latency_ms=5)) as (url, answered):
        assert run(tmp_path / "a", url, "--cache", "read-write") == 0
        first = answered.total
        assert first > 0
        assert run(tmp_path / "b", url, "--cache", "read-write") == 0
        assert answered.total == first  # the second run sent no request
    assert outputs(tmp_path / "b" / "outputs.jsonl") == outputs(tmp_path / "a" / "outputs.jsonl")
    lines = records(tmp_path / "b" / "requests.jsonl")
    first_id = orjson.loads((tmp_path / "a" / "manifest.json").read_bytes())["run_id"]
    assert first_id.startswith("a-")  # the folder's name and a suffix of this run alone
    assert lines and all(r["cache"]["from_run"] == first_id for r in lines)
    assert all(r["cost_usd"] == 0.0 and r["model"] == "sim" for r in lines)
    assert all("cache" not in r for r in records(tmp_path / "a" / "requests.jsonl"))
    capsys.readouterr()
    assert cli("status", str(tmp_path / "b")) == 0
    assert (
        f"cache: {len(lines):,} hits (answers paid by {first_id}), 0 answered live"
        in capsys.readouterr().out
    )
    # The report's facts say it too (analyze reads only the run folder).
    assert cli("analyze", str(tmp_path / "b"), "--no-probabilities") == 0
    facts = capsys.readouterr().out
    assert f"{len(lines):,} of {len(lines):,} answered exchanges from the cache" in facts
    assert "first paid by a" in facts


def test_read_only_and_off(tmp_path: Path) -> None:
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(tmp_path / "ro", url, "--cache", "read-only") == 0  # no cache file yet
        assert not (tmp_path / "request-cache.sqlite3").exists()
        assert run(tmp_path / "a", url, "--cache", "read-write") == 0
        first = answered.total // 2
        assert run(tmp_path / "off", url, "--cache", "off") == 0
        assert answered.total == 3 * first
        assert run(tmp_path / "ro2", url, "--cache", "read-only", model="jev-new") == 0
        assert run(tmp_path / "rw", url, "--cache", "read-write", model="jev-new") == 0
        assert answered.total == 5 * first  # read-only stored nothing for jev-new


def test_compare_with_a_new_model_repays_nothing_for_the_baseline(tmp_path: Path) -> None:
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(tmp_path / "base", url, "--cache", "read-write") == 0
        baseline = answered.total
        code = cli(
            "compare", "--models", "jev-sim,jev-new", "--suites", "affine",
            "--param", "per_operator=2", "--base-url", url, "--out", str(tmp_path / "cmp"),
            "--cache", "read-write", "--skip-check", "--no-progress",
        )  # fmt: skip
        assert code in (0, 1)
        assert answered.total == 2 * baseline  # only jev-new was asked


def test_sim_and_oracle_are_not_cached_by_default(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("NUMERICJEV_CACHE_MODE", "auto")
    assert (
        cli("run", *SMALL, "--model", "oracle", "--run", str(tmp_path / "o"), "--no-progress") == 0
    )
    assert not (tmp_path / "request-cache.sqlite3").exists()


@pytest.mark.parametrize("how", [["--workers", "2"], ["--shard", "1/2"]])
def test_worker_processes_and_shards_share_one_cache(tmp_path: Path, how: list[str]) -> None:
    def sim_run(name: str) -> Path:
        folder = tmp_path / name
        cli("run", *SMALL, "--model", "sim", "--run", str(folder), "--no-progress",
            "--cache", "read-write", *how)  # fmt: skip
        return folder / "shards" / "1" if how[0] == "--shard" else folder

    first, second = sim_run("a"), sim_run("b")
    assert outputs(second / "outputs.jsonl") == outputs(first / "outputs.jsonl")
    lines = records(second / "requests.jsonl")
    assert lines and all(r["cache"]["hit"] for r in lines)


@pytest.mark.parametrize("cap", [5, 12])
def test_max_requests_sends_exactly_the_cap_with_the_cache_on(
    tmp_path: Path, cap: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # The cap counts requests sent to the server: a miss still in its cache lookup when the
    # cap is reached is neither counted nor dropped once admitted.
    with counting_server(ServerConfig(port=0)) as (url, answered):
        code = run(
            tmp_path / "a", url, "--cache", "read-write", "--max-requests", str(cap),
            "--concurrency", "16",
        )  # fmt: skip
        assert code == 1  # stopped by the cap; resume continues
        assert answered.total == cap
        sent = [r for r in records(tmp_path / "a" / "requests.jsonl") if "cache" not in r]
        assert len(sent) == cap
        # Lookups the cap stopped before they were sent are not called misses.
        assert f"0 hits, {cap} misses" in capsys.readouterr().err
        # A resume answers the first exchanges from the cache (not counted) and sends
        # exactly the cap again.
        assert cli("resume", str(tmp_path / "a"), "--max-requests", str(cap), "--no-progress") == 1
        assert answered.total == 2 * cap


def test_cache_hits_do_not_count_toward_max_requests(tmp_path: Path) -> None:
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(tmp_path / "a", url, "--cache", "read-write") == 0
        first = answered.total
        # Every exchange is a hit: none is sent, so a cap of 1 stops nothing.
        assert run(tmp_path / "b", url, "--cache", "read-write", "--max-requests", "1") == 0
        assert answered.total == first


def test_resume_keeps_the_runs_cache_mode_unless_told(
    tmp_path: Path, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NUMERICJEV_CACHE_MODE", "read-write")  # the user's default: on
    cache = tmp_path / "request-cache.sqlite3"
    folder = tmp_path / "a"
    with counting_server(ServerConfig(port=0)) as (url, answered):
        assert run(folder, url, "--cache", "off", "--max-requests", "20") == 1
        assert cli("resume", str(folder), "--max-requests", "20", "--no-progress") == 1
        assert not cache.exists()  # the run's --cache off, not the user's default
        assert answered.total == 40
        capsys.readouterr()
        assert cli("status", str(folder)) == 0
        assert "request cache: off (the run's; resume keeps it" in capsys.readouterr().out
        # --cache on resume replaces the run's choice for that session.
        assert cli("resume", str(folder), "--cache", "read-write", "--no-progress") == 0
        assert cache.exists()
