"""The probability-aware decoders: tree mean/median read-outs, the beam, probabilistic bisection.

Each is checked against a brute-force model of what it claims: the read-outs against the
distribution written out cell by cell, the beam against every path of the full tree, the
bisection posterior against Bayes' rule applied to each cell separately. A perfect
answerer must recover every target on any grid, with the rounds inside ``depths()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from itertools import accumulate
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.protocol.cases import SUBJECT
from harness.protocol.decoders import (
    Answer,
    BeamTreeDecoder,
    BisectionDecoder,
    Decoder,
    TreeReadoutDecoder,
    make_decoder,
)
from harness.protocol.decoders.bisect import FLOOR, STOP_MASS, Run, quantile_cuts, update
from harness.protocol.decoders.probabilities import (
    exact_probability,
    option_distribution,
    round_to_places,
)
from harness.protocol.decoders.tree import tree_depth
from harness.protocol.grid import Grid, partition
from harness.protocol.meaning import interpret
from harness.protocol.registry import load_suite
from harness.running.check import run_check
from tests.protocol.test_decoders import grids
from tests.runhelpers import cli, final_outputs

NEW = ("tree10_mean", "tree4_median", "tree3_beam2", "tree2_beam1", "bisect2", "bisect4")

# A scripted answerer: (question's ascending (lo, hi) index bounds) -> (choice, probabilities).
Script = Callable[[list[tuple[int, int]]], tuple[str, dict[str, float]]]


def bounds_of(grid: Grid, question_wire: Mapping[str, object]) -> list[tuple[int, int]]:
    """A tree question's options as grid index intervals, label order ``0 .. k-1``."""
    meaning = interpret(str(question_wire["instructions"]), question_wire["criteria"])  # type: ignore[arg-type]
    assert meaning is not None and meaning.kind == "interval"
    lo, eps = Fraction(grid.lo), Fraction(grid.eps)
    out = []
    for j in range(len(meaning.options)):
        a, b = meaning.options[str(j)]
        out.append((int((a - lo) / eps), int((b - lo) / eps)))
    return out


def drive(decoder: Decoder, answer: Callable[[list[tuple[int, int]]], Answer]) -> int:
    """Answer every question from its index bounds; returns the number of rounds."""
    rounds = 0
    while not decoder.done:
        ready = decoder.ready()
        assert ready, "an unfinished decoder must have a question"
        rounds += 1
        for question in ready:
            decoder.give(question.key, answer(bounds_of(decoder.grid, question.wire(False))))
    return rounds


def perfect(y: int, with_probabilities: bool = True) -> Callable[[list[tuple[int, int]]], Answer]:
    """The exact answerer: the interval holding cell ``y``, probability one on it."""

    def answer(options: list[tuple[int, int]]) -> Answer:
        j = next(j for j, (a, b) in enumerate(options) if a <= y < b)
        if not with_probabilities:
            return Answer(str(j))
        return Answer(str(j), {str(i): 1.0 if i == j else 0.0 for i in range(len(options))})

    return answer


# ---- names -------------------------------------------------------------------------------------


def test_make_decoder_builds_the_new_names() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    assert isinstance(make_decoder("tree10_mean", grid, SUBJECT), TreeReadoutDecoder)
    median = make_decoder("tree7_median", grid, SUBJECT)
    assert isinstance(median, TreeReadoutDecoder) and median.readout == "median"
    beam = make_decoder("tree4_beam2", grid, SUBJECT)
    assert isinstance(beam, BeamTreeDecoder) and (beam.k, beam.beam) == (4, 2)
    bisect = make_decoder("bisect4", grid, SUBJECT)
    assert isinstance(bisect, BisectionDecoder) and bisect.k == 4
    for name in ("tree10_mean", "tree7_median", "tree4_beam2", "bisect4"):
        assert make_decoder(name, grid, SUBJECT).name == name


@pytest.mark.parametrize(
    "name",
    ["tree1_mean", "tree4_beam0", "tree4_beam02", "tree4_beam", "tree4_mode", "bisect1",
     "bisect02", "bisect", "tree04_mean", "bisect4_beam2"],
)  # fmt: skip
def test_make_decoder_refuses_malformed_new_names(name: str) -> None:
    with pytest.raises(ConfigError):
        make_decoder(name, Grid(Decimal(0), Decimal(1), 100), SUBJECT)


# ---- a perfect answerer recovers every target ---------------------------------------------------


@given(
    data=st.data(),
    grid=grids(max_n=10**6),
    k=st.integers(2, 12),
    name=st.sampled_from(["mean", "median", "beam1", "beam2", "beam3", "bisect"]),
    with_probabilities=st.booleans(),
)
def test_a_perfect_answerer_recovers_any_target(
    data: st.DataObject, grid: Grid, k: int, name: str, with_probabilities: bool
) -> None:
    y = data.draw(st.integers(0, grid.n - 1))
    decoder = make_decoder(f"bisect{k}" if name == "bisect" else f"tree{k}_{name}", grid, SUBJECT)
    rounds = drive(decoder, perfect(y, with_probabilities))
    result = decoder.result()
    assert result.value == grid.bound(y)
    assert result.cell == (grid.bound(y), grid.bound(y + 1))
    assert result.rounds == rounds
    shallow, deep = decoder.depths()
    assert shallow <= rounds <= deep
    if name == "bisect":
        assert result.extra["stop"] == "threshold"
        # Measured on the grids tested: never more than two rounds past the tree's depth.
        assert rounds <= tree_depth(grid.n, k)[1] + 2
    elif name.startswith("beam"):
        assert decoder.depths() == tree_depth(grid.n, k)


def test_every_suite_recovers_every_target_with_the_new_decoders() -> None:
    decoders = ("tree10_mean", "tree10_median", "tree4_beam2", "bisect4")
    for name in ("affine", "exploratory", "historical", "historical_binary"):
        report = run_check(load_suite(name, decoders=decoders))
        assert report.failures == [] and report.ok, name
        assert report.recovered == report.outputs == report.jobs * len(decoders)


# ---- the mean and median read-outs -------------------------------------------------------------


def final_question_answer(grid: Grid, k: int, y: int, p: list[float]) -> TreeReadoutDecoder:
    """A tree mean decoder driven exactly to cell ``y``, the last answer carrying ``p``."""
    decoder = TreeReadoutDecoder(grid, SUBJECT, k)
    while not decoder.done:
        (question,) = decoder.ready()
        options = bounds_of(grid, question.wire(False))
        j = next(j for j, (a, b) in enumerate(options) if a <= y < b)
        last = options[j][1] - options[j][0] == 1
        probabilities = {str(i): p[i] for i in range(len(options))} if last else None
        decoder.give(question.key, Answer(str(j), probabilities))
    return decoder


@given(
    data=st.data(),
    n=st.integers(2, 400),
    k=st.integers(2, 12),
    eps=st.sampled_from(["1", "0.01", "0.0625", "10000", "0.2"]),
    lo=st.sampled_from(["0", "-50", "0.5", "3"]),
)
def test_mean_and_median_are_those_of_the_final_question(
    data: st.DataObject, n: int, k: int, eps: str, lo: str
) -> None:
    grid = Grid(Decimal(lo), Decimal(eps), n)
    y = data.draw(st.integers(0, n - 1))
    probe = TreeReadoutDecoder(grid, SUBJECT, k)
    drive(probe, perfect(y))
    _, _, _, a, b, kk = probe.trace[-1]
    cuts = partition(a, b, kk)
    p = data.draw(
        st.lists(st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 0.99]), min_size=kk, max_size=kk)
    )
    p[data.draw(st.integers(0, kk - 1))] += 0.02  # never all zero
    decoder = final_question_answer(grid, k, y, p)
    # Brute force: each option's mass times the average of its grid values.
    total = sum(exact_probability(v) for v in p)
    value = [Fraction(grid.bound(i)) for i in range(a, b)]
    mean = sum(
        exact_probability(p[j])
        / total
        * sum(value[cuts[j] - a : cuts[j + 1] - a])
        / (cuts[j + 1] - cuts[j])
        for j in range(kk)
    )
    result = decoder.result()
    assert result.extra["readout"] == "mean"
    assert result.value == round_to_places(mean, grid.places)
    assert result.cell[0] <= result.value < result.cell[1]
    assert value[0] <= Fraction(result.value) <= value[-1]
    # The median: expand the cells, the smallest value whose cumulative mass reaches 1/2.
    masses = [
        exact_probability(p[j]) / total / (cuts[j + 1] - cuts[j])
        for j in range(kk)
        for _ in range(cuts[j], cuts[j + 1])
    ]
    median_index = next(i for i, c in enumerate(accumulate(masses)) if 2 * c >= 1)
    median = final_question_answer(grid, k, y, p)
    median.readout = "median"
    assert median.result().value == grid.bound(a + median_index)
    assert median.result().cell == (grid.bound(a + median_index), grid.bound(a + median_index + 1))


def test_mean_worked_example() -> None:
    # [0, 100) in tens, then [70, 80) in ones; 0.5 on 76, 0.3 on 77, 0.2 on 79:
    # mean 76*0.5 + 77*0.3 + 79*0.2 = 76.9 -> 77 on an integer grid; median 76.
    grid = Grid(Decimal(0), Decimal(1), 100)
    decoder = make_decoder("tree10_mean", grid, SUBJECT)
    decoder.give("1", Answer("7"))
    decoder.give("2", Answer("6", {"6": 0.5, "7": 0.3, "9": 0.2}))
    result = decoder.result()
    assert result.value == Decimal(77) and result.cell == (Decimal(77), Decimal(78))
    assert result.extra["mean"] == "76.9" and result.extra["greedy"] == "76"
    median = make_decoder("tree10_median", grid, SUBJECT)
    median.give("1", Answer("7"))
    median.give("2", Answer("6", {"6": 0.5, "7": 0.3, "9": 0.2}))
    assert median.result().value == Decimal(76)
    # The same on the x0.01 grid keeps two places: 0.769 -> 0.77.
    cents = make_decoder("tree10_mean", Grid(Decimal(0), Decimal("0.01"), 100), SUBJECT)
    cents.give("1", Answer("7"))
    cents.give("2", Answer("6", {"6": 0.5, "7": 0.3, "9": 0.2}))
    assert cents.result().value == Decimal("0.77") and cents.result().extra["mean"] == "0.769"


def test_mean_falls_back_to_the_greedy_read_out_without_probabilities() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    for probabilities in (None, {}, {"3": 0.0}, {"0": "high"}):
        decoder = make_decoder("tree10_mean", grid, SUBJECT)
        decoder.give("1", Answer("4"))
        decoder.give("2", Answer("2", probabilities))  # type: ignore[arg-type]
        result = decoder.result()
        assert result.value == Decimal(42)
        assert result.extra == {"readout": "greedy", "fallback": "no probabilities"}
    single = make_decoder("tree4_mean", Grid(Decimal(5), Decimal(1), 1), SUBJECT)
    assert single.done and single.result().value == Decimal(5)
    assert single.result().extra["fallback"] == "no question asked"


# ---- the beam ---------------------------------------------------------------------------------


def scripted(data: st.DataObject) -> Callable[[list[tuple[int, int]]], Answer]:
    """Random two-decimal probabilities per question (fixed per question), choice = argmax."""
    memo: dict[tuple[tuple[int, int], ...], Answer] = {}

    def answer(options: list[tuple[int, int]]) -> Answer:
        key = tuple(options)
        if key not in memo:
            p = data.draw(
                st.lists(st.integers(0, 100), min_size=len(options), max_size=len(options))
            )
            p[data.draw(st.integers(0, len(options) - 1))] += 1
            choice = max(range(len(p)), key=lambda j: (p[j], -j))
            memo[key] = Answer(str(choice), {str(j): v / 100 for j, v in enumerate(p)})
        return memo[key]

    return answer


@given(data=st.data(), n=st.integers(1, 300), k=st.integers(2, 6))
def test_beam_of_one_is_the_greedy_tree_when_choices_are_argmax(
    data: st.DataObject, n: int, k: int
) -> None:
    grid = Grid(Decimal(0), Decimal(1), n)
    answer = scripted(data)
    greedy, beam = (
        make_decoder(f"tree{k}", grid, SUBJECT),
        make_decoder(f"tree{k}_beam1", grid, SUBJECT),
    )
    assert drive(greedy, answer) == drive(beam, answer)
    assert beam.result().value == greedy.result().value
    assert beam.result().extra["greedy_path"] is True


def best_leaf(n: int, k: int, answer: Callable[[list[tuple[int, int]]], Answer]) -> int:
    """Brute force: the leaf of the full tree with the largest product of probabilities.

    Ties as the beam breaks them: the greedy path, then the lower cell.
    """
    leaves: list[tuple[Fraction, bool, int]] = []

    def walk(a: int, b: int, probability: Fraction, greedy: bool) -> None:
        if b - a <= 1:
            leaves.append((probability, greedy, a))
            return
        cuts = partition(a, b, k)
        options = [(cuts[j], cuts[j + 1]) for j in range(len(cuts) - 1)]
        reply = answer(options)
        p = option_distribution(reply, [str(j) for j in range(len(options))])
        assert p is not None
        for j, (lo, hi) in enumerate(options):
            walk(lo, hi, probability * p[j], greedy and reply.choice == str(j))

    walk(0, n, Fraction(1), True)
    return min(leaves, key=lambda leaf: (-leaf[0], not leaf[1], leaf[2]))[2]


@given(data=st.data(), n=st.integers(1, 40), k=st.integers(2, 5))
def test_a_beam_as_wide_as_the_grid_finds_the_most_probable_leaf(
    data: st.DataObject, n: int, k: int
) -> None:
    grid = Grid(Decimal(0), Decimal(1), n)
    answer = scripted(data)
    beam = make_decoder(f"tree{k}_beam{n}", grid, SUBJECT)
    rounds = drive(beam, answer)
    assert beam.result().value == grid.bound(best_leaf(n, k, answer))
    assert rounds <= tree_depth(n, k)[1]


def test_beam_asks_all_its_intervals_in_one_round_and_recovers_a_greedy_mistake() -> None:
    grid = Grid(Decimal(0), Decimal(1), 16)
    beam = make_decoder("tree4_beam2", grid, SUBJECT)
    (root,) = beam.ready()
    # The answer leans to [4, 8) but gives [8, 12) 0.4; the target is 9.
    beam.give(root.key, Answer("1", {"0": 0.0, "1": 0.6, "2": 0.4, "3": 0.0}))
    second = beam.ready()
    assert [q.key for q in second] == ["2.1", "2.2"]
    assert [bounds_of(grid, q.wire(False))[0][0] for q in second] == [4, 8]
    beam.give("2.1", Answer("0", {"0": 0.3, "1": 0.3, "2": 0.2, "3": 0.2}))  # unsure
    beam.give("2.2", Answer("1", {"1": 1.0}))  # sure: 9
    assert beam.done
    result = beam.result()
    assert result.value == Decimal(9) and result.rounds == 2
    assert result.extra == {"path_probability": 0.4, "greedy_path": False}
    greedy = make_decoder("tree4", grid, SUBJECT)
    greedy.give("1", Answer("1"))
    greedy.give("2", Answer("0"))
    assert greedy.result().value == Decimal(4)


# ---- probabilistic bisection ------------------------------------------------------------------


@given(data=st.data(), n=st.integers(1, 60), k=st.integers(2, 6), rounds=st.integers(1, 6))
def test_bisection_posterior_is_bayes_rule_cell_by_cell(
    data: st.DataObject, n: int, k: int, rounds: int
) -> None:
    grid = Grid(Decimal(0), Decimal(1), n)
    decoder = BisectionDecoder(grid, SUBJECT, k)
    posterior = [Fraction(1, n)] * n
    for _ in range(rounds):
        if decoder.done:
            break
        (question,) = decoder.ready()
        options = bounds_of(grid, question.wire(False))
        # Integer cuts, every interval non-empty, min(K, N) of them covering the grid.
        assert len(options) == min(k, n)
        assert options[0][0] == 0 and options[-1][1] == n
        assert all(a < b for a, b in options)
        assert all(options[j][1] == options[j + 1][0] for j in range(len(options) - 1))
        p = data.draw(st.lists(st.integers(0, 100), min_size=len(options), max_size=len(options)))
        if not any(p):
            p[0] = 1
        decoder.give(question.key, Answer("0", {str(j): v / 100 for j, v in enumerate(p)}))
        total = sum(p)
        for j, (a, b) in enumerate(options):
            likelihood = (1 - FLOOR) * Fraction(p[j], total) + FLOOR / len(options)
            for i in range(a, b):
                posterior[i] *= likelihood
        norm = sum(posterior)
        posterior = [w / norm for w in posterior]
        weights = [r.w for r in decoder.runs for _ in range(r.a, r.b)]
        assert [w / sum(weights) for w in weights] == posterior
    top = max(range(n), key=lambda i: (posterior[i], -i))
    if decoder.done:
        assert (decoder.stop == "threshold") == (posterior[top] > STOP_MASS)
        assert decoder.result().value == grid.bound(top)


def test_bisection_starts_with_algorithm_1s_partition_and_cuts_at_quantiles() -> None:
    assert quantile_cuts([Run(0, 100, Fraction(1))], 100, 4) == [0, 25, 50, 75, 100]
    assert quantile_cuts([Run(0, 7, Fraction(1))], 7, 2) == [0, 3, 7]
    # Most of the mass on cell 40: it gets an interval of its own.
    runs = [Run(0, 40, Fraction(1)), Run(40, 41, Fraction(1000)), Run(41, 100, Fraction(1))]
    assert quantile_cuts(runs, 100, 4) == [0, 40, 41, 42, 100]
    # Two tied cells with most of the mass are split (a cut below the quantile never would).
    runs = [Run(0, 1, Fraction(1, 40)), Run(1, 3, Fraction(39, 40))]
    assert quantile_cuts(runs, 3, 2) == [0, 2, 3]
    assert update([Run(0, 4, Fraction(1))], [0, 1, 4], [Fraction(2), Fraction(1)]) == [
        Run(0, 1, Fraction(2)),
        Run(1, 4, Fraction(1)),
    ]


def test_bisection_recovers_from_a_confident_wrong_first_answer() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    decoder = make_decoder("bisect4", grid, SUBJECT)
    truth = perfect(62)
    first = True

    def answer(options: list[tuple[int, int]]) -> Answer:
        nonlocal first
        if first:
            first = False
            return Answer("0", {"0": 1.0})  # [0, 25), confidently wrong
        return truth(options)

    rounds = drive(decoder, answer)
    assert decoder.result().value == Decimal(62)
    assert decoder.result().extra["stop"] == "threshold"
    assert rounds <= decoder.depths()[1]


def test_bisection_stops_at_the_budget_when_answers_say_nothing() -> None:
    grid = Grid(Decimal(0), Decimal(1), 100)
    decoder = make_decoder("bisect4", grid, SUBJECT)
    flat = {str(j): 0.25 for j in range(4)}
    rounds = drive(decoder, lambda options: Answer("0", flat))
    assert rounds == decoder.depths()[1] == tree_depth(100, 4)[1] + 4
    assert decoder.result().extra["stop"] == "budget"
    assert decoder.result().value == Decimal(0)  # a flat posterior: the lowest cell


# ---- determinism (what resume relies on) ---------------------------------------------------------


@given(data=st.data(), grid=grids(max_n=5000), name=st.sampled_from(NEW))
def test_same_answers_with_probabilities_give_the_same_questions(
    data: st.DataObject, grid: Grid, name: str
) -> None:
    first, second = make_decoder(name, grid, SUBJECT), make_decoder(name, grid, SUBJECT)
    while not first.done:
        ready = first.ready()
        assert ready == second.ready() and ready
        for question in ready:
            labels = sorted(question.labels())
            choice = data.draw(st.sampled_from(labels))
            p = data.draw(st.lists(st.integers(0, 100), min_size=len(labels), max_size=len(labels)))
            answer = Answer(choice, {label: v / 100 for label, v in zip(labels, p, strict=True)})
            first.give(question.key, answer)
            second.give(question.key, answer)
    assert second.done and first.ready() == second.ready() == []
    assert first.result() == second.result()
    shallow, deep = first.depths()
    assert shallow <= first.result().rounds <= deep


def test_a_capped_run_of_the_new_decoders_resumes_to_the_same_outputs(tmp_path: Path) -> None:
    """Resume replays the recorded answers, probabilities included, through fresh decoders."""
    args = ["--param", "per_operator=2", "--decoders", "tree10_mean,tree4_beam2,bisect4"]
    whole, capped = tmp_path / "whole", tmp_path / "capped"
    assert cli("run", *args, "--run", str(whole), "--no-progress") == 0
    assert cli("run", *args, "--run", str(capped), "--no-progress", "--max-requests", "150") == 1
    assert cli("resume", str(capped), "--no-progress") == 0
    assert final_outputs(capped) == final_outputs(whole)
    assert {status for _, status in final_outputs(whole).values()} == {"ok"}
