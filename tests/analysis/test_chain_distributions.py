"""Index digits', index bits' and threshold CDFs' predicted distributions: rebuilt from the
answers as stated in ``chain_leaves``, scored like the trees', n/a without probabilities."""

from __future__ import annotations

import itertools
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from probability_logs import LogWriter
from test_proper_scores import integrated_crps, pairwise_crps

from analysis.loading.probabilities.answers import load_answers
from analysis.loading.probabilities.chain_units import (
    BITS,
    DIGITS,
    THRESHOLDS,
    ChainLog,
    chain_positions,
)
from analysis.statistics.chain_leaves import chain_leaves, projected_masses, whole_chains
from analysis.statistics.distributions import distribution_stats
from analysis.statistics.output_scores import scored_outputs
from analysis.statistics.proper_scores import crps
from harness.protocol.decoders.cdf import histogram_masses, isotonic_projection


def chain_log(kind: int, n_cells: int, rows: list[tuple[int, int, list[float]]]) -> ChainLog:
    """One chain unit of ``kind`` on N cells; rows (position, chosen, probabilities)."""
    width = len(rows[0][2]) if rows else 0
    units = {
        name: np.array([value])
        for name, value in (
            ("job", 0),
            ("decoder", 0),
            ("condition", 0),
            ("family", 0),
            ("kind", kind),
            ("n_cells", n_cells),
            ("index", 0),
        )
    }
    units |= {"target_cells": np.array([0.5]), "lower": np.zeros(1), "eps": np.ones(1)}
    return ChainLog(
        units=units,
        family_names=("0",),
        r_unit=np.zeros(len(rows), np.int64),
        r_position=np.array([r[0] for r in rows], np.int64),
        r_chosen=np.array([r[1] for r in rows], np.int64),
        r_start=np.arange(len(rows), dtype=np.int64) * width,
        p=np.array([x for r in rows for x in r[2]], float),
    )


def distribution(draw_list: list[float]) -> list[float]:
    total = sum(draw_list)
    return [x / total for x in draw_list] if total > 0 else [1.0 / len(draw_list)] * len(draw_list)


def vectors(k: int) -> st.SearchStrategy[list[float]]:
    return st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k).map(distribution)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(vectors(2), min_size=7, max_size=7),
    st.lists(st.integers(0, 1), min_size=7, max_size=7),
)
def test_bits_leaves_carry_the_exact_independent_mass_of_each_span(p, chosen):
    # Seven bits of q on a 100-cell grid, heaviest (weight 64, position 6) first.
    rows = [(6 - i, chosen[i], p[i]) for i in range(7)]
    log = chain_log(BITS, 100, rows)
    assert whole_chains(log).tolist() == [True]
    leaves = chain_leaves(log, np.array([0]))
    assert np.isclose(leaves.mass.sum(), 1.0)
    # Every leaf's mass is the product distribution's mass over its span, exactly.
    exact = np.zeros(128)
    for q, bits in enumerate(itertools.product((0, 1), repeat=7)):
        exact[q] = np.prod([p[i][b] for i, b in enumerate(bits)])
    for lo, hi, m in zip(leaves.lo, leaves.hi, leaves.mass, strict=True):
        assert np.isclose(m, exact[int(lo) : int(hi)].sum(), atol=1e-12)
    assert leaves.hi.max() == 128.0  # codes above N−1 keep their mass


@settings(max_examples=40, deadline=None)
@given(vectors(10), vectors(10), st.integers(0, 9), st.integers(0, 9), st.floats(0.0, 99.99))
def test_digits_leaves_are_the_ten_way_tree_and_score_as_integrated(p1, p2, c1, c2, y):
    log = chain_log(DIGITS, 100, [(1, c1, p1), (2, c2, p2)])
    leaves = chain_leaves(log, np.array([0]))
    expected = {(10 * j, 10 * j + 10): p1[j] for j in range(10) if j != c1}
    expected |= {(10 * c1 + j, 10 * c1 + j + 1): p1[c1] * p2[j] for j in range(10)}
    # Leaves of mass 0 are gaps to every score: only each step's end children stay.
    ends = {(0, 10), (90, 100), (10 * c1, 10 * c1 + 1), (10 * c1 + 9, 10 * c1 + 10)}
    expected = {key: m for key, m in expected.items() if m > 0 or key in ends}
    found = {(int(a), int(b)): m for a, b, m in zip(leaves.lo, leaves.hi, leaves.mass, strict=True)}
    assert found.keys() == expected.keys()
    assert all(np.isclose(found[key], expected[key]) for key in expected)
    score = crps(leaves, np.array([y]))[0]
    assert np.isclose(score, pairwise_crps(leaves.lo, leaves.hi, leaves.mass, y), atol=1e-9)


def test_digits_crps_matches_numerical_integration():
    p1 = [0.0, 0.1, 0.0, 0.0, 0.7, 0.2, 0.0, 0.0, 0.0, 0.0]
    p2 = [0.05, 0.0, 0.3, 0.6, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0]
    leaves = chain_leaves(chain_log(DIGITS, 100, [(1, 4, p1), (2, 3, p2)]), np.array([0]))
    for y in (3.5, 42.5, 43.5, 51.5, 97.5):
        found = crps(leaves, np.array([y]))[0]
        assert np.isclose(found, integrated_crps(leaves.lo, leaves.hi, leaves.mass, y), atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_threshold_masses_are_the_harness_projection(raw):
    mine = projected_masses(np.array(raw))
    assert np.allclose(mine, histogram_masses(isotonic_projection(raw)), atol=1e-12)
    assert np.all(mine >= -1e-15) and np.isclose(mine.sum(), 1.0)


def test_a_threshold_cdf_is_one_leaf_per_cell():
    raw = [0.0, 0.1, 0.05, 0.6, 1.0]  # one decrease: pooled to 0.075, 0.075
    rows = [(i + 1, 0, [x, 1.0 - x]) for i, x in enumerate(raw)]
    leaves = chain_leaves(chain_log(THRESHOLDS, 6, rows), np.array([0]))
    assert leaves.lo.tolist() == [0, 1, 2, 3, 4, 5] and leaves.hi.tolist() == [1, 2, 3, 4, 5, 6]
    assert np.allclose(leaves.mass, [0.0, 0.075, 0.0, 0.525, 0.4, 0.0])


def digits_run(tmp_path: Path, second: dict[str, Any] | None, chosen: str = "3") -> Path:
    """A digits output on [0, 100) reading 43 for y = 42, and a bits output reading 42;
    the digits' second answer has ``second`` as probabilities and ``chosen`` as label."""
    log = LogWriter(n_cells=100)
    for decoder, value, trace in (
        ("digits", 43, [{"round": 1, "choice": "4"}, {"round": 2, "choice": "3"}]),
        ("bits", 42, [{"round": 1, "choice": "0101010"}]),
    ):
        record = log._output(
            "j", decoder, Decimal(42), Decimal(value), trace, "arithmetic", "ascending", "c", 0
        )
        log.raw_output(record)
    digits = [str(d) for d in range(10)]
    first = dict.fromkeys(digits, 0.0) | {"4": 0.8, "3": 0.2}
    bits = {}
    for i, weight in enumerate((64, 32, 16, 8, 4, 2, 1)):
        bit = "0101010"[i]
        bits[f"q{i + 3}"] = (f"bits/b{weight}", ["0", "1"], bit, {bit: 0.9, str(1 - int(bit)): 0.1})
    log.answers("j", 1, {"q1": ("digits/d1", digits, "4", first), **bits})
    log.answers("j", 2, {"q2": ("digits/d2", digits, chosen, second)})
    return log.write(tmp_path / "run")


def test_a_digits_and_a_bits_output_are_scored_from_the_log(tmp_path: Path):
    second = {"3": 0.5, "2": 0.5}
    log = load_answers(digits_run(tmp_path, second))
    found = scored_outputs(log)
    names = log.names["decoder"]
    by = {names[d]: i for i, d in enumerate(found.decoder.tolist())}
    assert set(by) == {"digits", "bits"}
    # Digits: 0.8·0.5 on y's cell [42, 43): log score −ln 0.4, PIT at its centre.
    i = by["digits"]
    assert np.isclose(found.scores["log_score"][i], -np.log(0.4))
    assert np.isclose(found.scores["pit"][i], 0.2 + 0.8 * 0.5 * 0.5)
    # Bits: the path read 42 with 0.9 each; y's cell holds 0.9^7.
    assert np.isclose(found.scores["log_score"][by["bits"]], -7 * np.log(0.9))


def test_outputs_without_probabilities_are_na_never_zero(tmp_path: Path):
    log = load_answers(digits_run(tmp_path, None))
    assert log.chains.without == 1
    stats = distribution_stats(log, ("digits", "bits"), ("arithmetic",), n_boot=0)
    digits = next(r for r in stats.rows if r.decoder == "digits")
    assert (digits.n, digits.scored) == (1, 0)
    assert all(np.isnan(v) for v in digits.mean.values())
    bits = next(r for r in stats.rows if r.decoder == "bits")
    assert bits.scored == 1 and bits.mean["crps"] > 0


def test_an_answer_for_another_digit_than_the_output_read_is_not_used(tmp_path: Path):
    log = load_answers(digits_run(tmp_path, {"7": 1.0}, chosen="7"))
    assert log.chains.mismatch == 1
    assert whole_chains(log.chains).tolist() == [False, True]


def test_a_decoder_with_no_distributions_form_is_named_not_scored(tmp_path: Path):
    # An imported point prediction (a trace that is neither intervals nor a chain).
    log = LogWriter(n_cells=100)
    trace = [{"round": 1, "choice": "42"}]
    log.raw_output(
        log._output("j", "mine", Decimal(42), Decimal(42), trace, "arithmetic", "ascending", "c", 0)
    )
    log.answers("j", 1, {"q1": ("mine/1", ["42"], "42", {"42": 1.0})})
    found = load_answers(log.write(tmp_path / "run"))
    stats = distribution_stats(found, ("mine",), ("arithmetic",), n_boot=0)
    assert stats.not_scored == ("mine",) and not stats.rows


def test_digits_and_bits_steps_score_the_option_holding_y(tmp_path: Path):
    log = load_answers(digits_run(tmp_path, {"3": 0.5, "2": 0.5}))
    steps = distribution_stats(log, ("digits", "bits"), ("arithmetic",), n_boot=0).steps
    by = {(s.decoder, s.depth): s for s in steps}
    assert sorted(by) == [("bits", d) for d in range(1, 8)] + [("digits", 1), ("digits", 2)]
    # y = 42: its first digit 4 had 0.8, its second 2 had 0.5 (the read 3 as well).
    assert np.isclose(by[("digits", 1)].log_loss, -np.log(0.8))
    assert np.isclose(by[("digits", 2)].log_loss, -np.log(0.5))
    assert np.isclose(by[("digits", 2)].rps, (0.5**2) / 9)  # P(≤2) = 0.5 where 1{≥2} is 1
    assert all(np.isclose(by[("bits", d)].log_loss, -np.log(0.9)) for d in range(1, 8))


@given(st.lists(st.integers(1, 10**15), min_size=1, max_size=20))
def test_positions_are_the_decoders_digit_and_bit_counts(cells):
    n = np.array(cells, np.int64)
    ones = np.ones(len(cells), np.int64)
    assert chain_positions(DIGITS * ones, n).tolist() == [len(str(c - 1)) for c in cells]
    assert chain_positions(BITS * ones, n).tolist() == [max(1, (c - 1).bit_length()) for c in cells]
    assert chain_positions(THRESHOLDS * ones, n).tolist() == [c - 1 for c in cells]
