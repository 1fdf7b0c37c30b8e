"""requests.jsonl read into only its used parts (msgspec) gives what reading whole lines does:
the run's answers and exchange columns, odd lines included (hand-made logs)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import orjson
import pytest
from probability_logs import LogWriter, tree_path, true_child

from analysis.loading.logs.exchanges import load_requests
from analysis.loading.logs.request_parts import RequestParts, decode_parts
from analysis.loading.probabilities.answers import load_answers
from analysis.loading.run import load_run


def mixed_run(tmp_path: Path) -> Path:
    """Answers of every kind, repeated answers among them, and lines of odd shapes."""
    log = LogWriter(n_cells=100)
    for job, pick in (("j", true_child(42)), ("k", lambda depth, a, b, cuts: 0)):
        log.tree_output(job, "tree10", Decimal(42), tree_path(100, 10, pick))
    labels = [str(i) for i in range(10)]
    reversed_labels = labels[::-1]
    log.answers("j", 1, {"q1": ("tree10/1", labels, "9", {"9": 1.0})})  # not the trace's
    for _ in range(2):  # the same bytes twice: the second is a repeat of the step
        log.answers("j", 1, {"q1": ("tree10/1", labels, "4", {"4": 0.9, "5": 0.1})})
    log.answers("j", 2, {"q1": ("tree10/2", labels, "2", {"2": "x", "3": None, "1": -1})})
    log.answers("k", 1, {"q1": ("tree10/1", reversed_labels, "0", {"0": 0.5, "4": 0.3})})
    log.answers("k", 2, {"q1": ("tree10/2", labels, "0", None)})
    log.answers("k", 3, {"q1": ("tree10/3", labels[:3], "0", {"0": 1.0})})  # wrong k
    log.answers("k", 1, {"q1": ("tree10/1", labels, "0", {"0": 1.0})}, error={"kind": "x"})
    log.requests[-1]["cache"] = {"hit": True, "saved_usd": 0.5, "from_run": "r0"}
    log.requests[-1]["response"] = log.requests[4]["response"]  # an error's answers: unused
    odd = [dict(log.requests[2]) for _ in range(3)]
    odd[0]["request"] = ["not", "an", "object"]
    odd[1]["response"] = {"answers": [1, 2]}
    odd[2]["usage"], odd[2]["latency_ms"], odd[2]["attempt"] = {"input_tokens": 3}, True, 2.5
    log.requests.extend(odd)
    return log.write(tmp_path / "run")


def test_the_parts_read_equal_the_whole_lines_read(tmp_path: Path) -> None:
    folder = mixed_run(tmp_path)
    whole = load_answers(folder)  # every line decoded as a dict
    assert whole.counts.answered >= 4 and whole.counts.duplicates == 2  # one more: odd[2]
    parts = load_run(folder, probabilities=True).answers
    assert parts is not None and parts.counts == whole.counts
    for name, value in vars(whole).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(parts, name), value, err_msg=name)
    requests = load_run(folder).requests
    expected = load_requests(folder / "requests.jsonl")
    for name, value in vars(expected).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(requests, name), value, err_msg=name)
    assert requests.cache_hits == expected.cache_hits == 1


@pytest.mark.parametrize(
    "line",
    [b"[1, 2]", b'{"request": [1]}', b'{"response": {"answers": 3}}', b"{not json}"],
)
def test_a_line_of_another_shape_is_left_to_the_whole_decoder(line: bytes) -> None:
    assert decode_parts(line) is None


def test_the_fields_are_the_lines_own() -> None:
    record = {"job": "j", "run": "r", "usage": {"input_tokens": 3}, "latency_ms": 2, "seq": 5}
    parts = decode_parts(orjson.dumps(record))
    assert isinstance(parts, RequestParts)
    fields = parts.fields()
    assert {k: fields[k] for k in record} == record
    legacy = decode_parts(b'{"job": "j"}')
    assert legacy is not None and "seq" not in legacy.fields()
