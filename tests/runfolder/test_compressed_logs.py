"""Compressed logs (``runfolder.zlog``): zstd frames, one per flush, read by the one reader.

The torn-line rule becomes a torn-frame rule: a log cut anywhere reads as the frames before
the cut, an append first cuts the torn frame off, and nothing else is lost or invented.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runfolder import (
    JsonlAppender,
    JsonlReader,
    LogFormatError,
    compressed,
    stored,
    valid_end,
    whole_lines,
)
from runfolder.compact import compact_run
from runfolder.zlog import compress_frame
from tests.runhelpers import SMALL, cli, final_outputs

records_st = st.lists(
    st.lists(st.dictionaries(st.sampled_from("abc"), st.text(max_size=30), max_size=3), max_size=6),
    min_size=1,
    max_size=6,
)  # flushes, each a list of records


def write(path: Path, flushes: list[list[dict[str, str]]]) -> list[dict[str, str]]:
    """Append ``flushes`` to a compressed log, one frame per flush; every record written."""
    log = JsonlAppender(path, buffered=True, compress=True)
    written = []
    for batch in flushes:
        for record in batch:
            log.write(record)
            written.append(record)
        log.flush()
    log.close()
    return written


@settings(max_examples=60, deadline=None)
@given(flushes=records_st, cut=st.integers(min_value=0, max_value=10**6))
def test_a_cut_anywhere_reads_as_the_whole_frames_before_it(
    tmp_path_factory: pytest.TempPathFactory, flushes: list[list[dict[str, str]]], cut: int
) -> None:
    path = tmp_path_factory.mktemp("z") / "requests.jsonl"
    written = write(path, flushes)
    packed = compressed(path)
    assert stored(path) == packed and not path.exists()
    assert list(JsonlReader(path)) == written
    data = packed.read_bytes()
    cut %= len(data) + 1
    packed.write_bytes(data[:cut])
    reader: JsonlReader[dict[str, str]] = JsonlReader(path)
    survived = list(reader)
    assert survived == written[: len(survived)]  # a prefix: nothing lost but the tail
    # Whole frames only: what survived ends where some flush ended.
    ends = [sum(len(b) for b in flushes[: i + 1]) for i in range(len(flushes))]
    assert len(survived) in {0, *ends}
    assert reader.valid_bytes + reader.torn_bytes == cut
    # An append cuts the torn frame off first, and the log reads whole again.
    log = JsonlAppender(path, buffered=True)
    log.write({"a": "after"})
    log.close()
    assert list(JsonlReader(path)) == [*survived, {"a": "after"}]
    assert valid_end(path) == packed.stat().st_size


def test_damage_inside_the_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "outputs.jsonl"
    write(path, [[{"a": "1"}], [{"b": "2"}]])
    packed = compressed(path)
    data = bytearray(packed.read_bytes())
    data[5] ^= 0xFF  # a frame's header, not its end
    packed.write_bytes(bytes(data))
    with pytest.raises(LogFormatError, match=r"outputs\.jsonl.*frame 1"):
        list(JsonlReader(path))
    packed.write_bytes(compress_frame(b'{"a":1}\n{"b":'))  # a frame that ends mid-line
    with pytest.raises(LogFormatError, match="does not end with a whole line"):
        list(JsonlReader(path))


def test_a_log_that_exists_keeps_its_form(tmp_path: Path) -> None:
    plain = tmp_path / "requests.jsonl"
    with JsonlAppender(plain) as log:
        log.write({"a": 1})
    with JsonlAppender(plain, compress=True) as log:  # a resume of a plain run stays plain
        log.write({"a": 2})
    assert not compressed(plain).exists()
    assert [orjson.loads(line) for line in whole_lines(plain)] == [{"a": 1}, {"a": 2}]


def test_compact_is_lossless_and_a_kill_midway_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--model", "oracle", "--run", str(folder), "--no-progress") == 0
    before = {n: (folder / n).read_bytes() for n in ("requests.jsonl", "outputs.jsonl")}
    outputs = final_outputs(folder)
    # A kill after the compressed file is in place but before the plain one is removed:
    # both hold the same lines, and the plain one is read.
    (compressed(folder / "outputs.jsonl")).write_bytes(b"")
    assert final_outputs(folder) == outputs
    done = compact_run(folder)
    assert {c.name for c in done} == {"requests.jsonl", "outputs.jsonl"}
    for name, data in before.items():
        assert not (folder / name).exists()
        assert b"".join(whole_lines(folder / name)) == data
        assert next(c for c in done if c.name == name).after < len(data) / 4
    assert final_outputs(folder) == outputs
    assert compact_run(folder) == []  # again: nothing left to do
    assert cli("resume", str(folder), "--no-progress") == 0  # finished: appends nothing
    assert cli("analyze", str(folder), "--json") == 0


def test_a_compressed_run_resumes_and_analyses_like_a_plain_one(tmp_path: Path) -> None:
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    common = (*SMALL, "--model", "oracle", "--no-progress")
    assert cli("run", *common, "--run", str(plain)) == 0
    assert cli("run", *common, "--run", str(packed), "--compress", "--max-requests", "40") == 1
    assert cli("resume", str(packed), "--no-progress") == 0
    assert not (packed / "requests.jsonl").exists()
    assert final_outputs(packed) == final_outputs(plain)
    assert cli("status", str(packed)) == 0
