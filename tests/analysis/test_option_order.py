"""Answers' probabilities put back in interval order, whatever order the labels came in."""

from __future__ import annotations

import numpy as np

from analysis.loading.probabilities.option_order import option_vectors, tree_paths
from analysis.loading.probabilities.outcome_table import OutcomeTable


def table_of(labels: tuple[str, ...], raw: list[float], picked: int, true: int) -> OutcomeTable:
    """An outcome table holding one WITH answer (as ``OutcomeTable._add`` would)."""
    table = OutcomeTable(())
    table.labels.append(labels)
    for name, value in zip(
        ("kind", "labels", "key", "picked", "true", "raw_start", "width"),
        (4, 0, -1, picked, true, 0, len(raw)),
        strict=True,
    ):
        table.ints[name].append(value)
    for name in table.floats:
        table.floats[name].append(0.0)
    table.raw.extend(raw)
    return table


def test_eleven_labels_listed_backwards_come_back_in_interval_order():
    # "10" sorts before "2" as text: the labels are still the indices 0 .. 10.
    labels = tuple(str(j) for j in reversed(range(11)))
    raw = [float(j) for j in reversed(range(11))]  # label j has weight j
    p, start, chosen, truth = option_vectors(table_of(labels, raw, picked=0, true=8), np.array([0]))
    assert np.allclose(p, np.arange(11) / 55.0)
    assert start.tolist() == [0] and chosen.tolist() == [10] and truth.tolist() == [2]


def test_labels_that_are_not_indices_are_not_ordered():
    _, _, chosen, truth = option_vectors(table_of(("yes", "no"), [0.3, 0.7], 0, 1), np.array([0]))
    assert chosen.tolist() == [-1] and truth.tolist() == [-1]


def test_tree_paths_need_every_step_partitioned_and_nesting():
    form = np.array([0, 0, 1, 2])  # tree, tree | halving | cells
    found = tree_paths(form, np.array([0, 2, 3]), np.array([2, 1, 1]), np.array([1, 1, 1]))
    assert found.tolist() == [True, False, True]
    assert tree_paths(form, np.array([0]), np.array([2]), np.array([0])).tolist() == [False]
