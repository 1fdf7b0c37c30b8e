"""The outputs pass takes lines that repeat an earlier line but for their job, repeat and seq
without parsing them (``repeated_lines``): its Outputs and interval paths must equal those
of reading every line parsed (``load_outputs``, ``read_paths``), whatever the lines' odd
spellings (escapes, other numbers, repeated keys, missing names)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probability_logs import LogWriter, tree_path, true_child
from test_side_by_side import assert_equal

from analysis.loading.logs.outputs import load_outputs
from analysis.loading.probabilities.interval_paths import read_paths
from analysis.loading.reading import repeated_lines
from analysis.loading.reading.side_by_side import read_outputs
from runfolder import LogFormatError

ORDERS = ("ascending", "reversed")


def _bases() -> list[dict[str, Any]]:
    """An interval output per decoder and order, a failed one and one of another decoder."""
    log = LogWriter(n_cells=100)
    for decoder, k in (("tree2", 2), ("tree10", 10)):
        for order in ORDERS:
            log.tree_output(
                "j", decoder, Decimal(42), tree_path(100, k, true_child(42)), order=order
            )
    direct = dict(log.outputs[0], decoder="direct", value="41")
    direct["trace"] = [{"round": 1, "choice": "41", "value": "41"}]
    failed = dict(log.outputs[1], status="failed", value=None)
    return [*log.outputs, direct, failed]


BASES = _bases()

# How a line may differ from the writer's plain spelling (each must read as it parses).
VARIANTS = (
    "plain",
    "job escaped",  # a job string with an escape: its bytes are not its text
    "job non-ascii",
    "repeat float",  # 3.0: parsed (its row's repeat is int(3.0))
    "repeat big",  # 19 digits: parsed
    "repeat twice",  # a second "repeat" key: the last one counts
    "nested repeat",  # a "repeat" inside extra, before the line's own
    "no case",  # case and family default to the job
    "no family",
)


def _line(base: int, job: str, repeat: int, variant: str, seq: int) -> bytes:
    record = dict(BASES[base])
    record["job"] = job
    record["case"] = f"case{base % 3}"
    record["repeat"] = repeat
    if variant == "job escaped":
        record["job"] = job + '"q'
    elif variant == "job non-ascii":
        record["job"] = job + "é"
    elif variant == "repeat float":
        record["repeat"] = float(repeat)
    elif variant == "repeat big":
        record["repeat"] = 10**18 + repeat
    elif variant == "nested repeat":
        record = {
            "job": job,
            "extra": {"repeat": 99},
            **{k: v for k, v in record.items() if k != "job"},
        }
    elif variant == "no case":
        del record["case"], record["family"]
    elif variant == "no family":
        del record["family"]
    record["run"] = "r"
    line = orjson.dumps(record)
    if variant == "repeat twice":
        line = line[:-1] + b',"repeat":5}'  # the last one counts
    return line[:-1] + b',"seq":' + str(seq).encode() + b"}\n"


_LINES = st.lists(
    st.tuples(
        st.integers(0, len(BASES) - 1),
        st.sampled_from(["a", "b", "c", "d"]),
        st.integers(0, 12),
        st.sampled_from(VARIANTS) | st.just("plain"),
    ),
    min_size=1,
    max_size=40,
)


def _same_as_parsed(folder: Path, rows: list[tuple[int, str, int, str]]) -> None:
    path = folder / "outputs.jsonl"
    path.write_bytes(
        b"".join(
            _line(base, f"{job}/r{rep}", rep, variant, seq)
            for seq, (base, job, rep, variant) in enumerate(rows, 1)
        )
    )
    outputs, paths, reader = read_outputs(path, "r", paths=True)
    assert paths is not None and reader.records == len(rows)
    assert_equal(load_outputs(path), outputs, "outputs")
    assert_equal(read_paths(path, ORDERS), paths.table(ORDERS), "paths")


@settings(max_examples=60, deadline=None)
@given(_LINES)
def test_lines_taken_unparsed_read_as_parsed(
    tmp_path_factory: Any, lines: list[tuple[int, str, int, str]]
) -> None:
    # Each line again with another job and repeat (so every variant is met once learned),
    # then as written (a (job, decoder) written twice: the last wins).
    again = [(base, job + "x", rep + 1, variant) for base, job, rep, variant in lines]
    _same_as_parsed(Path(tmp_path_factory.mktemp("repeats")), [*lines, *again, *lines])


def test_each_odd_spelling_read_as_parsed(tmp_path: Path) -> None:
    """Each variant learned first with the value it shares with its repeats (a second
    "repeat" of 5, a case that is the job), then met with other jobs and repeats."""
    for variant in VARIANTS:
        rows = [(0, "a", 5, variant), (0, "b", 6, variant), (0, "c", 5, variant)]
        _same_as_parsed(tmp_path, rows)


def test_lines_that_repeat_are_not_parsed(tmp_path: Path, monkeypatch: Any) -> None:
    """A log of repeats is read through the cache (this test fails if it is never used)."""
    taken: list[int] = []
    keep = repeated_lines.RepeatedLines.keep

    def counted(self: repeated_lines.RepeatedLines, line: bytes) -> bool:
        parsed = keep(self, line)
        taken.append(not parsed)
        return parsed

    monkeypatch.setattr(repeated_lines.RepeatedLines, "keep", counted)
    path = tmp_path / "outputs.jsonl"
    path.write_bytes(
        b"".join(_line(i % len(BASES), f"j/r{i}", i, "plain", i + 1) for i in range(60))
    )
    outputs, paths, _ = read_outputs(path, "r", paths=True)
    assert sum(taken) == 60 - len(BASES)
    assert_equal(load_outputs(path), outputs, "outputs")
    assert paths is not None
    assert_equal(read_paths(path, ORDERS), paths.table(ORDERS), "paths")


@pytest.mark.parametrize(
    ("old", "new"),
    [(b'"repeat":6,', b'"repeat":06,'), (b'"seq":2}', b'"seq":02}'), (b'"b/r6"', b'"b\x01r6"')],
)
def test_a_repeat_that_is_not_json_is_refused(tmp_path: Path, old: bytes, new: bytes) -> None:
    """A line that repeats a learned one but is not JSON (a leading zero, a control
    character) is parsed, and so refused with its line number."""
    path = tmp_path / "outputs.jsonl"
    second = _line(0, "b/r6", 6, "plain", 2)
    assert old in second
    path.write_bytes(_line(0, "a/r5", 5, "plain", 1) + second.replace(old, new))
    with pytest.raises(LogFormatError, match="line 2"):
        read_outputs(path, "r", paths=True)


def test_lines_that_rarely_repeat_are_all_parsed(tmp_path: Path, monkeypatch: Any) -> None:
    """Distinct lines first (a real model's): the cache is dropped at the first check, and
    the repeats that follow are parsed too, with the same result."""
    monkeypatch.setattr(repeated_lines, "_CHECKED", 4)
    taken: list[bool] = []
    keep = repeated_lines.RepeatedLines.keep
    monkeypatch.setattr(
        repeated_lines.RepeatedLines,
        "keep",
        lambda self, line: taken.append(keep(self, line)) or taken[-1],
    )
    rows = [(i, f"d{i}", i, "plain") for i in range(len(BASES))]
    rows += [(b, job + "x", rep + 1, v) for b, job, rep, v in rows]
    _same_as_parsed(tmp_path, rows)
    assert all(taken)  # every line parsed
