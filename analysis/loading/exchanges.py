"""requests.jsonl (one line per exchange attempt), streamed into numpy arrays."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runfolder import JsonlReader, RequestLine, job_records, stored

from .compact import narrow
from .outputs import LogStats

__all__ = ["RequestLog", "RequestsReader", "job_answers", "load_requests"]


@dataclass(frozen=True, eq=False)
class RequestLog:
    """Column arrays of requests.jsonl. Unknown numbers are NaN; unknown codes are -1."""

    latency_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cost_usd: np.ndarray
    attempt: np.ndarray
    http_status: np.ndarray
    failed: np.ndarray  # the attempt carries an error object
    error_kind: np.ndarray
    error_kind_names: tuple[str, ...]
    served_model: np.ndarray
    served_model_names: tuple[str, ...]
    n_jobs: int
    stats: LogStats
    cache_hits: int = 0  # exchanges answered from the request cache (``"cache": {"hit": true}``)
    cache_saved_usd: float = 0.0  # what those answers cost when they were first paid
    cache_runs: tuple[str, ...] = ()  # the runs that first paid for them

    def __len__(self) -> int:
        return len(self.latency_ms)


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _code(table: dict[str, int], name: Any) -> int:
    if not isinstance(name, str):
        return -1
    return table.setdefault(name, len(table))


def _int(value: Any) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return int(value)
    return -1


_FLOATS = ("latency_ms", "input_tokens", "output_tokens", "cost_usd")
_INTS = 5  # attempt, status, failed, error kind code, served model code


class RequestsReader:
    """Builds the columns of a RequestLog while requests.jsonl streams past (``add`` per
    line): one float64 array per number (kept as they are, no copy) and one int32 stride
    array for the codes (narrowed at the end), no object per exchange."""

    def __init__(self) -> None:
        self.floats = {name: array("d") for name in _FLOATS}
        self.ints = array("i")
        self.kinds: dict[str, int] = {}
        self.models: dict[str, int] = {}
        self.jobs: set[str] = set()
        self.hits, self.saved = 0, 0.0
        self.paid_by: set[str] = set()

    def add(self, record: RequestLine) -> None:
        """Read one line: its numbers, error kind, served model and cache hit."""
        found = record.get("usage")
        usage = found if isinstance(found, dict) else {}
        error = record.get("error")
        kind: str | None = error.get("kind", "unknown") if isinstance(error, dict) else None
        if error is not None and kind is None:
            kind = "unknown"
        job = record.get("job")
        self.jobs.add(job if isinstance(job, str) else str(job))
        cached = record.get("cache")
        if isinstance(cached, dict) and cached.get("hit") is True:
            self.hits += 1
            self.saved += _number(cached.get("saved_usd")) if cached.get("saved_usd") else 0.0
            self.paid_by.add(str(cached.get("from_run")))
        floats = self.floats
        floats["latency_ms"].append(_number(record.get("latency_ms")))
        floats["input_tokens"].append(_number(usage.get("input_tokens")))
        floats["output_tokens"].append(_number(usage.get("output_tokens")))
        floats["cost_usd"].append(_number(record.get("cost_usd")))
        codes = (
            _int(record.get("attempt")),
            _int(record.get("status")),
            error is not None,
            _code(self.kinds, kind),
            _code(self.models, record.get("model")),
        )
        size = len(self.ints)
        try:
            self.ints.extend(codes)
        except OverflowError:  # an attempt or status past int32: widen once
            self.ints = array("q", self.ints[:size])  # extend appends item by item
            self.ints.extend(codes)

    def result(self, stats: LogStats) -> RequestLog:
        """The columns as numpy arrays (the float columns are views of the typed arrays,
        which never grow again)."""
        ints = np.frombuffer(self.ints, np.dtype(f"i{self.ints.itemsize}")).reshape(-1, _INTS)
        floats = {name: np.frombuffer(column, np.float64) for name, column in self.floats.items()}
        log = RequestLog(
            latency_ms=floats["latency_ms"],
            input_tokens=floats["input_tokens"],
            output_tokens=floats["output_tokens"],
            cost_usd=floats["cost_usd"],
            attempt=narrow(ints[:, 0]),
            http_status=narrow(ints[:, 1]),
            failed=ints[:, 2].astype(bool),
            error_kind=narrow(ints[:, 3]),
            error_kind_names=tuple(self.kinds),
            served_model=narrow(ints[:, 4]),
            served_model_names=tuple(self.models),
            n_jobs=len(self.jobs),
            stats=stats,
            cache_hits=self.hits,
            cache_saved_usd=self.saved if math.isfinite(self.saved) else 0.0,
            cache_runs=tuple(sorted(self.paid_by)),
        )
        del ints
        self.ints, self.jobs = array("i"), set()
        return log


def load_requests(path: Path) -> RequestLog:
    """Stream ``requests.jsonl`` into column arrays; a missing file reads as empty."""
    reader = JsonlReader[RequestLine](path)
    requests = RequestsReader()
    if stored(path).is_file():
        for record in reader:
            requests.add(record)
    return requests.result(LogStats(stored(path).is_file(), reader.records, int(reader.torn)))


def job_answers(path: Path, job: str, decoder: str) -> dict[int, dict[str, float]]:
    """Per round, the probabilities returned to ``decoder``'s question in ``job`` (label ->
    probability), from the answered lines of requests.jsonl; empty when none were returned.

    Parses only the lines that mention the job (``job_records``), so one job of a
    1.5 GB log costs a scan, not a parse.
    """
    found: dict[int, dict[str, float]] = {}
    prefix = decoder + "/"
    for record in job_records(path, job):
        qmap, response = record.get("qmap"), record.get("response")
        answers = response.get("answers") if isinstance(response, dict) else None
        if not isinstance(qmap, dict) or not isinstance(answers, dict):
            continue
        for qid, meaning in qmap.items():
            answer = answers.get(qid)
            if not str(meaning).startswith(prefix) or not isinstance(answer, dict):
                continue
            probs = answer.get("probabilities")
            if isinstance(probs, dict) and isinstance(record.get("round"), int):
                found[record["round"]] = {
                    str(k): float(v)
                    for k, v in probs.items()
                    if isinstance(v, int | float) and not isinstance(v, bool)
                }
    return found
