"""The exchange columns' compact parts (issue 29): a distinct-job count kept without a string
per job, and float columns kept as float32 only where that is exact."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.exchanges import JobCount, counts_by_name
from analysis.loading.row_chunks import FloatChunks

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
