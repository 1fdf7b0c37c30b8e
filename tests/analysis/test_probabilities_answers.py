"""Reading the returned probabilities: the join through qmap, renormalisation, missing labels,
answers without probabilities, calibration, entropy and order averaging (hand-made logs)."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from probability_logs import LogWriter, tree_path, true_child

from analysis.loading.probabilities.answers import load_answers
from analysis.statistics.calibration import auroc, reliability
from analysis.statistics.probabilities import probability_stats


def one_question_run(tmp_path: Path, probabilities: dict | None, choice: str = "4") -> Path:
    """One tree10 output on [0, 100) with target 42; only its first question is answered."""
    log = LogWriter(n_cells=100)
    path = tree_path(100, 10, lambda depth, a, b, cuts: int(choice) if depth == 1 else 0)
    log.tree_output("j", "tree10", Decimal(42), path)
    labels = [str(i) for i in range(10)][::-1]  # reversed listing: labels still mean children
    log.answers("j", 1, {"q7": ("tree10/1", labels, choice, probabilities)})
    return log.write(tmp_path / "run")


def test_probabilities_are_renormalised_and_missing_labels_get_zero(tmp_path: Path) -> None:
    # Rounded to 2 decimals, summing 0.8; labels 5..9 missing; "x" is not an option.
    raw = {"4": 0.5, "3": 0.2, "0": 0.1, "x": 0.9}
    log = load_answers(one_question_run(tmp_path, raw))
    assert log.counts.with_probabilities == 1 and log.counts.off_by_more_than_001 == 1
    assert log.counts.raw_sum_min == pytest.approx(0.8)
    assert log.q_selected[0] == pytest.approx(0.5 / 0.8)
    assert log.q_true[0] == pytest.approx(0.5 / 0.8)  # 42 is in [40, 50): label 4
    assert log.q_holds[0] == 1
    expected = -sum(p / 0.8 * math.log2(p / 0.8) for p in (0.5, 0.2, 0.1))
    assert log.q_entropy[0] == pytest.approx(expected)


def test_a_wrong_selection_reads_the_true_options_probability(tmp_path: Path) -> None:
    log = load_answers(one_question_run(tmp_path, {"7": 0.6, "4": 0.3, "5": 0.1}, choice="7"))
    assert log.q_holds[0] == 0
    assert log.q_selected[0] == pytest.approx(0.6) and log.q_true[0] == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("probabilities", "counter"),
    [(None, "without_probabilities"), ({"4": 0.0}, "unusable"), ({"4": "high"}, "unusable")],
)
def test_answers_without_usable_probabilities_are_counted_not_zeroed(
    tmp_path: Path, probabilities: dict | None, counter: str
) -> None:
    log = load_answers(one_question_run(tmp_path, probabilities))
    assert not log.has_probabilities and len(log.q_unit) == 0
    assert getattr(log.counts, counter) == 1 and log.counts.answered == 1


def test_non_numbers_count_as_zero_and_the_rest_is_used(tmp_path: Path) -> None:
    log = load_answers(one_question_run(tmp_path, {"4": 0.5, "3": None, "2": -1, "1": 0.5}))
    assert log.q_selected[0] == pytest.approx(0.5)


def test_failed_attempts_mismatches_and_duplicates_are_not_used(tmp_path: Path) -> None:
    log = LogWriter(n_cells=100)
    path = tree_path(100, 10, true_child(42))
    log.tree_output("j", "tree10", Decimal(42), path)
    labels = [str(i) for i in range(10)]
    log.answers("j", 1, {"q1": ("tree10/1", labels, "9", {"9": 1.0})}, error={"kind": "timeout"})
    log.answers("j", 1, {"q1": ("tree10/1", labels, "9", {"9": 1.0})})  # not the trace's choice
    log.answers("j", 1, {"q1": ("tree10/1", labels, "4", {"4": 0.9, "5": 0.1})})
    log.answers("j", 1, {"q1": ("tree10/1", labels, "4", {"4": 0.1, "5": 0.9})})  # a repeat
    log.answers(
        "j", 2, {"q1": ("tree10/2", labels, "2", {"2": 1.0}), "q2": ("digits/d1", [], "", {})}
    )
    log.answers("other", 1, {"q1": ("tree10/1", labels, "4", {"4": 1.0})})  # no such output
    answers = load_answers(log.write(tmp_path / "run"))
    c = answers.counts
    assert (c.answered, c.choice_mismatch, c.duplicates) == (2, 1, 1)
    assert answers.q_selected.tolist() == [pytest.approx(0.9), 1.0]


def test_no_requests_log_reads_as_no_answers(tmp_path: Path) -> None:
    folder = one_question_run(tmp_path, {"4": 1.0})
    (folder / "requests.jsonl").unlink()
    log = load_answers(folder)
    assert not log.counts.requests_present and not log.has_probabilities and len(log) == 1


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    folder = one_question_run(tmp_path, {"4": 1.0})
    with (folder / "requests.jsonl").open("ab") as handle:
        handle.write(b'{"job": "j", "round": 2, "resp')
    assert load_answers(folder).counts.with_probabilities == 1


def test_reliability_bins_and_ece() -> None:
    p = np.array([0.1, 0.19, 0.5, 0.55, 1.0, 0.3 / 1.0000000000000002])
    right = np.array([0, 1, 1, 0, 1, 1])
    rel = reliability(p, right)
    # 0.1 opens bin 1; a renormalised 0.3 one ulp low still opens bin 3; 1.0 closes the last.
    assert rel.count == (0, 2, 0, 1, 0, 2, 0, 0, 0, 1)
    assert rel.confidence[1] == pytest.approx(0.145) and rel.accuracy[1] == 0.5
    gaps = [2 * abs(0.5 - 0.145), abs(1 - 0.3), 2 * abs(0.5 - 0.525), abs(1 - 1.0)]
    assert rel.ece == pytest.approx(sum(gaps) / 6)


@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=15),
    st.lists(st.integers(0, 5), min_size=1, max_size=15),
)
def test_auroc_matches_counting_every_pair(pos: list[int], neg: list[int]) -> None:
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg))
    assert auroc(np.array(pos, float), np.array(neg, float)) == pytest.approx(
        wins / (len(pos) * len(neg))
    )


def order_run(tmp_path: Path, first: dict, second: dict, choices: tuple[str, str]) -> Path:
    """Ascending and reversed tree4 outputs of one case, target 60 on [0, 100)."""
    log = LogWriter(n_cells=100)
    for order, choice, probabilities in zip(
        ("ascending", "reversed"), choices, (first, second), strict=True
    ):
        path = tree_path(100, 4, lambda d, a, b, cuts, c=choice: int(c) if d == 1 else 0)
        log.tree_output(order, "tree4", Decimal(60), path, order=order)
        labels = ["0", "1", "2", "3"]
        if order == "reversed":
            labels.reverse()
        log.answers(order, 1, {"q1": ("tree4/1", labels, choice, probabilities)})
    return log.write(tmp_path / "run")


@pytest.mark.parametrize(
    ("first", "second", "choices", "expected"),
    [
        # Each order alone wrong, together right: 2 (the truth, [50, 75)) wins on average.
        ({"1": 0.5, "2": 0.4, "3": 0.1}, {"3": 0.5, "2": 0.4, "1": 0.1}, ("1", "3"), 1.0),
        # A tie between the truth and a wrong option counts half.
        ({"2": 0.6, "1": 0.4}, {"1": 0.6, "2": 0.4}, ("2", "1"), 0.5),
        # Both right, averaging keeps it.
        ({"2": 0.9, "1": 0.1}, {"2": 0.7, "3": 0.3}, ("2", "2"), 1.0),
    ],
)
def test_order_averaging(
    tmp_path: Path, first: dict, second: dict, choices: tuple[str, str], expected: float
) -> None:
    log = load_answers(order_run(tmp_path, first, second, choices))
    stats = probability_stats(log, ("tree4",), ("arithmetic",))
    (row,) = stats.orders
    assert (row.n, row.n_cases) == (1, 1)
    assert row.first == float(choices[0] == "2") and row.second == float(choices[1] == "2")
    assert row.averaged == expected


def test_questions_the_orders_did_not_share_are_not_paired(tmp_path: Path) -> None:
    # Different first choices: the second questions partition different parents.
    folder = order_run(tmp_path, {"2": 1.0}, {"1": 1.0}, ("2", "1"))
    log = load_answers(folder)
    assert log.pair_depth.tolist() == [1]


def test_bisection_cuts_are_read_for_calibration_not_for_the_bound(tmp_path: Path) -> None:
    log = LogWriter(n_cells=100)
    trace = [
        {"round": 1, "choice": "1", "cuts": ["0", "25", "50", "75", "100"]},
        {"round": 2, "choice": "0", "cuts": ["0", "30", "40", "45", "100"]},  # re-cut, not nested
    ]
    log.raw_output(log._output("j", "bisect4", Decimal(42), Decimal(41), trace, "a", "x", "c", 0))
    labels = ["0", "1", "2", "3"]
    log.answers("j", 1, {"q1": ("bisect4/1", labels, "1", {"1": 0.7, "0": 0.3})})
    log.answers("j", 2, {"q1": ("bisect4/2", labels, "0", {"0": 0.6, "1": 0.4})})
    answers = load_answers(log.write(tmp_path / "run"))
    assert answers.q_holds.tolist() == [1, 0]  # 42: in [25, 50) at round 1, [40, 45) at round 2
    assert answers.q_true.tolist() == [pytest.approx(0.7), 0.0]  # label 2 got nothing
    stats = probability_stats(answers, (), ())
    assert stats.divergence == () and stats.left_out == (("bisect4", "path not nested", 1),)
    assert stats.calibration[0].n == 2
