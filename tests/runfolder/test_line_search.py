"""``lines_containing``: the whole lines the one reader would yield that hold a byte string,
plain or compressed, whatever the block size, a torn tail never among them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runfolder.line_search as line_search
from runfolder import JsonlAppender, JsonlReader, lines_containing

jobs_st = st.lists(st.sampled_from(["a", "b", "ab", "c d"]), min_size=0, max_size=40)


def _write(path: Path, jobs: list[str], compress: bool, flush_every: int = 3) -> None:
    log = JsonlAppender(path, buffered=True, compress=compress)
    for i, job in enumerate(jobs):
        log.write({"job": job, "i": i})
        if i % flush_every == flush_every - 1:
            log.flush()
    log.close()


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_st, compress=st.booleans(), block=st.integers(min_value=1, max_value=64))
def test_the_lines_found_are_those_the_reader_holds(
    tmp_path_factory: pytest.TempPathFactory, jobs: list[str], compress: bool, block: int
) -> None:
    path = tmp_path_factory.mktemp("log") / "requests.jsonl"
    _write(path, jobs, compress)
    needle = orjson.dumps("ab")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(line_search, "_BLOCK", block)  # lines cut across many blocks
        found = [orjson.loads(line) for line in lines_containing(path, needle)]
    expected = [r for r in JsonlReader[dict[str, object]](path) if r["job"] == "ab"]
    assert found == expected


def test_a_torn_tail_and_a_missing_log_yield_nothing(tmp_path: Path) -> None:
    path = tmp_path / "outputs.jsonl"
    assert list(lines_containing(path, b"x")) == []
    path.write_bytes(b'{"job": "x", "i": 1}\n{"job": "x", "i"')  # killed mid-line
    assert list(lines_containing(path, b'"x"')) == [b'{"job": "x", "i": 1}\n']
