"""The worker's question rows sent chunk by chunk (``side_by_side``) and joined here as they
arrive: each chunk as a serial reader makes it, and a read that gives up, refuses a line or
meets a torn tail after chunks were joined gives what the serial read gives."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from probability_logs import LogWriter, tree_path, true_child
from test_answers_cap import assert_same_figures, distinct_answers_run
from test_side_by_side import assert_same, work_aside

from analysis.loading.probabilities import asked
from analysis.loading.probabilities.asked import AskedChunk, AskedReader
from analysis.loading.reading import side_by_side
from analysis.loading.reading.side_by_side import exchanges_aside, read_exchanges
from analysis.loading.run import load_run
from runfolder import RunFolderError


def answered_run(tmp_path: Path) -> Path:
    """Interval outputs of several jobs, each step answered (some twice), so the question
    tables grow from one chunk to the next."""
    log = LogWriter(n_cells=100)
    labels = [str(i) for i in range(10)]
    for j in range(4):
        job = f"j{j}"
        log.tree_output(job, "tree10", Decimal(40 + j), tree_path(100, 10, true_child(40 + j)))
        for round_ in (1, 2, 1):
            said = {str(4 + j % 2): 0.8, str(j): 0.2}
            log.answers(job, round_, {"q1": (f"tree10/{round_}", labels, "4", said)})
    return log.write(tmp_path / "run")


def serial_chunks(path: Path, rows: int) -> list[AskedChunk]:
    chunks: list[AskedChunk] = []
    read_exchanges(path, "run", AskedReader(chunks.append, rows=rows), columns=False)
    return chunks


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_each_chunk_arrives_as_the_serial_reader_made_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    path = answered_run(tmp_path) / "requests.jsonl"
    work_aside(monkeypatch)
    monkeypatch.setattr(side_by_side, "ROWS_SENT", rows)
    with exchanges_aside(path, "run", questions=True) as pending:
        assert pending is not None
        sent = list(pending.rows())
        found = pending.result()
    assert found is not None and found[2] == []  # every chunk taken by ``rows``
    made = serial_chunks(path, rows)
    assert len(sent) == len(made) > 2
    for one, other in zip(made, sent, strict=True):
        for name in ("line", "job", "target", "answer", "question"):
            np.testing.assert_array_equal(getattr(other, name), getattr(one, name), name)
        # The tables grown here as the worker's grew (the serial ones are its final ones).
        for name in ("jobs", "targets", "answers", "questions", "question_sets"):
            assert getattr(other, name) == getattr(one, name), name
        assert (other.fresh, other.fresh_from) == (one.fresh, one.fresh_from)


def test_rows_joined_then_given_up_give_the_serial_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = distinct_answers_run(tmp_path)
    serial = load_run(folder, probabilities=True)
    work_aside(monkeypatch)
    # Chunks of one row: several are sent, and joined, before the cap is passed.
    monkeypatch.setattr(side_by_side, "ROWS_SENT", 1)
    monkeypatch.setattr(asked, "ANSWERS_KEPT", 20)
    with exchanges_aside(folder / "requests.jsonl", "run", questions=True) as pending:
        assert pending is not None
        assert len(list(pending.rows())) > 1
        found = pending.result()
    assert found is not None and found[2] is None  # given up once past the cap
    shutil.rmtree(folder / ".columns", ignore_errors=True)  # read again, not recalled
    side = load_run(folder, probabilities=True)
    assert serial.answers is not None and side.answers is not None
    assert_same_figures(serial.answers, side.answers)
    assert side.requests.stats == serial.requests.stats


@pytest.mark.parametrize("at", ["first", "last"])
def test_a_line_refused_after_rows_were_sent_is_refused_as_by_a_serial_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    folder = answered_run(tmp_path)
    path = folder / "requests.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    bad = b'{"job": "j0", "run": "elsewhere", "seq": 1}\n'
    path.write_bytes(b"".join([bad, *lines] if at == "first" else [*lines, bad]))
    with pytest.raises(RunFolderError) as serial:
        load_run(folder, probabilities=True)
    work_aside(monkeypatch)
    monkeypatch.setattr(side_by_side, "ROWS_SENT", 1)
    with pytest.raises(RunFolderError) as side:
        load_run(folder, probabilities=True)
    assert str(side.value) == str(serial.value)
    assert "elsewhere" in str(side.value)


def test_a_torn_last_line_reads_as_by_a_serial_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = answered_run(tmp_path)
    path = folder / "requests.jsonl"
    last = path.read_bytes().splitlines(keepends=True)[-1]
    path.write_bytes(path.read_bytes() + last[: len(last) // 2])  # a line cut mid-write
    serial = load_run(folder, probabilities=True)
    assert serial.requests.stats.torn_last_line
    work_aside(monkeypatch)
    monkeypatch.setattr(side_by_side, "ROWS_SENT", 1)
    shutil.rmtree(folder / ".columns", ignore_errors=True)  # read again, not recalled
    side = load_run(folder, probabilities=True)
    assert_same(serial, side)
