"""The exchange columns' compact parts (issue 29): a distinct-job count kept without a string
per job, and float columns kept as float32 only where that is exact."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.columns.row_chunks import FloatChunks, RowChunks
from analysis.loading.logs.exchanges import JobCount, RequestsReader, counts_by_name
from analysis.loading.logs.outputs import LogStats
from analysis.loading.logs.request_parts import decode_parts

_PARTS = st.sampled_from(["", "a", "b", "r1", "a/b"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_PARTS, min_size=1, max_size=4).map("/".join), max_size=40))
def test_the_job_count_is_the_number_of_distinct_ids(jobs: list[str]) -> None:
    count = JobCount()
    for job in jobs:
        count.add(job)
    assert len(count) == len(set(jobs))


_FLOAT = st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 5000).map(float)


@settings(max_examples=150, deadline=None)
@given(
    width=st.integers(1, 3),
    chunk=st.integers(1, 4),
    data=st.data(),
)
def test_float_columns_come_back_value_for_value(width: int, chunk: int, data: object) -> None:
    rows = data.draw(st.lists(st.tuples(*[_FLOAT] * width), max_size=25))  # type: ignore[attr-defined]
    store = FloatChunks(width, chunk)
    for row in rows:
        store.append(row)
    whole = np.array(rows, np.float64).reshape(-1, width)
    for i in range(width):
        column = store.column(i)
        assert column.dtype == np.float64
        assert np.array_equal(column, whole[:, i], equal_nan=True)
        assert np.array_equal(np.signbit(column), np.signbit(whole[:, i]))


def test_counts_by_name_are_most_first_and_skip_unknown_codes() -> None:
    codes = np.array([1, 0, 1, -1, 2, 1, 0], np.int8)
    assert counts_by_name(codes, ("a", "b", "c", "d")) == (("b", 3), ("a", 2), ("c", 1))


_INT = st.integers(-(2**63), 2**63 - 1) | st.integers(-300, 300)


@settings(max_examples=150, deadline=None)
@given(
    width=st.integers(1, 3),
    chunk=st.integers(1, 4),
    batch=st.integers(1, 5),
    data=st.data(),
)
def test_rows_added_in_batches_give_the_columns_appends_give(
    width: int, chunk: int, batch: int, data: object
) -> None:
    rows = data.draw(st.lists(st.tuples(*[_INT] * width), max_size=25))  # type: ignore[attr-defined]
    floats = [tuple(float(v) for v in row) for row in rows]
    one, many = RowChunks(width, chunk), RowChunks(width, chunk)
    one_f, many_f = FloatChunks(width, chunk), FloatChunks(width, chunk)
    for row, row_f in zip(rows, floats, strict=True):
        one.append(row)
        one_f.append(row_f)
    for at in range(0, len(rows), batch):
        many.extend([v for row in rows[at : at + batch] for v in row])
        many_f.extend([v for row in floats[at : at + batch] for v in row])
    assert len(many) == len(one) == len(rows)
    for a, b in zip(one.columns(), many.columns(), strict=True):
        assert a.dtype == b.dtype
        assert np.array_equal(a, b)
    for i in range(width):
        assert np.array_equal(one_f.column(i), many_f.column(i), equal_nan=True)


def test_a_batch_past_64_bits_is_refused_and_adds_nothing() -> None:
    store = RowChunks(2)
    store.extend([1, 2])
    with pytest.raises(OverflowError, match="past 64 bits"):
        store.extend([3, 2**63])
    assert len(store) == 1
    assert store.columns()[0].tolist() == [1]


_RECORD = st.fixed_dictionaries(
    {"job": st.sampled_from(["a/r1", "a/r2", "b/r1"]), "run": st.just("r")},
    optional={
        "latency_ms": st.floats(0, 1e4) | st.integers(0, 10**6) | st.none(),
        "usage": st.fixed_dictionaries(
            {},
            optional={
                "input_tokens": st.integers(0, 10**12),
                "output_tokens": st.integers(-(2**63), 2**63 - 1),
            },
        )
        | st.none(),
        "cost_usd": st.floats(0, 1) | st.none(),
        "attempt": st.integers(1, 3) | st.integers(2**40, 2**62) | st.floats(0, 9),
        "model": st.sampled_from(["m", "n", 3]),
        "error": st.none() | st.just({"kind": "timeout"}),
        "cache": st.just({"hit": True, "saved_usd": 0.25, "from_run": "r0"}),
    },
)


@settings(max_examples=100, deadline=None)
@given(records=st.lists(_RECORD, max_size=30), staged=st.integers(1, 4))
def test_staged_rows_give_the_log_read_line_by_line(
    records: list[dict[str, object]], staged: int
) -> None:
    """Lines read as parts and as dicts, in any mix, with rows staged a few at a time, give
    the RequestLog that reading every line as a dict gives."""
    whole, mixed = RequestsReader(), RequestsReader()
    whole.staged_limit = 4  # every row to the chunks at once, as before staging
    mixed.staged_limit = 4 * staged
    for record in records:
        whole.add(record)  # type: ignore[arg-type]
        parts = decode_parts(orjson.dumps(record))
        assert parts is not None
        mixed.add_parts(parts)
    stats = LogStats(True, len(records), 0)
    expected, found = whole.result(stats), mixed.result(stats)
    for name, value in vars(expected).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(found, name), value, err_msg=name)
        else:
            assert getattr(found, name) == value or value != value, name
