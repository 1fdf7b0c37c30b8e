"""requests.jsonl's exchange columns read in a second process (side by side with the outputs
pass) give what the serial read gives: the same columns, answers and refusals."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from probability_logs import LogWriter, tree_path, true_child

from analysis.loading.reading import both_logs, side_by_side
from analysis.loading.reading.side_by_side import exchanges_aside, read_exchanges
from analysis.loading.run import Run, load_run
from runfolder import RunFolderError


def small_run(tmp_path: Path) -> Path:
    """Interval outputs and their answers, a repeated answer and a line of an odd shape."""
    log = LogWriter(n_cells=100)
    for job, pick in (("j", true_child(42)), ("k", lambda depth, a, b, cuts: 0)):
        log.tree_output(job, "tree10", Decimal(42), tree_path(100, 10, pick))
    labels = [str(i) for i in range(10)]
    for _ in range(2):
        log.answers("j", 1, {"q1": ("tree10/1", labels, "4", {"4": 0.9, "5": 0.1})})
    log.answers("k", 1, {"q1": ("tree10/1", labels, "0", {"0": 0.5, "4": 0.3})})
    log.answers("k", 2, {"q1": ("tree10/2", labels, "0", None)}, error={"kind": "x"})
    odd = dict(log.requests[0])
    odd["request"] = ["not", "an", "object"]
    log.requests.append(odd)
    return log.write(tmp_path / "run")


def work_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker used from now on, whatever the log's size and the machine's cores."""
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_BYTES", 0)
    monkeypatch.setattr(side_by_side, "_cores", lambda: 2)


def assert_equal(first: Any, second: Any, name: str) -> None:
    """Equal field by field, arrays element by element (NaN equal to NaN)."""
    if isinstance(first, np.ndarray):
        np.testing.assert_array_equal(second, first, err_msg=name)
    elif isinstance(first, dict):
        assert isinstance(second, dict) and first.keys() == second.keys(), name
        for key, value in first.items():
            assert_equal(value, second[key], f"{name}.{key}")
    elif hasattr(first, "__dict__"):
        assert type(second) is type(first), name
        for key, value in vars(first).items():
            assert_equal(value, getattr(second, key), f"{name}.{key}")
    else:
        assert first == second, name


def assert_same(serial: Run, side: Run) -> None:
    for name in ("outputs", "requests", "answers"):
        assert_equal(getattr(serial, name), getattr(side, name), name)


def test_the_worker_reads_what_this_process_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work_aside(monkeypatch)
    path = small_run(tmp_path) / "requests.jsonl"
    with exchanges_aside(path, "run") as pending:
        assert pending is not None
        found = pending.result()
    assert found is not None
    here, log = read_exchanges(path, "run")
    assert_equal(here, found[0], "requests")
    assert found[1].records == log.records == 5


@pytest.mark.parametrize("probabilities", [True, False])
def test_side_by_side_equals_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, probabilities: bool
) -> None:
    folder = small_run(tmp_path)
    serial = load_run(folder, probabilities=probabilities)
    work_aside(monkeypatch)
    shutil.rmtree(folder / ".columns", ignore_errors=True)  # read again, not recalled
    side = load_run(folder, probabilities=probabilities)
    assert_same(serial, side)
    assert side.requests.stats.records == 5


@pytest.mark.parametrize(
    ("log", "line", "says"),
    [
        ("requests.jsonl", b'{"job": "j", "run": "elsewhere", "seq": 1}', "elsewhere"),
        # Refused by the outputs' columns, not by the interval paths.
        ("outputs.jsonl", b'"status": "lost"', "status must be"),
        ("outputs.jsonl", b'{"job": "j", "run": "elsewhere", "seq": 1}', "elsewhere"),
    ],
)
def test_a_line_refused_side_by_side_is_refused_as_by_a_serial_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str, line: bytes, says: str
) -> None:
    folder = small_run(tmp_path)
    path = folder / log
    if line.startswith(b'"status"'):  # the first output again, with a status none reads
        first = orjson.loads(path.read_bytes().splitlines()[0])
        line = orjson.dumps(first | orjson.loads(b"{" + line + b"}"))
    path.write_bytes(path.read_bytes() + line + b"\n")
    with pytest.raises(RunFolderError) as serial:
        load_run(folder, probabilities=True)
    work_aside(monkeypatch)
    with pytest.raises(RunFolderError) as side:
        load_run(folder, probabilities=True)
    assert str(side.value) == str(serial.value)
    assert says in str(side.value)


def test_a_line_the_worker_refuses_leaves_it_nothing_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = small_run(tmp_path) / "requests.jsonl"
    path.write_bytes(path.read_bytes() + b'{"job": "j", "run": "elsewhere", "seq": 1}\n')
    work_aside(monkeypatch)
    with exchanges_aside(path, "run") as pending:
        assert pending is not None and pending.result() is None


def test_no_worker_for_a_log_outside_the_sizes_it_pays_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = small_run(tmp_path) / "requests.jsonl"
    work_aside(monkeypatch)
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_MAX_BYTES", path.stat().st_size - 1)
    with exchanges_aside(path, "run") as pending:
        assert pending is None  # too large: the memory of two processes at once
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_MAX_BYTES", path.stat().st_size)
    with exchanges_aside(path, "run") as pending:
        assert pending is not None


def test_a_large_run_read_apart_gives_what_the_serial_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the side-by-side cap, a digested run's answers are joined and dropped before
    the outputs' columns are read: the same outputs, exchanges and answers."""
    folder = small_run(tmp_path)
    serial = load_run(folder, probabilities=True)
    shutil.rmtree(folder / ".columns", ignore_errors=True)
    monkeypatch.setattr(both_logs, "SIDE_BY_SIDE_MAX_BYTES", 0)
    passes: list[str] = []
    for name in ("read_paths_checked", "read_outputs"):
        original = getattr(both_logs, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            passes.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(both_logs, name, spy)
    digested: list[Any] = []
    apart = load_run(folder, probabilities=True, digest=lambda a, m: digested.append(a))
    assert passes == ["read_paths_checked", "read_outputs"]  # the paths first, alone
    assert apart.answers is None and len(digested) == 1
    assert_equal(serial.answers, digested[0], "answers")
    for name in ("outputs", "requests"):
        assert_equal(getattr(serial, name), getattr(apart, name), name)


@pytest.mark.parametrize(
    ("log", "fields"),
    [("requests.jsonl", {"run": "elsewhere"}), ("outputs.jsonl", {"status": "lost"})],
)
def test_a_line_refused_apart_is_refused_as_by_a_serial_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str, fields: dict[str, str]
) -> None:
    folder = small_run(tmp_path)
    path = folder / log
    first = orjson.loads(path.read_bytes().splitlines()[0])
    path.write_bytes(path.read_bytes() + orjson.dumps(first | fields) + b"\n")
    with pytest.raises(RunFolderError) as serial:
        load_run(folder, probabilities=True)
    monkeypatch.setattr(both_logs, "SIDE_BY_SIDE_MAX_BYTES", 0)
    with pytest.raises(RunFolderError) as apart:
        load_run(folder, probabilities=True, digest=lambda a, m: None)
    assert str(apart.value) == str(serial.value)
