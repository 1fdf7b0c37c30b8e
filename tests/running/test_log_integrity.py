"""The manifest's seal, record numbers, one ok line per output, and resume refusing to mix."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis import load_run
from analysis.cli import main as analysis_main
from harness import Limits, Reply, load_suite, resume, run
from harness.backends.sim import SimModel
from harness.errors import BackendError
from harness.running.replay import read_logs
from harness.serve import ServerConfig, serve_sim_in_thread
from runfolder import load_manifest, read_sessions
from tests.runhelpers import SMALL, answered, cli, copy_run, final_outputs, records

MEDIUM = ["--param", "per_operator=4"]  # 256 jobs


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ref") / "run"
    assert cli("run", *MEDIUM, "--run", str(folder), "--no-progress") == 0
    return folder


def partial_run(folder: Path, *extra: str, requests: int = 200) -> None:
    args = [*MEDIUM, "--run", str(folder), "--no-progress", "--max-requests", str(requests)]
    assert cli("run", *args, *extra) == 1


def edit(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "manifest.json"
    manifest = orjson.loads(path.read_bytes())
    change(manifest)
    path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))


def logs(folder: Path) -> bytes:
    return b"".join((folder / n).read_bytes() for n in ("requests.jsonl", "outputs.jsonl"))


def set_in(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(manifest: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        target = manifest
        for name in parents:
            target = target[name]
        target[key] = value

    return change


# Each edit the issue made to a manifest, which resume used to accept (or crash on).
EDITS = {
    "model": ("model.name", "jev-other"),
    "price": ("model.price_usd_per_million_input", 10000.0),
    "limits": ("limits.max_cost_usd", 1000.0),
    "base URL": ("model.base_url", "http://127.0.0.1:9"),
    "job count": ("n_jobs", 99),
    "decoder list": ("decoders", ["direct", "tree2", "tree3"]),
}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run stopped by its request cap after 20 requests, made once for the module."""
    folder = tmp_path_factory.mktemp("stopped") / "run"
    partial_run(folder, "--param", "per_operator=1", requests=20)
    return folder


@pytest.mark.parametrize("case", sorted(EDITS))
def test_every_manifest_edit_is_refused_in_one_line_naming_the_field(
    case: str, tmp_path: Path, stopped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    field, value = EDITS[case]
    folder = copy_run(stopped, tmp_path / "run")
    capsys.readouterr()
    edit(folder, set_in(field, value))
    before, sessions = logs(folder), read_sessions(folder)
    assert cli("resume", str(folder), "--no-progress") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"field '{field}' was edited" in err[0], err
    assert "--allow-mismatch" in err[0]
    assert logs(folder) == before and read_sessions(folder) == sessions  # nothing touched
    # status still reads the folder and says what changed; analysis warns about it
    assert cli("status", str(folder)) == 0
    assert f"field '{field}' was edited" in capsys.readouterr().out
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0", "--strict"]) == 2
    assert f"field '{field}' was edited" in capsys.readouterr().err
    # --allow-mismatch goes on where the edit allows it; it never ends in a traceback
    status = cli("resume", str(folder), "--no-progress", "--allow-mismatch")
    out = capsys.readouterr()
    errors = [line for line in out.err.splitlines() if "warning" not in line]
    assert status in (0, 1) or (status == 2 and len(errors) == 1), out.err
    assert "Traceback" not in out.err


def test_an_allowed_edit_is_recorded_and_shown_by_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    partial_run(folder, requests=50)
    edit(folder, set_in("limits.max_cost_usd", 1000.0))
    assert cli("resume", str(folder), "--no-progress", "--allow-mismatch") == 0
    run, resume = read_sessions(folder)
    assert resume["allowed_mismatches"] and "limits.max_cost_usd" in resume["allowed_mismatches"][0]
    assert resume["manifest_sha256"] != run["manifest_sha256"]  # the edit is the new seal
    assert cli("resume", str(folder), "--no-progress") == 0  # ... so it is not refused again
    capsys.readouterr()
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "allowed mismatches" in out and "limits.max_cost_usd" in out


def test_resuming_against_another_server_is_refused_unless_allowed_and_then_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "http"
    with serve_sim_in_thread(ServerConfig(port=0)) as first:
        args = [*SMALL, "--model", "jev-sim", "--base-url", first, "--max-requests", "100"]
        assert cli("run", *args, "--run", str(folder), "--no-progress") == 1
    with serve_sim_in_thread(ServerConfig(port=0)) as second:
        before = logs(folder)
        assert cli("resume", str(folder), "--no-progress", "--base-url", second) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"the server {second} is not the run's ({first})" in err[0]
        assert logs(folder) == before
        assert cli("resume", str(folder), "--no-progress", "--base-url", second) == 2
        status = cli(
            "resume", str(folder), "--no-progress", "--base-url", second, "--allow-mismatch"
        )
        assert status == 0
    last = read_sessions(folder)[-1]
    assert last["base_url"] == second and "is not the run's" in last["allowed_mismatches"][0]
    capsys.readouterr()
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert f"base_url {first} → {second}" in out
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0", "--strict"]) == 2


def test_a_duplicated_line_is_counted_once_by_resume_status_and_analysis(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "dup"
    partial_run(folder, "--price-per-million", "10", requests=300)
    manifest = load_manifest(folder)
    honest = read_logs(folder, manifest.decoders, manifest.run_id).counters
    for name in ("requests.jsonl", "outputs.jsonl"):
        log = folder / name
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join([*lines[:8], lines[5], *lines[8:], lines[-1]]))
    state = read_logs(folder, manifest.decoders, manifest.run_id)
    assert state.counters.requests == honest.requests  # issue: 2,501 of 2,500
    assert state.counters.cost_usd == pytest.approx(honest.cost_usd)
    assert state.repeated_lines == 4
    capsys.readouterr()
    assert cli("status", str(folder)) == 0
    out = capsys.readouterr().out
    assert f"requests: {honest.requests:,} answered" in out and "4 repeated log lines" in out
    run = load_run(folder)
    assert len(run.requests) == 300 and run.requests.stats.records == 300
    assert run.requests.cost_usd == pytest.approx(honest.cost_usd)
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    # Nothing was asked twice: the distinct answered records are the reference's.
    unique = {r["seq"] for r in records(folder / "requests.jsonl") if r["error"] is None}
    assert len(unique) == sum(answered(reference).values())


def test_a_log_cut_in_the_middle_is_refused_not_taken_for_a_torn_tail(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_run(reference, tmp_path / "cut")
    log = folder / "requests.jsonl"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])  # mid-line, mid-file: ends like a torn tail
    before = log.read_bytes()
    for command in (["resume", str(folder), "--no-progress"], ["status", str(folder)]):
        assert cli(*command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cut or deleted from the middle of a log" in err[0]
        assert re.search(r"record [\d,]+ is in neither log", err[0])
    assert analysis_main(["analyze", str(folder), "--bootstrap", "0"]) == 2
    assert "cut or deleted from the middle" in capsys.readouterr().err
    assert log.read_bytes() == before  # nothing was cut or appended


class FailsSecondRounds:
    """The sim, but every job's second round fails (not retried) in its ascending order:
    the decoders that finish in one round (direct) are ok, the others fail."""

    name, simulated, price_per_million = "sim", True, 0.0

    def __init__(self) -> None:
        self.sim = SimModel()
        self.seen: Counter[str] = Counter()

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        state = orjson.dumps(body["state"]).decode()
        self.seen[state] += 1
        if self.seen[state] == 2:
            raise BackendError("http_4xx", "HTTP 400 from the test", status=400)
        return await self.sim.answer(body)

    def describe(self) -> dict[str, Any]:
        return self.sim.describe()  # resume rebuilds the plain sim from the manifest

    async def aclose(self) -> None:
        pass


def test_resuming_failed_jobs_writes_no_second_ok_line(tmp_path: Path) -> None:
    folder = tmp_path / "failed"
    suite = load_suite("affine", params={"per_operator": "1"}, decoders=("direct", "tree4"))
    first = run(suite, FailsSecondRounds(), Limits(concurrency=8), folder=folder)
    assert first.counters.jobs_failed > 0
    ok_before = Counter((r["job"], r["decoder"]) for r in records(folder / "outputs.jsonl"))
    assert resume(folder).complete
    oks = Counter(
        (r["job"], r["decoder"]) for r in records(folder / "outputs.jsonl") if r["status"] == "ok"
    )
    assert max(oks.values()) == 1, "a decoder already ok got a second ok line"
    assert len(oks) == len(ok_before) == 2 * len(suite.jobs())


def test_old_runs_without_record_numbers_still_analyse_and_resume(
    tmp_path: Path, reference: Path
) -> None:
    folder = tmp_path / "old"
    partial_run(folder, requests=200)
    seq = re.compile(rb',"seq":\d+}\n')
    for name in ("requests.jsonl", "outputs.jsonl"):
        log = folder / name
        log.write_bytes(seq.sub(b"}\n", log.read_bytes()))  # as written before record numbers
    # sessions.jsonl came before record numbers: such a run has one (and its seal).
    assert b'"seq"' not in logs(folder)
    run = load_run(folder)
    assert len(run.requests) == 200
    assert cli("resume", str(folder), "--no-progress") == 0
    assert final_outputs(folder) == final_outputs(reference)
    numbered = [r["seq"] for r in records(folder / "requests.jsonl") if "seq" in r]
    assert numbered[0] == 1  # the new session numbers its own records from 1
    assert len(load_run(folder).requests) == len(records(folder / "requests.jsonl"))
