"""The sim's mechanics, one knob at a time: each does what docs/models.md says, and nothing
leans by construction (the old sim floored interval answers and rounded value answers,
so trees landed one cell low about half the time)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.backends.sim import KNOBS, SimModel, SimParams
from harness.backends.sim.params import RATES
from harness.errors import ConfigError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from simstudy.simulate import simulate

QUIET = dict.fromkeys(RATES, 0.0)  # every mechanism off: an exact reader


def outputs(params: SimParams, decoders: tuple[str, ...], **suite: str) -> list[Any]:
    """Every output record of the small affine suite against the sim, in process."""
    built = load_suite("affine", params={"per_operator": "2", **suite}, decoders=decoders)
    return list(simulate(built, params))


def cells_off(record: Mapping[str, Any]) -> int:
    """The output's error in grid cells (signed)."""
    eps = Fraction(record["eps"])
    return int((Fraction(record["value"]) - Fraction(record["target"])) / eps)


def knobs(**set_: float) -> SimParams:
    """All mechanisms off but the ones named."""
    return SimParams(**{**QUIET, **set_})  # type: ignore[arg-type]


def test_with_every_mechanism_off_the_sim_reads_exactly() -> None:
    records = outputs(knobs(), ("direct", "tree2", "tree4", "tree10", "digits", "bits"))
    assert {cells_off(r) for r in records} == {0}


@pytest.mark.parametrize("k", [2, 4, 10])
def test_confusion_alone_errs_both_ways_alike(k: int) -> None:
    # The first question of a k-way tree, asked of every target 1..98 over many seeds: a
    # wrong answer lands above the right one about as often as below it.
    question = _first_question(f"tree{k}")
    up = down = 0
    for seed in range(20):
        sim = SimModel(knobs(seed=seed, confusion=0.3))
        for z in range(1, 99):
            body = {"state": {"expression": f"({z}) * 1 + (0)"}, "questions": {"q": question}}
            chosen = int(sim.respond(body)["answers"]["q"]["choice"])
            right = next(
                int(lab) for lab, text in question["criteria"].items()
                if int(text.split(" <= x < ")[0]) <= z < int(text.split(" <= x < ")[1])
            )  # fmt: skip
            up += chosen > right
            down += chosen < right
    assert up + down > 100, (up, down)
    assert abs(up - down) < 0.15 * (up + down), (up, down)


def _first_question(decoder: str) -> dict[str, Any]:
    """The first question ``decoder`` asks on the integer domain of the affine suite."""
    suite = load_suite("affine", params={"per_operator": "1"}, decoders=(decoder,))
    spec = next(s for s in suite.jobs() if s.case.domain == "int")
    step = Job(spec, suite.decoders).next_request("sim")
    assert step is not None
    return dict(next(iter(step[0]["questions"].values())))


def test_a_slip_of_one_unit_is_one_cell_in_every_affine_domain() -> None:
    records = outputs(knobs(slip_one=1.0), ("direct",))
    arithmetic = [r for r in records if r["condition"] == "arithmetic"]
    # One unit of the base result z is one cell in every domain (x0.01, -50, x10^4 alike);
    # its direction is drawn per state, so domains of one family may slip different ways.
    assert {abs(cells_off(r)) for r in arithmetic} == {1}
    assert {r["domain"] for r in arithmetic} == {"int", "x0.01", "minus50", "x10000"}
    assert {cells_off(r) for r in records if r["condition"] == "provided"} == {0}


def test_sign_flips_happen_only_where_negatives_are_shown() -> None:
    records = outputs(knobs(sign_flip=1.0), ("direct",))
    for r in records:
        if r["condition"] != "arithmetic":
            continue
        if r["domain"] == "minus50":
            assert Fraction(r["value"]) == -Fraction(r["target"])
        else:
            assert cells_off(r) == 0


def test_long_bounds_hurt_wide_trees_on_the_long_domain_only() -> None:
    records = outputs(knobs(long=1.0), ("direct", "tree2", "tree10"))
    wrong = Counter((r["decoder"], r["domain"]) for r in records if cells_off(r) != 0)
    assert wrong[("tree10", "x10000")] > 0
    assert wrong[("direct", "x10000")] == 0  # a list shows each value whole
    assert all(domain == "x10000" for _, domain in wrong)
    assert wrong[("tree2", "x10000")] < wrong[("tree10", "x10000")]


def test_the_position_prior_alone_makes_orders_disagree_and_nothing_else() -> None:
    plain = outputs(knobs(confusion=0.3), ("tree10",))
    tilted = outputs(knobs(confusion=0.3, position=1.0, primacy=0.5), ("tree10",))

    def gaps(records: list[dict[str, Any]]) -> int:
        value = {
            (r["family"], r["domain"], r["condition"], r["order"]): r["value"] for r in records
        }
        return sum(
            value[(f, d, c, "ascending")] != value[(f, d, c, "reversed")]
            for (f, d, c, o) in value
            if o == "ascending"
        )

    assert gaps(plain) == 0  # the answer's draw does not depend on the option order
    assert gaps(tilted) > 0


def test_with_confusion_alone_the_probabilities_are_calibrated() -> None:
    # The belief is the sim's own noise model around its reading: where that noise is the
    # only error, the probability of the chosen option is the chance it holds the target.
    question = _first_question("tree10")
    bins: dict[int, list[float]] = {}
    for seed in range(12):
        sim = SimModel(knobs(seed=seed, confusion=0.4))
        for z in range(1, 99):
            body = {"state": {"expression": f"({z}) * 1 + (0)"}, "questions": {"q": question}}
            answer = sim.respond(body)["answers"]["q"]
            lo, _, hi = question["criteria"][answer["choice"]].partition(" <= x < ")
            hit = int(lo) <= z < int(hi)
            bins.setdefault(min(int(answer["confidence"] * 5), 4), []).append(hit)
    for b, hits in bins.items():
        if len(hits) >= 50:
            accuracy = sum(hits) / len(hits)
            assert b / 5 - 0.08 <= accuracy <= (b + 1) / 5 + 0.08, (b, accuracy, len(hits))


def test_a_sharp_temperature_is_overconfident() -> None:
    body_answers = []
    for temperature in (1.0, 0.3):
        sim = SimModel(SimParams(confusion=0.4, temperature=temperature))
        body = _first_tree10_body()
        body_answers.append(sim.respond(body)["answers"])
    calibrated, sharp = body_answers
    for qid in calibrated:
        assert calibrated[qid]["choice"] == sharp[qid]["choice"]
        assert sharp[qid]["confidence"] >= calibrated[qid]["confidence"]


def _first_tree10_body() -> dict[str, Any]:
    suite = load_suite("affine", params={"per_operator": "1"}, decoders=("tree10",))
    spec = next(iter(suite.jobs()))
    step = Job(spec, suite.decoders).next_request("sim")
    assert step is not None
    return step[0]


def test_repeated_questions_get_the_same_answer_unless_asked_for_fresh_draws() -> None:
    body = _first_tree10_body()
    same = SimModel(SimParams(confusion=0.6))
    assert len({str(same.respond(body)["answers"]) for _ in range(8)}) == 1
    fresh = SimModel(SimParams(confusion=0.6, fresh_repeats=1))
    assert len({str(fresh.respond(body)["answers"]) for _ in range(8)}) > 1


def test_beam_and_median_can_differ_from_greedy() -> None:
    records = outputs(SimParams(confusion=0.4), ("tree10", "tree10_beam4", "tree10_median"))
    value = {(r["job"], r["decoder"]): r["value"] for r in records}
    jobs = {r["job"] for r in records}
    assert any(value[(j, "tree10_beam4")] != value[(j, "tree10")] for j in jobs)
    assert any(value[(j, "tree10_median")] != value[(j, "tree10")] for j in jobs)


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(KNOBS), value=st.floats(-5, 25))
def test_knobs_are_checked_in_one_line(name: str, value: float) -> None:
    allowed = {"temperature": (0.05, 20.0)}.get(name, (0.0, 1.0))
    ok = allowed[0] <= value <= allowed[1]
    if name == "fresh_repeats":
        ok = value in (0.0, 1.0)
    if ok:
        assert getattr(SimParams.parse({name: str(value)}), name) == value
    else:
        with pytest.raises(ConfigError, match=name):
            SimParams.parse({name: str(value)})


def test_unknown_knobs_name_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"knobs: .*confusion"):
        SimParams.parse({"noise_arithmetic": "0.1"})


@given(st.dictionaries(st.sampled_from(RATES), st.floats(0, 1), max_size=4), st.integers(0, 99))
def test_a_label_rebuilds_the_same_knobs(set_: dict[str, float], seed: int) -> None:
    params = SimParams(seed=seed, **set_)  # type: ignore[arg-type]
    label = params.label()
    items = dict(kv.split("=") for kv in label.removeprefix("sim").lstrip(":").split(",") if kv)
    assert SimParams.parse(items) == params


def test_the_docs_list_every_knob_with_its_default() -> None:
    import re
    from dataclasses import asdict
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    table = page[page.index("| knob (default) |") : page.index("A question's draws")]
    listed = {name: float(value) for name, value in re.findall(r"`([a-z_]+)` ([0-9.]+)", table)}
    defaults = {k: float(v) for k, v in asdict(SimParams()).items() if k != "seed"}
    assert listed == defaults
