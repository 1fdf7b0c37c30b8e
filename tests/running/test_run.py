"""End-to-end runs on the in-process sim: the run folder contract, batching, dry run."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typesafe_sdk._schemas.models import SystemOneRequest, SystemOneResponse

from tests.runhelpers import SMALL, answered, cli, final_outputs, records


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs") / "affine-sim"
    assert cli("run", "--suite", "affine", "--run", str(folder), "--no-progress") == 0
    return folder


def test_full_affine_run_writes_the_contract(full_run: Path) -> None:
    manifest = orjson.loads((full_run / "manifest.json").read_bytes())
    assert manifest["n_jobs"] == 1024
    assert manifest["model"]["simulated"] is True
    assert manifest["decoders"] == ["direct", "tree2", "tree4", "tree10", "digits", "bits"]
    assert len(manifest["case_hash"]) == 64 and len(manifest["source_hash"]) == 64
    outputs = records(full_run / "outputs.jsonl")
    assert len(outputs) == 6144
    assert {r["status"] for r in outputs} == {"ok"}
    assert all(r["simulated"] is True for r in outputs)
    keys = {"job", "suite", "case", "family", "domain", "condition", "order", "repeat", "decoder"}
    assert keys | {"target", "L", "eps", "N", "value", "cell", "rounds", "trace"} <= set(outputs[0])
    requests = records(full_run / "requests.jsonl")
    assert all(r["error"] is None and r["status"] == 200 for r in requests)
    assert max(answered(full_run).values()) == 1


def test_each_round_batches_every_ready_question(full_run: Path) -> None:
    rounds_of = {(r["job"], r["decoder"]): r["rounds"] for r in records(full_run / "outputs.jsonl")}
    per_job: dict[str, list[dict]] = {}
    for r in records(full_run / "requests.jsonl"):
        per_job.setdefault(r["job"], []).append(r)
    for job, exchanges in per_job.items():
        assert [e["round"] for e in exchanges] == list(range(1, len(exchanges) + 1))
        for exchange in exchanges:
            asked = {target.split("/")[0] for target in exchange["qmap"].values()}
            # A decoder is in round r exactly when it needed at least r rounds.
            expected = {d for (j, d), n in rounds_of.items() if j == job and n >= exchange["round"]}
            assert asked == expected
        first = exchanges[0]["qmap"].values()
        assert sum(1 for t in first if t.startswith("bits/")) == 7  # independent bits, one round


def test_bodies_and_responses_validate_against_the_official_sdk(full_run: Path) -> None:
    for r in records(full_run / "requests.jsonl")[:300]:
        SystemOneRequest.model_validate(r["request"])
        SystemOneResponse.model_validate(r["response"])
        assert list(r["request"]) == ["model", "state", "questions"]


def test_reversed_order_reverses_only_insertion_order(full_run: Path) -> None:
    by_job = {(r["job"], r["round"]): r for r in records(full_run / "requests.jsonl")}
    job = next(j for (j, n) in by_job if j.endswith("/arithmetic/ascending/r0"))
    twin = job.replace("/ascending/", "/reversed/")
    up = by_job[(job, 1)]["request"]["questions"]
    down = by_job[(twin, 1)]["request"]["questions"]
    for qid, question in up.items():
        mirrored = down[qid]["criteria"]
        assert list(mirrored.items()) == list(reversed(question["criteria"].items()))


def test_resume_of_a_finished_run_sends_nothing(full_run: Path) -> None:
    before = (full_run / "requests.jsonl").read_bytes()
    assert cli("resume", str(full_run), "--no-progress") == 0
    assert (full_run / "requests.jsonl").read_bytes() == before


def test_status_summarises(full_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("status", str(full_run)) == 0
    out = capsys.readouterr().out
    assert "1,024 done, 0 failed, 0 pending" in out
    assert "SIMULATED" in out and "sim (" in out


def test_runs_are_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli("run", *SMALL, "--run", str(a), "--no-progress", "--concurrency", "3") == 0
    assert cli("run", *SMALL, "--run", str(b), "--no-progress", "--concurrency", "50") == 0
    assert final_outputs(a) == final_outputs(b)
    assert len(final_outputs(a)) == 8 * 4 * 4 * 6


def test_dry_run_sends_nothing_and_bounds_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("run", "--suite", "affine", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "jobs: 1,024" in out
    # tree2 needs 6 or 7 rounds on 100 cells, and it is the deepest decoder of every job.
    assert "at least 6,144, at most 7,168" in out
    assert "input tokens" in out and "cost: USD 0.0000" in out
    assert not (tmp_path / "runs").exists()
