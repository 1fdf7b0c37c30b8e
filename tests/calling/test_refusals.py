"""Refusals: a question the model declined is a failed answer of its own kind, never a
transport fault: logged as ``refusal``, not retried, final for the decoder that asked it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.backends.sim import SimModel
from harness.errors import BackendError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import FaultSpec, ServerConfig, serve_sim_in_thread
from harness.wire import refusal_answer
from harness.wire.answers import Refusal, parse_answers, read_answers
from tests.calling.test_caller import Scripted, caller, first_body
from tests.calling.test_retry import FakeTime
from tests.runhelpers import cli, records


def refuse_q1(response: dict[str, Any]) -> None:
    response["answers"]["q1"] = refusal_answer("I can't help with that.")


def test_read_answers_separates_refusals_and_parse_answers_refuses_them() -> None:
    body = first_body()
    response = SimModel().respond(body)
    refuse_q1(response)
    read = read_answers(body["questions"], response)
    assert read.refused == {"q1": Refusal("refusal", "I can't help with that.")}
    assert set(read.answers) == set(body["questions"]) - {"q1"}
    with pytest.raises(BackendError) as caught:
        parse_answers(body["questions"], response)
    assert caught.value.kind == "refusal" and "declined 1 of" in str(caught.value)
    assert type(caught.value) is BackendError  # not a TransientError: never retried


async def test_a_refusal_is_answered_logged_as_its_own_kind_and_not_retried() -> None:
    fake, heard = FakeTime(), []
    # A second step would be the sim's clean reply: a retry would take it.
    backend = Scripted(refuse_q1, "sim")
    answered = await caller(backend, fake).call(first_body(), heard.append)
    assert heard == [answered] and len(backend.steps) == 1  # one attempt, no retry
    assert answered.kind == "refusal" and "q1 (refusal: I can't help" in (answered.message or "")
    assert answered.refused == {"q1": Refusal("refusal", "I can't help with that.")}
    assert answered.answers is not None and "q1" not in answered.answers
    assert answered.cost_usd == 0.25 and not fake.sleeps


def test_a_refused_question_fails_its_decoder_for_good_and_the_others_go_on() -> None:
    suite = load_suite("affine")
    job = Job(suite.jobs()[3], ("tree10", "bits"))
    sim = SimModel()
    body, qmap = job.next_request("sim")  # type: ignore[misc]
    refused_decoder = qmap["q1"].split("/", 1)[0]
    response = sim.respond(body)
    refuse_q1(response)
    read = read_answers(body["questions"], response)
    job.apply(qmap, read.answers, read.refused)
    while (step := job.next_request("sim")) is not None:
        body, qmap = step
        assert all(not target.startswith(refused_decoder + "/") for target in qmap.values())
        job.apply(qmap, parse_answers(body["questions"], sim.respond(body)))
    assert job.done
    outputs = {r["decoder"]: r for r in job.outputs(simulated=True)}
    assert outputs[refused_decoder]["status"] == "failed"
    assert outputs[refused_decoder]["error"] == "refusal"
    assert all(r["status"] == "ok" for name, r in outputs.items() if name != refused_decoder)


def outputs_of(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(job, decoder) -> the whole last output line but its run id."""
    return {
        (r["job"], r["decoder"]): {k: v for k, v in r.items() if k not in ("run", "seq")}
        for r in records(folder / "outputs.jsonl")
    }


@pytest.mark.parametrize("wire", ["openai-decisions", "openai-chat"])
def test_a_run_with_refusals_finishes_records_them_and_resume_never_asks_again(
    tmp_path: Path, wire: str, capsys: pytest.CaptureFixture[str]
) -> None:
    small = ["--param", "per_operator=1", "--decoders", "tree10,bits", "--no-progress"]
    reference = tmp_path / "inproc"
    assert cli("run", *small, "--run", str(reference)) == 0
    folder = tmp_path / "refused"
    config = ServerConfig(port=0, wire=wire, faults=FaultSpec.parse("refusal=0.2"), fault_seed=3)
    with serve_sim_in_thread(config) as url:
        run = ("run", *small, "--model", "sim-x", "--wire", wire, "--base-url", url)
        assert cli(*run, "--run", str(folder)) == 0
        lines = records(folder / "requests.jsonl")
        refused = [r for r in lines if r["error"] and r["error"]["kind"] == "refusal"]
        assert refused and all(r["error"]["kind"] == "refusal" for r in lines if r["error"])
        # Never retried: each refused (job, round) has exactly one attempt.
        attempts = {(r["job"], r["round"]) for r in refused}
        assert all(sum(1 for r in lines if (r["job"], r["round"]) == key) == 1 for key in attempts)
        got, expected = outputs_of(folder), outputs_of(reference)
        failed = {key for key, r in got.items() if r["status"] == "failed"}
        assert failed and all(got[key]["error"] == "refusal" for key in failed)
        # Every decoder not refused gives the in-process sim's output.
        assert all(got[key] == expected[key] for key in got.keys() - failed)
        assert "refused questions" in capsys.readouterr().out
        # Resume finds nothing to send: a refusal is final.
        assert cli("resume", str(folder), "--no-progress") == 0
        assert records(folder / "requests.jsonl") == lines
    assert cli("status", str(folder)) == 0
    status = capsys.readouterr().out
    assert "0 pending" in status and f"refusal {len(refused)}" in status
    # Stopped part-way and resumed (a fresh server: the same refusals), resume replays the
    # refusals it recorded and ends with the same outputs, paying for nothing twice.
    parts = tmp_path / "parts"
    with serve_sim_in_thread(config) as url:
        run = ("run", *small, "--model", "sim-x", "--wire", wire, "--base-url", url)
        assert cli(*run, "--run", str(parts), "--max-requests", str(len(lines) // 2)) == 1
        assert cli("resume", str(parts), "--no-progress") == 0
    assert outputs_of(parts) == got
    answered = [
        (r["job"], r["round"])
        for r in records(parts / "requests.jsonl")
        if r["error"] is None or r["error"]["kind"] == "refusal"
    ]
    assert len(answered) == len(set(answered)) == len(lines)
