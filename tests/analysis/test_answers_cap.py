"""The answers a Probabilities join keeps are capped (``asked.ANSWERS_KEPT``): on a log where
every answer differs (a real model's) the figures are those of an uncapped join, and the
answers held never pass the cap plus one chunk's, serially or side by side."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from probability_logs import LogWriter, tree_path

from analysis.loading.probabilities import asked
from analysis.loading.probabilities.answer_log import AnswerLog
from analysis.loading.probabilities.answers import AnswersJoin
from analysis.loading.probabilities.asked import AskedChunk, AskedReader
from analysis.loading.probabilities.interval_paths import read_paths
from analysis.loading.reading import side_by_side
from analysis.loading.reading.side_by_side import exchanges_aside, read_exchanges
from analysis.loading.run import load_run

ORDERS = ("ascending", "reversed")


def distinct_answers_run(tmp_path: Path, jobs: int = 12) -> Path:
    """tree10 outputs in both option orders, every step answered with probabilities no
    other answer has, a few answers given twice (a repeat is a duplicate), and one answer
    text shared by two questions far apart in the log."""
    log = LogWriter(n_cells=100)
    n = 0

    def probabilities(depth: int, k: int, j: int) -> dict[str, float]:
        nonlocal n
        n += 1
        rest = round(n * 1e-4, 6)
        return {str(i): (1.0 - rest if i == j else rest / (k - 1)) for i in range(k)}

    for i in range(jobs):
        target = Decimal(7 * i % 100)
        for order in ORDERS:
            path = tree_path(100, 10, lambda depth, a, b, cuts, i=i: (i + depth) % (len(cuts) - 1))
            job = f"{order}-{i}"
            log.tree_output(job, "tree10", target, path, order=order, case=f"c{i}")
            log.answer_path(job, "tree10", path, probabilities, reverse=order == "reversed")
    labels = [str(i) for i in range(10)]
    shared = {"0": 0.5, "1": 0.5}  # the same text early and late: kept, then a chunk's own
    log.answers("ascending-0", 1, {"q9": ("tree10/1", labels, "0", shared)})
    log.answers("ascending-0", 1, {"q9": ("tree10/1", labels, "1", {"1": 0.9})})
    log.answers(f"reversed-{jobs - 1}", 1, {"q9": ("tree10/1", labels, "0", shared)})
    return log.write(tmp_path / "run", orders=list(ORDERS))


def joined(folder: Path, kept: int, rows: int) -> tuple[AnswerLog, list[int], AnswersJoin]:
    """The serial join with ``kept`` answers kept and ``rows`` rows a chunk, and the
    answers held (kept and the chunk's own) as each chunk was handed on."""
    join = AnswersJoin(read_paths(folder / "outputs.jsonl", ORDERS))
    held: list[int] = []

    def sink(chunk: AskedChunk) -> None:
        held.append(len(reader.answers) + len(reader.fresh))
        join.add(chunk)

    reader = AskedReader(sink, job_codes=join.paths.codes["job"], rows=rows, kept=kept)
    read_exchanges(folder / "requests.jsonl", "run", reader, columns=False)
    return join.result(True), held, join


def assert_same_figures(first: AnswerLog, second: AnswerLog) -> None:
    """The same questions, outcomes per question, pairs and counts (outcome ids may differ:
    an answer met again in a later chunk may get an outcome row of its own)."""
    assert first.counts == second.counts
    for name in ("q_unit", "q_depth", "q_first", "pair_first", "pair_second", "pair_depth"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name), err_msg=name)
    for name in ("options", "selected", "true", "holds", "entropy"):
        np.testing.assert_array_equal(first.per_question(name), second.per_question(name), name)
    for name in ("pair_id", "pair_first_right", "pair_second_right", "pair_averaged_right"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name), err_msg=name)


@pytest.mark.parametrize(("kept", "rows"), [(0, 1), (3, 2), (5, 7)])
def test_a_capped_join_gives_the_uncapped_figures(tmp_path: Path, kept: int, rows: int) -> None:
    folder = distinct_answers_run(tmp_path)
    uncapped, _, _ = joined(folder, 10**6, rows)
    capped, held, join = joined(folder, kept, rows)
    assert uncapped.counts.with_probabilities > 40 and uncapped.counts.duplicates >= 1
    assert len(uncapped.pair_id) > 0
    assert_same_figures(uncapped, capped)
    # The answers held: never more than the cap and one chunk's (a row has one answer).
    assert held and max(held) <= kept + rows
    # Outcome keys are remembered only for the kept answers.
    assert all(key[0] < kept for key in join.outcomes.ids)


def test_the_worker_gives_up_past_the_cap_and_the_join_runs_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = distinct_answers_run(tmp_path)
    serial = load_run(folder, probabilities=True)
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_BYTES", 0)
    monkeypatch.setattr(side_by_side, "_cores", lambda: 2)
    monkeypatch.setattr(asked, "ANSWERS_KEPT", 4)
    with exchanges_aside(folder / "requests.jsonl", "run", questions=True) as pending:
        assert pending is not None
        found = pending.result()
    assert found is not None and found[2] is None  # rows given up, exchanges shipped
    assert found[1].records == len((folder / "requests.jsonl").read_bytes().splitlines())
    shutil.rmtree(folder / ".columns", ignore_errors=True)  # read again, not recalled
    side = load_run(folder, probabilities=True)
    assert serial.answers is not None and side.answers is not None
    assert_same_figures(serial.answers, side.answers)
    assert side.requests.stats == serial.requests.stats


def test_a_worker_under_the_cap_ships_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = distinct_answers_run(tmp_path, jobs=2)
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_BYTES", 0)
    monkeypatch.setattr(side_by_side, "_cores", lambda: 2)
    with exchanges_aside(folder / "requests.jsonl", "run", questions=True) as pending:
        assert pending is not None
        found: Any = pending.result()
    assert found is not None and found[2]


def test_answers_kept_from_lines_decoded_whole_hold_only_their_bytes() -> None:
    """A line decoded whole has its answers encoded again (orjson.dumps, which allocates
    ~4 kB per result): the kept ones must not hold those buffers (they took 0.5 GB for
    100,000 answers)."""
    import tracemalloc

    reader = AskedReader(lambda chunk: None, kept=10_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(2_000):
            p = round(0.5 + n * 1e-6, 6)
            reader.line(
                {
                    "job": f"j{n}",
                    "qmap": {"q": "tree2/1"},
                    "request": {"questions": {"q": {"criteria": {"0": "a", "1": "b"}}}},
                    "response": {"answers": {"q": {"choice": "0", "probabilities": {"0": p}}}},
                }
            )
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(reader.answers) == 2_000
    assert held < 2_000 * 1_000  # ~4 kB per answer before the copy
