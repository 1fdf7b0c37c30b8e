"""``numericjev probe``: one look before paying, against serve-sim's wires on loopback."""

from __future__ import annotations

from pathlib import Path

import anyio.from_thread
import orjson
import pytest

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
    assert len(hits) == 3 and all(hit["from_run"] == "probe" for hit in hits)
