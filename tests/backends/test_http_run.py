"""Whole runs over HTTP against serve-sim on loopback: faults, keys, wrong servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.serve import ServerConfig, serve_sim_in_thread
from harness.serve.faults import FaultSpec
from tests.runhelpers import answered, cli, final_outputs

MEDIUM = ["--param", "per_operator=4"]  # 256 jobs
KEY = "nj-test-key-0123456789abcdef-PLANTED"


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inproc") / "run"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress") == 0
    return folder


def http_run(folder: Path, url: str, *extra: str) -> int:
    return cli(
        "run", *MEDIUM, "--model", "jev-sim", "--base-url", url, "--run", str(folder),
        "--no-progress", "--timeout", "1", *extra,
    )  # fmt: skip


def written_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_http_run_matches_the_in_process_sim(tmp_path: Path, in_process: Path) -> None:
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        assert http_run(tmp_path / "http", url) == 0
    assert final_outputs(tmp_path / "http") == final_outputs(in_process)


def test_mixed_faults_change_no_output_and_pay_once(
    tmp_path: Path, in_process: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    config = ServerConfig(port=0, faults=FaultSpec.parse("mixed=0.10"), fault_seed=7, slow_s=2.0)
    folder = tmp_path / "faulty"
    with serve_sim_in_thread(config) as url:
        assert http_run(folder, url, "--concurrency", "32") == 0
    assert final_outputs(folder) == final_outputs(in_process)
    counts = answered(folder)
    assert max(counts.values()) == 1, "an exchange was recorded as answered twice"
    assert sum(counts.values()) == sum(answered(in_process).values())
    text = written_bytes(folder)
    assert b'"error":{"kind"' in text  # faults really happened and were logged
    assert KEY.encode() not in text and b"Bearer" not in text


def test_html_server_fails_with_one_line_and_keeps_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ServerConfig(port=0, faults=FaultSpec.parse("html=1.0"), max_faults_per_body=1000)
    folder = tmp_path / "html"
    with serve_sim_in_thread(config) as url:
        status = http_run(folder, url, "--max-attempts", "1", "--concurrency", "4")
    assert status == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "HTML" in err[0] and "--base-url" in err[0]
    assert (folder / "manifest.json").exists() and (folder / "requests.jsonl").stat().st_size > 0
    assert cli("status", str(folder)) == 0


def test_unreachable_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Port 9 (discard) on loopback: nothing listens there in a test sandbox.
    status = http_run(tmp_path / "down", "http://127.0.0.1:9", "--max-attempts", "1")
    assert status == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "connection" in err[0]


@pytest.mark.soak
def test_full_affine_suite_through_ten_percent_faults(tmp_path: Path) -> None:
    reference = tmp_path / "inproc"
    assert cli("run", "--run", str(reference), "--no-progress") == 0
    config = ServerConfig(port=0, faults=FaultSpec.parse("mixed=0.10"), fault_seed=11, slow_s=2.0)
    folder = tmp_path / "faulty"
    with serve_sim_in_thread(config) as url:
        status = cli(
            "run", "--model", "jev-sim", "--base-url", url, "--run", str(folder),
            "--no-progress", "--timeout", "1", "--concurrency", "128",
        )  # fmt: skip
    assert status == 0
    assert final_outputs(folder) == final_outputs(reference)
    counts = answered(folder)
    assert max(counts.values()) == 1
    assert sum(counts.values()) == sum(answered(reference).values())


def test_list_and_status_mark_a_run_served_by_serve_sim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The manifest of a served model cannot know serve-sim will answer; the logs do. And a
    # server with no price leaves the cost unknown: list says so, as status does.
    root = tmp_path / "runs"
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        assert cli("run", "--suite", "exploratory", "--model", "jev-sim", "--base-url", url,
                   "--run", str(root / "served"), "--no-progress") == 0  # fmt: skip
    capsys.readouterr()
    assert cli("list", str(root)) == 0
    line = capsys.readouterr().out.strip()
    assert "jev-sim (simulated)" in line and "cost USD 0.0000 + unknown" in line
    assert cli("status", str(root / "served")) == 0
    assert "model jev-sim (SIMULATED)" in capsys.readouterr().out.splitlines()[0]


def test_a_401_from_serve_sim_reads_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The client masks what follows "Bearer" in a server's message; serve-sim's own 401
    # must still read as a sentence (it said "Bearer *** --key it was given>").
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    with serve_sim_in_thread(ServerConfig(port=0, key=KEY)) as url:
        assert http_run(tmp_path / "run", url) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "(401)" in err
    assert "***" not in err and "started with (--key)" in err
