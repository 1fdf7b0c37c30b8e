"""The Outputs pass's rows (issue 29): chunked narrow columns, and the fast path's codes.

``RowChunks`` must give the columns one stride array narrowed at the end gave, whatever the
chunk size, the values (int16 to int64) and the rows put over earlier ones; the reader's
fast path (``OutputsReader._seen``) must give the codes its checked path (``_row``) gives,
for values of every JSON type a line may carry.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.loading.columns.compact import narrow
from analysis.loading.columns.row_chunks import RowChunks
from analysis.loading.logs.outputs import LogStats, Outputs, OutputsReader
from runfolder.errors import LogFormatError

_VALUES = st.integers(-(2**63), 2**63 - 1) | st.integers(-200, 200)


@settings(max_examples=150, deadline=None)
@given(
    width=st.integers(1, 4),
    chunk=st.integers(1, 5),
    data=st.data(),
)
def test_chunked_columns_are_the_whole_columns_narrowed(width: int, chunk: int, data: Any) -> None:
    rows = data.draw(st.lists(st.tuples(*[_VALUES] * width), max_size=30))
    store = RowChunks(width, chunk)
    expected: list[tuple[int, ...]] = []
    for row in rows:
        store.append(row)
        expected.append(row)
        if expected and data.draw(st.booleans()):  # a key written twice: the last kept
            at = data.draw(st.integers(0, len(expected) - 1))
            again = data.draw(st.tuples(*[_VALUES] * width))
            store.put(at, again)
            expected[at] = again
    assert len(store) == len(expected)
    whole = np.array(expected, np.int64).reshape(-1, width)
    for i, column in enumerate(store.columns()):
        wanted = narrow(whole[:, i])
        assert column.dtype == wanted.dtype
        assert np.array_equal(column, wanted)


_TEXT = st.sampled_from(["a", "b", "7"])
_KEYS = st.sampled_from(["family", "case", "domain", "repeat", "rounds", "simulated", "oracle"])
_KEYS |= st.sampled_from(["decoder", "status", "value", "N", "job"])
_ANY = _TEXT | st.sampled_from([1, 1.0, True, False, None, 0, 7])
# Values equal as dictionary keys but not as text: the fast path must tell them apart.
_ALIASED = (1, 1.0, True, "1")
_ALIASES = st.sampled_from(_ALIASED)


def _line(draw: Any) -> dict[str, Any]:
    status = draw(st.sampled_from(["ok", "failed"]))
    line: dict[str, Any] = {
        "job": draw(st.sampled_from(["j1", "j2", "j3"])),
        "decoder": draw(_TEXT),
        "condition": draw(_TEXT),
        "order": draw(_TEXT),
        "status": status,
        "target": draw(st.sampled_from(["56", "0.5"])),
        "value": draw(st.sampled_from(["56", "57", "0.25"])),
        "L": "0",
        "eps": draw(st.sampled_from(["1", "0.25"])),
        "N": 100,
    }
    for key in ("domain", "case", "family", "repeat", "rounds", "simulated", "oracle"):
        if draw(st.booleans()):
            line[key] = draw(_ANY if key not in ("repeat",) else st.sampled_from([0, 3, None]))
    if draw(st.booleans()):
        line["extra"] = {"decreased": draw(_ANY)}
    return line


def _read(lines: list[dict[str, Any]], fast: bool) -> Outputs:
    reader = OutputsReader(Path("outputs.jsonl"))
    if not fast:
        reader._seen = lambda record: None  # type: ignore[method-assign]
    for lineno, line in enumerate(lines, 1):
        reader.add(lineno, line)  # type: ignore[arg-type]
    return reader.result(LogStats(True, len(lines), 0))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_fast_path_gives_the_checked_paths_columns(data: Any) -> None:
    # Lines that differ from one another in a field or two, so most take the fast path.
    base = _line(data.draw)
    lines = [base]
    for _ in range(data.draw(st.integers(0, 12))):
        line = dict(data.draw(st.sampled_from(lines)))
        line.update(data.draw(st.dictionaries(_KEYS, _ALIASES | _ANY, max_size=2)))
        lines.append(line)
    try:
        checked = _read(lines, fast=False)
    except LogFormatError as refused:  # a malformed line: refused the same way
        with pytest.raises(LogFormatError) as again:
            _read(lines, fast=True)
        assert str(again.value) == str(refused)
        return
    fast = _read(lines, fast=True)
    for field in dataclasses.fields(Outputs):
        a, b = getattr(fast, field.name), getattr(checked, field.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), field.name
        else:
            assert a == b, field.name


def test_values_equal_as_keys_but_not_as_text_are_told_apart() -> None:
    base: dict[str, Any] = {"job": "j1", "case": "c", "decoder": "a", "condition": "a"}
    base |= {"order": "a", "status": "ok", "target": "56", "value": "56", "L": "0", "eps": "1"}
    base["N"] = 100
    lines = [base]
    for key in ("family", "case", "domain", "rounds", "simulated", "decoder", "job"):
        lines += [base | {"job": f"{key}{i}", key: alias} for i, alias in enumerate(_ALIASED)]
    checked, fast = _read(lines, fast=False), _read(lines, fast=True)
    assert len(fast) == len(checked) > len(lines) - 2  # job 1 and "1" are one job
    for field in dataclasses.fields(Outputs):
        a, b = getattr(fast, field.name), getattr(checked, field.name)
        same = np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
        assert same, field.name
