"""The exact-oracle check, the ``check`` command, response parsing, and the sim model.

Request and response bodies are validated against the official SDK's pydantic models
(``typesafe_sdk._schemas.models``), the reference docs/wire.md recommends for tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest
from typesafe_sdk._schemas.models import SystemOneRequest, SystemOneResponse

from harness.backends.oracle import Oracle
from harness.backends.sim import SimModel, SimParams
from harness.cli import main
from harness.errors import BackendError
from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite
from harness.running.check import CheckReport, run_check
from harness.running.jobs import Job
from harness.wire.answers import parse_answers


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite("affine")


@pytest.fixture(scope="module")
def report(suite: Suite) -> CheckReport:
    return run_check(suite)


@pytest.fixture(scope="module")
def first_bodies(suite: Suite) -> list[dict[str, Any]]:
    """The first request of every affine job."""
    bodies = []
    for spec in suite.jobs():
        step = Job(spec, suite.decoders).next_request("sim")
        assert step is not None
        bodies.append(step[0])
    return bodies


# ---- the oracle check ------------------------------------------------------------------------


def test_oracle_check_recovers_every_output(report: CheckReport) -> None:
    assert report.jobs == 1024
    assert report.outputs == 6144
    assert report.recovered == 6144
    assert report.failures == []
    assert report.ok
    # tree2 on 100 cells needs 6 or 7 rounds; every job asks one request per round.
    assert report.rounds <= 7
    assert 6 * 1024 <= report.requests <= 7 * 1024


def test_check_command_prints_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--suite", "affine"]) == 0
    captured = capsys.readouterr()
    assert "1,024 jobs" in captured.out
    assert "6,144 outputs" in captured.out
    assert "6,144 recovered exactly (all recovered)" in captured.out
    assert "in 7 rounds" in captured.out
    assert captured.err == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--decoders", "tree1"], "K >= 2"),
        (["--decoders", "nearest"], "unknown decoder 'nearest'"),
        (["--decoders", " , "], "at least one decoder"),
        (["--param", "colour=red"], "no parameter 'colour'"),
        (["--param", "cells=many"], "cells='many' is not valid"),
        (["--param", "cells=50"], "cells must be >= 100"),
        (["--param", "cells"], "--param takes KEY=VALUE"),
    ],
)
def test_check_command_refuses_bad_options_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("numericjev check: error: ")
    assert message in lines[0]


# ---- parsing responses ------------------------------------------------------------------------

QUESTIONS = {
    "q1": {"type": "choice", "instructions": "pick", "criteria": {"0": "zero", "1": "one"}},
    "q2": {"type": "choice", "instructions": "pick", "criteria": {"a": "A", "b": "B"}},
}


def choice(label: Any) -> dict[str, Any]:
    return {"type": "choice", "choice": label, "confidence": 0.9, "probabilities": {}}


def test_parse_answers_reads_valid_answers() -> None:
    body = {
        "model": "m",
        "answers": {
            "q2": {"type": "choice", "choice": "b", "probabilities": {"a": 0.25, "b": 0.75}},
            "q1": choice("0"),
            "extra": choice("x"),
        },
    }
    parsed = parse_answers(QUESTIONS, body)
    assert set(parsed) == {"q1", "q2"}
    assert parsed["q1"].choice == "0"
    assert parsed["q2"].choice == "b"
    assert dict(parsed["q2"].probabilities or {}) == {"a": 0.25, "b": 0.75}


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"answers": {"q1": choice("0")}}, id="missing-answer"),
        pytest.param({"answers": {"q1": choice("0"), "q2": choice("c")}}, id="unknown-label"),
        pytest.param(
            {"answers": {"q1": choice("0"), "q2": choice("0")}}, id="other-questions-label"
        ),
        pytest.param({"answers": {"q1": choice(0), "q2": choice("a")}}, id="label-not-a-string"),
        pytest.param({"answers": {"q1": choice(None), "q2": choice("a")}}, id="no-choice"),
        pytest.param({"answers": {"q1": "0", "q2": choice("a")}}, id="answer-not-an-object"),
        pytest.param({"answers": []}, id="answers-not-an-object"),
        pytest.param({"model": "m"}, id="no-answers"),
        pytest.param([], id="list-body"),
        pytest.param("ok", id="text-body"),
        pytest.param(None, id="null-body"),
    ],
)
def test_parse_answers_flags_malformed_responses(body: Any) -> None:
    with pytest.raises(BackendError) as info:
        parse_answers(QUESTIONS, body)
    assert info.value.kind == "malformed"


def test_parse_answers_flags_a_noul_answer_to_a_choice_question() -> None:
    body = {"answers": {"q1": {"type": "noul", "noul": 0.9}, "q2": choice("a")}}
    with pytest.raises(BackendError) as info:
        parse_answers(QUESTIONS, body)
    assert info.value.kind == "malformed"


# ---- the oracle backend -----------------------------------------------------------------------


def test_oracle_refuses_a_state_without_a_target(first_bodies: list[dict[str, Any]]) -> None:
    body = {**first_bodies[0], "state": {"note": "no expression here"}}
    with pytest.raises(BackendError) as info:
        Oracle().respond(body)
    assert info.value.kind == "bad_request"


def test_oracle_responses_validate(first_bodies: list[dict[str, Any]]) -> None:
    oracle = Oracle()
    for body in first_bodies[::16]:
        SystemOneResponse.model_validate(oracle.respond(body))


# ---- the sim model ----------------------------------------------------------------------------


def answered_labels(body: Mapping[str, Any], response: Mapping[str, Any]) -> None:
    """Every question answered with one of its own labels, probabilities over its labels."""
    assert set(response["answers"]) == set(body["questions"])
    for qid, question in body["questions"].items():
        answer = response["answers"][qid]
        assert answer["type"] == "choice"
        assert answer["choice"] in question["criteria"]
        assert set(answer["probabilities"]) == set(question["criteria"])
        assert 0.0 <= answer["confidence"] <= 1.0


def test_sim_is_deterministic_for_a_seed_and_body(first_bodies: list[dict[str, Any]]) -> None:
    one, other = SimModel(SimParams(seed=7)), SimModel(SimParams(seed=7))
    for body in first_bodies[::8]:
        response = one.respond(body)
        assert one.respond(body) == response
        assert other.respond(body) == response


def test_sim_seeds_differ_somewhere(first_bodies: list[dict[str, Any]]) -> None:
    zero, one = SimModel(SimParams(seed=0)), SimModel(SimParams(seed=1))
    differing = 0
    for body in first_bodies:
        a, b = zero.respond(body)["answers"], one.respond(body)["answers"]
        differing += sum(a[qid]["choice"] != b[qid]["choice"] for qid in a)
    assert differing > 0


def test_sim_run_speaks_the_official_wire_format(suite: Suite) -> None:
    """Every request a job builds and every sim reply validate against the SDK models."""
    sim = SimModel(SimParams(seed=3))
    statuses = set()
    for spec in suite.jobs()[::2]:
        job = Job(spec, suite.decoders)
        while (step := job.next_request("jev-latest")) is not None:
            body, qmap = step
            assert set(body) == {"model", "state", "questions"}
            SystemOneRequest.model_validate(body)
            response = sim.respond(body)
            SystemOneResponse.model_validate(response)
            answered_labels(body, response)
            job.apply(qmap, parse_answers(body["questions"], response))
        statuses |= {record["status"] for record in job.outputs(simulated=True)}
    assert statuses == {"ok"}


def test_sim_answers_only_offered_labels_on_any_grid() -> None:
    """Out-of-range perceptions still land on an offered label."""
    sim = SimModel(SimParams(seed=1, blunder=1.0))
    suite = load_suite("affine", params={"per_operator": "2"})
    for spec in suite.jobs():
        job = Job(spec, suite.decoders)
        while (step := job.next_request("sim")) is not None:
            body, qmap = step
            response = sim.respond(body)
            answered_labels(body, response)
            job.apply(qmap, parse_answers(body["questions"], response))
        for record in job.outputs(simulated=True):
            assert record["status"] == "ok"
            q = (Fraction(record["value"]) - Fraction(record["L"])) / Fraction(record["eps"])
            assert q.denominator == 1
            # Only independent bits can name a code past the grid (up to 127 on 100 cells).
            assert 0 <= q < (128 if record["decoder"] == "bits" else 100)
