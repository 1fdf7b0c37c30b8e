"""The historical recall suites (paper, Section 5.6 and its changed-prompt binary follow-up).

The oracle recovers the closes from its table of known targets; the sim knows no history,
so its recall answers are guesses, but valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import orjson
import pytest
from typesafe_sdk._schemas.models import SystemOneRequest, SystemOneResponse

from harness.backends.oracle import Oracle
from harness.backends.reading import state_key
from harness.backends.sim import SimModel
from harness.cli import main
from harness.errors import BackendError, ConfigError
from harness.protocol.cases import Suite
from harness.protocol.grid import Grid
from harness.protocol.registry import load_suite
from harness.running.check import oracle_for, run_check
from harness.running.jobs import Job
from harness.wire.answers import parse_answers
from suites.historical import SUBJECT, SUBJECT_BINARY

CLOSES = {"2019-12-31": "3230.78", "2020-12-31": "3756.07", "2023-12-29": "4769.83"}


@pytest.fixture(scope="module", params=["historical", "historical_binary"])
def suite(request: pytest.FixtureRequest) -> Suite:
    # Both with the ten-way protocol's two repeats, so that they can be compared job for job.
    return load_suite(request.param, params={"repeats": "2"} if "binary" in request.param else {})


def test_cases_are_the_three_closes() -> None:
    s = load_suite("historical")
    assert [c.domain for c in s.cases] == list(CLOSES)
    assert [c.family for c in s.cases] == [0, 1, 2]
    assert [c.target for c in s.cases] == [Fraction(v) for v in CLOSES.values()]
    assert all(c.grid == Grid(Decimal(0), Decimal("0.01"), 1_000_000) for c in s.cases)
    assert s.cases[0].state == {
        "question": (
            "the S&P 500 price index official closing level on the last trading day of 2019 "
            "(2019-12-31)"
        )
    }
    assert s.conditions == ("recall", "provided")
    assert s.repeats == 2 and s.decoders == ("tree10",)
    assert len(s.jobs()) == 3 * 2 * 2 * 2


def test_the_follow_up_is_its_own_suite() -> None:
    ten, two = load_suite("historical"), load_suite("historical_binary")
    assert (ten.name, two.name) == ("historical", "historical_binary")
    assert two.decoders == ("tree2",)
    assert {c.subject for c in ten.cases} == {SUBJECT}
    assert {c.subject for c in two.cases} == {SUBJECT_BINARY}
    assert SUBJECT != SUBJECT_BINARY
    assert ten.case_hash() != two.case_hash()
    assert {j.id.split("/")[0] for j in two.jobs()} == {"historical_binary"}


def test_the_follow_up_has_the_papers_six_recall_outputs() -> None:
    # Paper §5.5: "Recall MAPE rises to 31.17% over six outputs".
    two = load_suite("historical_binary")
    assert two.repeats == 1 and dict(two.params) == {"repeats": 1}
    recall = [j for j in two.jobs() if j.condition == "recall"]
    assert len(recall) * len(two.decoders) == 6
    assert {j.order for j in recall} == {"ascending", "reversed"}
    twelve = load_suite("historical_binary", params={"repeats": "2"})
    assert len(twelve.jobs()) == 24 and twelve.case_hash() != two.case_hash()
    with pytest.raises(ConfigError, match="repeats must be >= 1"):
        load_suite("historical_binary", params={"repeats": "0"})
    with pytest.raises(ConfigError, match="has no parameter"):
        load_suite("historical", params={"repeats": "1"})


@pytest.mark.parametrize(
    ("name", "jobs", "rounds"), [("historical", 24, 6), ("historical_binary", 12, 20)]
)
def test_check_command_recovers_every_close(
    name: str, jobs: int, rounds: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--suite", name]) == 0
    out = capsys.readouterr()
    assert f"{jobs} jobs, {jobs} outputs, {jobs} recovered exactly (all recovered)" in out.out
    assert f"in {rounds} rounds" in out.out
    assert out.err == ""


def test_the_oracle_needs_its_table_in_the_recall_condition(suite: Suite) -> None:
    table = oracle_for(suite).known
    assert table == {state_key(dict(c.state)): c.target for c in suite.cases}
    recall = next(spec for spec in suite.jobs() if spec.condition == "recall")
    body, _ = Job(recall, suite.decoders).next_request("oracle") or ({}, {})
    with pytest.raises(BackendError, match="cannot find the target"):
        Oracle().respond(body)
    assert run_check(suite).ok


def test_recall_requests_do_not_leak_the_answer(suite: Suite) -> None:
    for spec in suite.jobs():
        body, _ = Job(spec, suite.decoders).next_request("jev-latest") or ({}, {})
        SystemOneRequest.model_validate(body)
        text = orjson.dumps(body).decode()
        reference = CLOSES[spec.case.domain]
        if spec.condition == "recall":
            assert "result" not in body["state"]
            assert reference not in text and reference.split(".")[0] not in text
        else:
            assert body["state"]["result"] == reference


def test_repeats_send_identical_requests(suite: Suite) -> None:
    jobs = suite.jobs()
    pairs = [(a, b) for a in jobs for b in jobs if a.repeat == 0 and b.repeat == 1]
    same = [
        (a, b) for a, b in pairs if (a.case, a.condition, a.order) == (b.case, b.condition, b.order)
    ]
    assert len(same) == 12
    for a, b in same:
        assert a.id != b.id
        assert Job(a, suite.decoders).next_request("m") == Job(b, suite.decoders).next_request("m")


def run_sim(suite: Suite) -> list[dict[str, Any]]:
    sim = SimModel()
    outputs = []
    for spec in suite.jobs():
        job = Job(spec, suite.decoders)
        while (step := job.next_request("sim")) is not None:
            body, qmap = step
            SystemOneRequest.model_validate(body)
            response: Mapping[str, Any] = sim.respond(body)
            SystemOneResponse.model_validate(response)
            job.apply(qmap, parse_answers(body["questions"], response))
        outputs.extend(job.outputs(simulated=True))
    return outputs


def test_sim_guesses_in_recall_and_reads_the_provided_close(suite: Suite) -> None:
    outputs = run_sim(suite)
    assert outputs == run_sim(suite)  # deterministic
    assert len(outputs) == 24
    for record in outputs:
        assert record["status"] == "ok"
        value = Fraction(record["value"])
        assert 0 <= value < 10000 and value * 100 == int(value * 100)
    provided = [r for r in outputs if r["condition"] == "provided"]
    # The provided close is read off the state; the sim slips rarely, so most are exact.
    exact = sum(r["value"] == r["target"] for r in provided)
    assert exact >= len(provided) // 2
