"""requests.jsonl (one line per exchange attempt), streamed into numpy arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from runfolder import JsonlReader, RequestLine, stored

from .outputs import LogStats

__all__ = ["RequestLog", "job_answers", "load_requests"]


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


def load_requests(path: Path) -> RequestLog:
    """Stream ``requests.jsonl`` into column arrays; a missing file reads as empty."""
    rows: list[tuple[float, float, float, float, float, float, bool, int, int]] = []
    kinds: dict[str, int] = {}
    models: dict[str, int] = {}
    jobs: set[str] = set()
    hits, saved, paid_by = 0, 0.0, set()
    reader = JsonlReader[RequestLine](path)
    if stored(path).is_file():
        for record in reader:
            found = record.get("usage")
            usage = found if isinstance(found, dict) else {}
            error = record.get("error")
            kind: str | None = error.get("kind", "unknown") if isinstance(error, dict) else None
            if error is not None and kind is None:
                kind = "unknown"
            jobs.add(str(record.get("job")))
            cached = record.get("cache")
            if isinstance(cached, dict) and cached.get("hit") is True:
                hits += 1
                saved += _number(cached.get("saved_usd")) if cached.get("saved_usd") else 0.0
                paid_by.add(str(cached.get("from_run")))
            rows.append(
                (
                    _number(record.get("latency_ms")),
                    _number(usage.get("input_tokens")),
                    _number(usage.get("output_tokens")),
                    _number(record.get("cost_usd")),
                    _number(record.get("attempt")),
                    _number(record.get("status")),
                    error is not None,
                    _code(kinds, kind),
                    _code(models, record.get("model")),
                )
            )
    columns = list(zip(*rows, strict=True)) if rows else [()] * 9

    def floats(i: int) -> np.ndarray:
        return np.asarray(columns[i], dtype=np.float64).reshape(-1)

    def ints(i: int) -> np.ndarray:
        return np.asarray(columns[i], dtype=np.int64).reshape(-1)

    return RequestLog(
        latency_ms=floats(0),
        input_tokens=floats(1),
        output_tokens=floats(2),
        cost_usd=floats(3),
        attempt=np.nan_to_num(floats(4), nan=-1).astype(np.int64),
        http_status=np.nan_to_num(floats(5), nan=-1).astype(np.int64),
        failed=np.asarray(columns[6], dtype=bool).reshape(-1),
        error_kind=ints(7),
        error_kind_names=tuple(kinds),
        served_model=ints(8),
        served_model_names=tuple(models),
        n_jobs=len(jobs),
        stats=LogStats(stored(path).is_file(), reader.records, int(reader.torn)),
        cache_hits=hits,
        cache_saved_usd=saved if math.isfinite(saved) else 0.0,
        cache_runs=tuple(sorted(paid_by)),
    )


def job_answers(path: Path, job: str, decoder: str) -> dict[int, dict[str, float]]:
    """Per round, the probabilities returned to ``decoder``'s question in ``job`` (label ->
    probability), from the answered lines of requests.jsonl; empty when none were returned.

    Streams the file and parses only lines that mention the job, so one job of a 1.5 GB
    log costs a scan, not a parse.
    """
    found: dict[int, dict[str, float]] = {}
    if not stored(path).is_file():
        return found
    needle = orjson.dumps(job)
    prefix = decoder + "/"
    # The one reader of the run folder, parsing only lines that mention the job.
    for record in JsonlReader[dict[str, Any]](path, keep=lambda line: needle in line):
        if record.get("job") != job:
            continue
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
