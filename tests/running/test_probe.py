"""``numericjev probe``: one look before paying, against serve-sim's wires on loopback."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import anyio.from_thread
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.running.dryrun import WireCounts
from harness.running.probe import BURST, Timing, suite_seconds
from harness.serve import ServerConfig, serve_sim_in_thread
from tests.loopback import Reply, Seen, scripted_server
from tests.runhelpers import cli

KEY = "nj-probe-key-0123456789-PLANTED"


def probe(*args: str) -> int:
    return cli("probe", "--param", "per_operator=1", *args)


def test_probe_reports_a_chat_servers_coverage_and_the_suites_estimate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve_sim_in_thread(ServerConfig(port=0, wire="openai-chat", key=KEY)) as url:
        status = probe("--model", "jev-sim", "--wire", "openai-chat", "--base-url", url,
                       "--price-per-million", "0.15", "--concurrency", "8")  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0, out
    assert "reachable: yes; key accepted; served model: sim" in out
    assert "log-probabilities: yes; coverage (probability on the option tokens) mean" in out
    assert "HTTP calls" in out and "at concurrency 8" in out and "about USD" in out
    assert "the suite can run" in out
    assert list(tmp_path.iterdir()) == []  # nothing written: no run folder
    assert KEY not in out


def test_probe_through_a_profile_on_systemone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        (tmp_path / "numericjev.toml").write_text(
            f'[models.local]\nmodel = "jev-sim"\nbase_url = "{url}"\nprice_per_million = 0.5\n'
        )
        assert probe("--model", "local") == 0
    out = capsys.readouterr().out
    assert "probe: model jev-sim at " in out and "(systemone)" in out
    assert "reachable: yes; no key sent; served model: sim" in out
    assert "log-probabilities" not in out  # System One answers carry probabilities directly


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply.json(401, {"error": {"message": "bad key"}}), "the key was refused"),
        (Reply.json(404, {"detail": "Not Found"}), "the request failed (http_4xx)"),
        (
            Reply.json(200, {"choices": [{"message": {"content": "A"}}]}),
            "the request failed (malformed)",
        ),
    ],
)
def test_probe_exits_2_with_the_reason_when_the_suite_cannot_run(
    capsys: pytest.CaptureFixture[str], reply: Reply, reason: str
) -> None:
    def answer(seen: Seen) -> Reply:
        return reply

    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(scripted_server(answer)) as url,
    ):
        status = probe("--model", "m", "--wire", "openai-chat", "--base-url", url,
                       "--requests", "1")  # fmt: skip
    assert status == 2
    assert f"cannot run: {reason}" in capsys.readouterr().out


def test_an_unreachable_server_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    status = probe("--model", "m", "--base-url", "http://127.0.0.1:9", "--timeout", "2")
    assert status == 2
    assert "cannot run: the request failed (connection)" in capsys.readouterr().out


def test_the_probe_s_answers_go_into_the_request_cache_and_a_run_reuses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        args = ("--model", "jev-sim", "--base-url", url, "--concurrency", "8")
        assert probe(*args, "--requests", "3", "--cache", "read-write") == 0
        assert [p for p in tmp_path.iterdir() if p.is_dir()] == []  # no run folder
        run = ("--run", "r", "--skip-check", "--no-progress", "--cache", "read-write")
        assert cli("run", "--param", "per_operator=1", *args, *run) == 0
    lines = [orjson.loads(x) for x in (tmp_path / "r" / "requests.jsonl").read_bytes().splitlines()]
    hits = [line["cache"] for line in lines if "cache" in line]
    # Three one at a time, then two bursts (of at most the concurrency, 8 here).
    assert len(hits) == 3 + 2 * min(BURST, 8) and all(hit["from_run"] == "probe" for hit in hits)


def counts(calls: int, questions: int, rounds: int) -> WireCounts:
    return WireCounts("systemone", calls, calls, calls, calls, 0, 0, questions, rounds)


def test_the_suites_time_is_its_calls_at_the_latency_over_the_concurrency() -> None:
    """A server that answers side by side: the burst takes as long as one request alone."""
    timing = Timing((0.5, 0.4, 0.6), 36, 0.5, 96)
    assert timing.per_question_s() == 0.0
    assert suite_seconds(timing, counts(6400, 22000, 7), 64) == pytest.approx(6400 * 0.5 / 64)


def test_a_server_that_answers_in_turn_sets_the_pace_whatever_the_concurrency() -> None:
    """Measured against serve-sim: 2 ms a request alone, yet 118 ms each at concurrency 64;
    the estimate that divided the latency by the concurrency was 4-8x short."""
    timing = Timing((0.002, 0.002, 0.002), 36, 0.050, 96)  # 12 questions a request
    per_question = (0.050 - 0.002) / (96 - 12)
    assert timing.per_question_s() == pytest.approx(per_question)
    estimate = suite_seconds(timing, counts(6864, 22944, 7), 64)
    assert estimate == pytest.approx(22944 * per_question)
    assert estimate > 4 * 6864 * 0.002 / 64


def test_a_job_s_rounds_go_one_after_another() -> None:
    """Fewer jobs than the concurrency: the deepest job's rounds, each a latency."""
    timing = Timing((1.0,), 12, 1.0, 96)
    assert suite_seconds(timing, counts(14, 40, 7), 64) == pytest.approx(7 * 1.0)


@given(
    alone=st.lists(st.floats(0.001, 2.0), min_size=1, max_size=5),
    burst=st.floats(0.0, 5.0),
    calls=st.integers(1, 100_000),
    rounds=st.integers(1, 12),
    concurrency=st.integers(1, 512),
)
def test_more_concurrency_never_takes_longer_and_nothing_beats_the_rounds(
    alone: list[float], burst: float, calls: int, rounds: int, concurrency: int
) -> None:
    timing = Timing(tuple(alone), 12 * len(alone), burst, 96)
    suite = counts(calls, 3 * calls, rounds)
    here = suite_seconds(timing, suite, concurrency)
    assert suite_seconds(timing, suite, concurrency + 1) <= here
    assert here >= rounds * median(alone)
