"""Compact columns hold what the wide ones held (issue 29): narrow integer types, and the
first-divergence groups found in NumPy instead of a Python tuple per unit."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.columns.compact import narrow
from analysis.loading.probabilities.interval_paths import INELIGIBLE, LEFT_OUT
from analysis.loading.viewer.job_rounds import NO_PROBABILITY, PROBABILITY_SCALE, quantised
from analysis.statistics.divergence import divergence_groups

_INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(st.one_of(st.integers(-200, 200), st.integers(-(2**40), 2**40), _INT64)))
def test_narrow_keeps_every_value_in_the_smallest_type(values: list[int]) -> None:
    column = np.array(values, np.int64)
    got = narrow(column)
    assert got.tolist() == values
    smaller = {np.int16: np.int8, np.int32: np.int16, np.int64: np.int32}.get(got.dtype.type)
    if smaller is not None and values:  # the next smaller type would not hold them
        info = np.iinfo(smaller)
        assert min(values) < info.min or max(values) > info.max


@given(st.lists(st.one_of(st.floats(0, 1, width=32), st.just(float("nan"))), max_size=300))
def test_probabilities_quantised_in_blocks_equal_quantised_at_once(values: list[float]) -> None:
    probs = np.array(values, np.float32)
    whole = quantised(probs)
    blocks = np.concatenate(
        [quantised(probs[i : i + 7]) for i in range(0, len(probs), 7)] or [whole]
    )
    assert blocks.tolist() == whole.tolist()
    assert all(v == NO_PROBABILITY or 0 <= v <= PROBABILITY_SCALE for v in whole.tolist())


class _Log(SimpleNamespace):
    """The AnswerLog columns divergence_groups reads."""

    def __len__(self) -> int:
        return len(self.units["decoder"])

    def per_question(self, name: str, rows: np.ndarray) -> np.ndarray:
        return np.asarray(getattr(self, f"q_{name}"))[rows]


def _units(draw: Any) -> dict[str, np.ndarray]:
    n = draw(st.integers(0, 40))

    def pick(top: int) -> np.ndarray:
        return np.array(draw(st.lists(st.integers(0, top), min_size=n, max_size=n)), np.int64)

    return {
        "decoder": pick(2),
        "condition": pick(1),
        "n_cells": np.array([(100, 1000)[i] for i in pick(1)], np.int64),
        "branching": np.array([(2, 10)[i] for i in pick(1)], np.int64),
        "ineligible": pick(len(INELIGIBLE) - 1),
        "first_divergence": pick(3),
        "step_count": pick(3) + 1,
        "error_cells": np.zeros(n),
        "forced_cells": np.zeros(n),
        "beyond_term": np.zeros(n, np.int64),
    }


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_divergence_groups_are_the_units_grouped_by_decoder_condition_n_and_k(data: Any) -> None:
    units = _units(data.draw)
    n = len(units["decoder"])
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    names = {"decoder": ("tree2", "direct", "tree10"), "condition": ("provided", "arithmetic")}
    log: Any = _Log(
        units={k: narrow(v) if v.dtype.kind == "i" else v for k, v in units.items()},
        names=names,
        q_unit=np.empty(0, np.int64),
        q_depth=np.empty(0, np.int16),
        q_holds=np.empty(0, np.int8),
        q_selected=np.empty(0),
        q_true=np.empty(0),
    )
    # The reference: the tuple-per-unit grouping the NumPy one replaced.
    members: dict[tuple[Any, ...], list[int]] = {}
    left_out: dict[tuple[Any, ...], Counter[str]] = {}
    for i in np.flatnonzero(mask).tolist():
        key = (
            names["decoder"][units["decoder"][i]],
            names["condition"][units["condition"][i]],
            int(units["n_cells"][i]),
            int(units["branching"][i]),
        )
        if units["ineligible"][i] in LEFT_OUT:
            left_out.setdefault(key, Counter())[INELIGIBLE[units["ineligible"][i]]] += 1
        else:
            members.setdefault(key, []).append(i)
    groups = divergence_groups(log, ("direct", "tree2", "tree10"), ("arithmetic", "provided"), mask)
    got = {(g.decoder, g.condition, g.n_cells, g.branching): g for g in groups}
    assert set(got) == set(members)
    for key, rows in members.items():
        assert got[key].n == len(rows)
        assert got[key].excluded == tuple(sorted(left_out.get(key, Counter()).items()))
    order = [(g.decoder, g.condition) for g in groups]
    rank = {("direct", 0): 0, ("tree2", 0): 1, ("tree10", 0): 2}
    assert order == sorted(
        order, key=lambda k: (rank[(k[0], 0)], ("arithmetic", "provided").index(k[1]))
    )
