"""The probabilities the built-in models return: informative for the sim, exact for the oracle.

The sim's choices are pinned separately (``test_sim_pinned.py``); here its probabilities are
checked against their definition (confidence on the choice, the rest by a normal belief
around the perceived value) and for carrying information about the target.
"""

from __future__ import annotations

from fractions import Fraction
from statistics import NormalDist
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.oracle import Oracle
from harness.backends.reading import target_of
from harness.backends.sim import SimModel
from harness.backends.sim.belief import masses, region_bounds
from harness.protocol.meaning import exact_label, interpret
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.wire.answers import parse_answers

LABELS = [str(j) for j in range(10)]
LOWS = tuple(float(10 * j) for j in range(10))  # [0, 10), [10, 20), ... [90, 100)
BOUNDS = region_bounds("interval", LOWS, 100.0)


@given(seen=st.floats(-50, 150), sigma=st.floats(0.01, 40))
def test_belief_integrates_a_normal_over_the_offered_range(seen: float, sigma: float) -> None:
    got = masses(LABELS, BOUNDS, seen, sigma)
    belief = NormalDist(seen, sigma)
    inside = belief.cdf(100.0) - belief.cdf(0.0)
    assert sum(got.values()) == pytest.approx(1.0)
    if inside > 1e-6:  # renormalised to the range (the sim knows x is one of the options)
        for j, label in enumerate(LABELS):
            want = (belief.cdf(10.0 * (j + 1)) - belief.cdf(10.0 * j)) / inside
            assert got.get(label, 0.0) == pytest.approx(want, abs=1e-6)


def test_belief_without_noise_sits_on_the_reading_or_the_nearest_option() -> None:
    assert masses(LABELS, BOUNDS, 40.0, 0.0) == {"4": 1.0}
    assert masses(LABELS, BOUNDS, 39.999, 0.0) == {"3": 1.0}
    assert masses(LABELS, BOUNDS, -3.0, 0.0) == {"0": 1.0}
    assert masses(LABELS, BOUNDS, 1e6, 1.0) == {"9": 1.0}  # far outside: the nearest end
    # Values: the nearest one (regions end halfway to the next value).
    values = region_bounds("value", LOWS, 90.0)
    assert masses(LABELS, values, 44.0, 0.0) == {"4": 1.0}
    assert masses(LABELS, values, 46.0, 0.0) == {"5": 1.0}


def sim_answers(condition: str) -> list[tuple[Any, dict[str, Any], dict[str, Any]]]:
    """(meaning, question, answer) of every interval question of a small sim run."""
    suite = load_suite("affine", params={"per_operator": "2"}, decoders=("tree10", "tree4"))
    sim, out = SimModel(), []
    for spec in suite.jobs():
        if spec.condition != condition:
            continue
        job = Job(spec, suite.decoders)
        while (step := job.next_request("sim")) is not None:
            body, qmap = step
            response = sim.respond(body)
            for qid, question in body["questions"].items():
                meaning = interpret(question["instructions"], question["criteria"])
                out.append((meaning, body, response["answers"][qid]))
            job.apply(qmap, parse_answers(body["questions"], response))
    return out


@pytest.mark.parametrize("condition", ["arithmetic", "provided"])
def test_sim_probabilities_are_rounded_and_hold_the_choice(condition: str) -> None:
    # The choice is drawn from the distribution sent (test_sim_mechanics checks the
    # frequencies), so it is not always the most probable option; it is never impossible.
    for _, _, answer in sim_answers(condition):
        p = answer["probabilities"]
        assert all(round(v, 2) == v and 0.0 <= v <= 1.0 for v in p.values())
        assert abs(sum(p.values()) - 1.0) <= 0.005 * len(p) + 1e-9
        assert p[answer["choice"]] == answer["confidence"]
        assert p[answer["choice"]] > 0 or max(p.values()) < 0.01 * len(p)


def test_sim_probabilities_carry_information_about_the_target() -> None:
    """Not flat: beyond the choice, the returned mass leans toward the true interval."""
    true_mass, other_mass, wrong = 0.0, 0.0, 0
    flat = 0
    # Three options or more, so that a label is left that is neither chosen nor true.
    answers = [a for a in sim_answers("arithmetic") if len(a[2]["probabilities"]) >= 3]
    for meaning, body, answer in answers:
        p = answer["probabilities"]
        rest = [v for label, v in p.items() if label != answer["choice"]]
        # The old sim's flat pattern was the rest spread evenly: equal and positive.
        flat += len(set(rest)) == 1 and rest[0] > 0
        truth = exact_label(meaning, target_of(body["state"]))  # type: ignore[arg-type]
        if truth == answer["choice"]:
            continue
        wrong += 1
        true_mass += p[truth]
        others = [v for label, v in p.items() if label not in (truth, answer["choice"])]
        other_mass += sum(others) / len(others)
    assert flat < 0.05 * len(answers)
    assert wrong > 20
    # When the choice is wrong the true interval gets more than an average other label
    # (most wrong choices are near misses, drawn from a spread the truth sits in).
    assert true_mass > 2 * other_mass


def test_sim_provided_answers_are_surer_and_righter_than_arithmetic_ones() -> None:
    def rates(condition: str) -> tuple[float, float]:
        right = sure = 0.0
        answers = sim_answers(condition)
        for meaning, body, answer in answers:
            target = target_of(body["state"])
            assert target is not None
            right += exact_label(meaning, target) == answer["choice"]
            sure += answer["confidence"]
        return right / len(answers), sure / len(answers)

    (right_a, sure_a), (right_p, sure_p) = rates("arithmetic"), rates("provided")
    assert right_p > right_a and sure_p > sure_a
    assert right_p > 0.9


def test_oracle_returns_a_full_distribution_with_one_on_the_true_label() -> None:
    suite = load_suite("affine", params={"per_operator": "2"}, decoders=("tree10", "direct"))
    oracle = Oracle()
    for spec in suite.jobs()[:8]:
        body, _ = Job(spec, suite.decoders).next_request("oracle")  # type: ignore[misc]
        target = target_of(body["state"])
        assert isinstance(target, Fraction)
        for qid, answer in oracle.respond(body)["answers"].items():
            question = body["questions"][qid]
            assert set(answer["probabilities"]) == set(question["criteria"])
            meaning = interpret(question["instructions"], question["criteria"])
            assert meaning is not None
            truth = exact_label(meaning, target)
            assert answer["choice"] == truth
            assert answer["probabilities"] == {
                label: 1.0 if label == truth else 0.0 for label in question["criteria"]
            }
