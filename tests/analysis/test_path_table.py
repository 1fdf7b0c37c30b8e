"""The PathTable built from distinct paths (``path_table``) holds, per unit, what a
straightforward per-unit reading would: its path's steps, the last line per output winning,
and the steps both option orders asked alike paired in (case, condition, repeat, decoder)
order. Also the compact stride and integer types it is built from."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.columns.compact import extended, narrow, narrow_type, stride_view
from analysis.loading.columns.interning import Interner
from analysis.loading.probabilities.interval_paths import PathsReader
from analysis.loading.probabilities.order_pairs import group_key
from analysis.loading.probabilities.path_table import IDENTITY, PathStore, build_table

_INT64 = st.integers(-(2**63), 2**63 - 1)
_ORDERS = ("ascending", "reversed", "shuffled")


@given(st.lists(st.lists(st.one_of(st.integers(-300, 300), _INT64), min_size=3, max_size=3)))
def test_a_stride_holds_every_row_and_widens_only_when_a_value_needs_it(rows: list[Any]) -> None:
    stride: array[int] = array("i")
    for row in rows:
        stride = extended(stride, row)
    assert stride_view(stride, 3).tolist() == rows
    fits = all(-(2**31) <= v < 2**31 for row in rows for v in row)
    assert stride.typecode == ("i" if fits else "q")


@given(_INT64, _INT64)
def test_narrow_type_is_the_smallest_that_holds_the_range(x: int, y: int) -> None:
    low, high = min(x, y), max(x, y)
    found = narrow_type(low, high)
    assert np.iinfo(found).min <= low and high <= np.iinfo(found).max
    order = [np.int8, np.int16, np.int32, np.int64]
    for smaller in order[: order.index(found)]:
        assert low < np.iinfo(smaller).min or high > np.iinfo(smaller).max


_NEAR_INT32_TOP = st.integers(2**31 - 4, 2**31 - 1)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.one_of(st.integers(-5, 5), _NEAR_INT32_TOP),
            st.one_of(st.integers(0, 2), _INT64),
        ),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
def test_group_key_orders_and_equates_rows_as_their_tuples(
    rows: list[tuple[int, ...]], narrowed: bool
) -> None:
    # Narrow columns (as the table's) take the int32 key, whose sums may wrap.
    columns = [np.array(c, np.int64) for c in zip(*rows, strict=True)]
    found = group_key([narrow(c) for c in columns] if narrowed else columns, room=2)
    key = found.tolist()
    assert min(key) >= 0 and 2 * max(key) + 1 <= np.iinfo(found.dtype).max  # room for 2·key+1
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (key[i] < key[j]) == (rows[i] < rows[j])
            assert (key[i] == key[j]) == (rows[i] == rows[j])


@st.composite
def _paths(draw: Any) -> list[dict[str, Any]]:
    found = []
    for _ in range(draw(st.integers(1, 5))):
        steps = []
        for _ in range(draw(st.integers(1, 4))):
            form = draw(st.integers(0, 3))
            a, width = draw(st.integers(0, 3)), draw(st.integers(2, 3))
            cuts = draw(st.sampled_from([(a, a + 1, a + width), (a, a + 1, a + 2, a + width + 1)]))
            k, choice, truth = (
                draw(st.integers(2, 3)),
                draw(st.integers(0, 2)),
                draw(st.integers(-1, 2)),
            )
            row = [form, a, a + width, k, choice, truth]
            steps.append({"row": row, "cuts": cuts if form == 3 else None})
        ints = (100, 2, draw(st.integers(-1, 99)), 1, draw(st.integers(0, 4)), 1, 0, len(steps))
        floats = (
            draw(st.floats(0, 50)),
            draw(st.one_of(st.just(float("nan")), st.floats(0, 9))),
            draw(st.floats(0, 99)),
            draw(st.floats(-100, 100)),  # L
            draw(st.floats(0.01, 10)),  # eps
        )
        found.append({"ints": ints, "floats": floats, "steps": steps})
    return found


@st.composite
def _lines(draw: Any, n_paths: int) -> list[tuple[int, ...]]:
    """(job, decoder, condition, order, case, family, repeat, path or -1 failed / -2 other)."""
    # Few cases, conditions and repeats: several jobs then share a pairing key.
    two, three, mostly = st.integers(0, 1), st.integers(0, 2), st.sampled_from((0, 0, 0, 1))
    line = st.tuples(st.integers(0, 5), two, mostly, three, mostly, three, two)
    paths = st.integers(-2, n_paths - 1)
    lines = st.lists(st.tuples(line, paths).map(lambda t: (*t[0], t[1])), min_size=4, max_size=40)
    return draw(lines)


def _interners(top: int) -> dict[str, Interner]:
    interners = {}
    for name in (*IDENTITY[:-1], "choice"):
        interners[name] = Interner()
        for i in range(top):
            interners[name].code(_ORDERS[i] if name == "order" and i < 3 else f"{name}{i}")
    return interners


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_table_holds_each_outputs_last_path_and_pairs_steps_asked_alike(data: Any) -> None:
    paths = data.draw(_paths())
    lines = data.draw(_lines(len(paths)))
    store = PathStore()
    for path in paths:
        steps = [v for s in path["steps"] for v in s["row"]]
        cuts = [(i, s["cuts"]) for i, s in enumerate(path["steps"]) if s["cuts"] is not None]
        store.add_path(path["ints"], path["floats"], steps, cuts)
    latest: dict[tuple[int, int], int] = {}
    rows = []
    for line in lines:
        job, decoder, path = line[0], line[1], line[-1]
        if path < 0:
            latest[job, decoder] = path
            continue
        latest[job, decoder] = len(rows)
        rows.append(line)
        store.units = extended(store.units, line)
    store.latest = [array("i", [-3] * 6) for _ in range(3)]
    for (job, decoder), value in latest.items():
        store.latest[decoder][job] = value
    table = build_table(store, _interners(6), ("ascending", "reversed"))

    alive = [r for i, r in enumerate(rows) if latest[r[0], r[1]] == i]
    assert len(table) == len(alive)
    assert table.outputs_read == sum(1 for v in latest.values() if v != -1)
    starts = table.unit["step_start"].tolist()
    for u, row in enumerate(alive):
        path = paths[row[-1]]
        assert [int(table.unit[name][u]) for name in IDENTITY] == list(row[:-1])
        assert table.unit["step_count"][u] == len(path["steps"])
        assert table.unit["error_cells"][u] == path["floats"][0]
        assert table.unit["target_cells"][u] == path["floats"][2]
        assert (table.unit["lower"][u], table.unit["eps"][u]) == path["floats"][3:]
        assert table.unit_of(f"job{row[0]}", f"decoder{row[1]}") == u
        for depth, s in enumerate(path["steps"]):
            i = starts[u] + depth
            form, _, _, k, choice, truth = s["row"]
            got = [int(table.step[name][i]) for name in ("form", "k", "choice", "truth")]
            assert got == [form, k, choice, truth]
            assert table.cuts.get(i) == s["cuts"]

    # Pairs, as the plain reading: per (case, condition, repeat, decoder) the last unit of
    # each order, every depth both reached whose question (form, parent, k, cuts) is one.
    sides: dict[tuple[int, ...], dict[int, int]] = {}
    for u, row in enumerate(alive):
        sides.setdefault((row[4], row[2], row[6], row[1]), {})[row[3]] = u
    expected, pair = [], [-1] * len(table.step["pair"])
    for key in sorted(sides):
        if 0 not in sides[key] or 1 not in sides[key]:
            continue
        a, b = sides[key][0], sides[key][1]
        steps_a, steps_b = paths[alive[a][-1]]["steps"], paths[alive[b][-1]]["steps"]
        for depth, (sa, sb) in enumerate(zip(steps_a, steps_b, strict=False)):
            if sa["row"][:4] == sb["row"][:4] and sa["cuts"] == sb["cuts"]:
                pair[starts[a] + depth] = 2 * len(expected)
                pair[starts[b] + depth] = 2 * len(expected) + 1
                expected.append((a, b, depth + 1))
    pairs = (table.pair_first, table.pair_second, table.pair_depth)
    got = list(zip(*(p.tolist() for p in pairs), strict=True))
    assert got == expected
    assert table.step["pair"].tolist() == pair


def test_of_two_units_of_one_order_and_key_the_later_is_paired() -> None:
    store = PathStore()
    store.add_path((100, 2, 1, 1, 0, 1, 0, 1), (0.0, 0.0, 1.0, 0.0, 1.0), [0, 0, 2, 2, 0, 0], [])
    # Jobs 0 and 1 share case, condition, repeat and decoder in the first order; job 2 is
    # the reversed order's.
    for job, order in ((0, 0), (1, 0), (2, 1)):
        store.units = extended(store.units, (job, 0, 0, order, 0, 0, 0, 0))
    store.latest = [array("i", [0, 1, 2])]
    table = build_table(store, _interners(6), ("ascending", "reversed"))
    assert (table.pair_first.tolist(), table.pair_second.tolist()) == ([1], [2])
    assert table.step["pair"].tolist() == [-1, 0, 1]


def test_bisection_steps_pair_only_with_the_same_cuts() -> None:
    store = PathStore()
    # Three one-step bisection paths over [0, 3) with two options; the first two share cuts.
    for cuts in ((0, 1, 3), (0, 1, 3), (0, 2, 3)):
        store.add_path(
            (3, 2, 0, 0, 1, -1, 0, 1), (0.0, 0.0, 0.0, 0.0, 1.0), [3, 0, 3, 2, 0, 0], [(0, cuts)]
        )
    # Case 0: paths 0 and 1 (same cuts); case 1: paths 0 and 2 (other cuts).
    lines = ((0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 2, 1))
    for job, path, case in lines:
        store.units = extended(store.units, (job, 0, 0, job % 2, case, 0, 0, path))
    store.latest = [array("i", [0, 1, 2, 3])]
    table = build_table(store, _interners(6), ("ascending", "reversed"))
    assert (table.pair_first.tolist(), table.pair_second.tolist()) == ([0], [1])
    assert table.step["pair"].tolist() == [0, 1, -1, -1]
    assert table.cuts == {0: (0, 1, 3), 1: (0, 1, 3), 2: (0, 1, 3), 3: (0, 2, 3)}


def _line(job: str, repeat: int, family: Any) -> dict[str, Any]:
    trace = [
        {"round": 1, "choice": "1", "interval": ["2", "4"], "parent": ["0", "4"], "k": 2},
        {"round": 2, "choice": "0", "interval": ["2", "3"], "parent": ["2", "4"], "k": 2},
    ]
    return {
        "job": job,
        "decoder": "tree2",
        "condition": "provided",
        "order": "ascending",
        "case": "c",
        "family": family,
        "repeat": repeat,
        "target": "2.5",
        "value": "2",
        "L": "0",
        "eps": "1",
        "N": 4,
        "trace": trace,
        "status": "ok",
    }


def test_a_reader_widens_its_rows_for_a_repeat_beyond_int32_and_names_any_value_as_text() -> None:
    reader = PathsReader(Path("outputs.jsonl"))
    for i, (repeat, family) in enumerate(((1, 7), (2**40, "7"), (3, 7.0))):
        reader.add(i + 1, _line(f"j{i}", repeat, family))
    table = reader.table(("ascending", "reversed"))
    assert table.unit["repeat"].tolist() == [1, 2**40, 3]
    assert [table.names["family"][f] for f in table.unit["family"].tolist()] == ["7", "7", "7.0"]
    assert table.unit["step_count"].tolist() == [2, 2, 2]
    assert table.step["choice"].tolist() == [0, 1] * 3  # codes of "1", "0"
