"""requests.jsonl (one line per exchange attempt), streamed into numpy arrays."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.loading.columns.row_chunks import FloatChunks, RowChunks, release_freed
from runfolder import JsonlReader, RequestLine, job_records, stored

from .outputs import LogStats
from .request_parts import RequestParts

__all__ = [
    "JobCount",
    "RequestLog",
    "RequestsReader",
    "counts_by_name",
    "job_answers",
    "load_requests",
]


@dataclass(frozen=True, eq=False)
class RequestLog:
    """What the tables use of requests.jsonl: whether each exchange failed, and the rest as
    counts, sums and latency quantiles taken once the log is read (issue 29: at 1000× the
    per-exchange number columns held 250 MB that no table reads one by one).

    Counts by name are (name, count) pairs, most first; sums and quantiles are None when no
    line carried the number (and NaN-free: only finite numbers are summed).
    """

    failed: np.ndarray  # per exchange: the attempt carries an error object
    served_models: tuple[tuple[str, int], ...]  # the model each line reports, with counts
    served_model_names: tuple[str, ...]
    unreported: int  # answered exchanges that report no model
    errors_by_kind: tuple[tuple[str, int], ...]
    retries: int  # attempts after the first (attempt > 1)
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    cost_known: int  # exchanges that carry a cost
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    n_jobs: int
    stats: LogStats
    cache_hits: int = 0  # exchanges answered from the request cache (``"cache": {"hit": true}``)
    cache_saved_usd: float = 0.0  # what those answers cost when they were first paid
    cache_runs: tuple[str, ...] = ()  # the runs that first paid for them

    def __len__(self) -> int:
        return len(self.failed)


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


def counts_by_name(codes: np.ndarray, names: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """(name, count) of each code that occurs (-1: none), most first, ties in code order."""
    tally = np.bincount(codes[codes >= 0], minlength=len(names))
    found = ((n, int(k)) for n, k in zip(names, tally.tolist(), strict=True) if k)
    return tuple(sorted(found, key=lambda t: -t[1]))


def _total(values: np.ndarray) -> int | None:
    known = values[np.isfinite(values)]
    return int(known.sum()) if len(known) else None


class JobCount:
    """How many distinct job ids a log names, exactly, without a string per job: each id is
    kept as the codes of its head and its last part (``affine/f42/int/provided/reversed`` and
    ``r38``: a few thousand heads and a thousand last parts at 1000×, against a million ids),
    once per run of lines of one job."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.heads: dict[str, int] = {}  # codes from 1: 0 is "no slash"
        self.tails: dict[str, int] = {}
        self.keys = array("q")

    def add(self, job: str) -> None:
        """Note one line's job id."""
        if job == self.last:
            return
        self.last = job
        head, slash, tail = job.rpartition("/")
        code = self.heads.setdefault(head, len(self.heads) + 1) if slash else 0
        self.keys.append(code << 32 | self.tails.setdefault(tail, len(self.tails)))

    def __len__(self) -> int:
        return len(np.unique(np.frombuffer(self.keys, np.int64)))


_FLOATS = ("latency_ms", "input_tokens", "output_tokens", "cost_usd")
_INTS = 4  # attempt, failed, error kind code, served model code (no table reads the status)
# Rows gathered in lists before they go to the chunks (``RequestsReader.unstage``): a divisor
# of ``CHUNK_ROWS``, so the chunks' pieces end where row-by-row appends ended them.
STAGED_ROWS = 1 << 10


class RequestsReader:
    """Builds a RequestLog while requests.jsonl streams past (``add`` per line): the numbers
    and codes of each exchange a chunk at a time in compact pieces (``row_chunks``), turned
    into counts, sums and quantiles at the end; no object per exchange."""

    def __init__(self) -> None:
        self.floats = FloatChunks(len(_FLOATS))
        self.ints = RowChunks(_INTS)
        # The last rows, end to end, until ``STAGED_ROWS`` of them go to the chunks at once:
        # a list's extend by a tuple is a copy of pointers, an array's a call per item.
        self.staged_floats: list[float] = []
        self.staged_ints: list[int] = []
        self.staged_limit = STAGED_ROWS * _INTS
        self.kinds: dict[str, int] = {}
        self.models: dict[str, int] = {}
        self.jobs = JobCount()
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
        self.staged_floats.extend(
            (
                _number(record.get("latency_ms")),
                _number(usage.get("input_tokens")),
                _number(usage.get("output_tokens")),
                _number(record.get("cost_usd")),
            )
        )
        staged = self.staged_ints
        staged.extend(
            (
                _int(record.get("attempt")),
                error is not None,
                _code(self.kinds, kind),
                _code(self.models, record.get("model")),
            )
        )
        if len(staged) >= self.staged_limit:
            self.unstage()

    def add_parts(self, parts: RequestParts) -> None:
        """``add`` for a line decoded as RequestParts: the common line (usage an object, no
        error, no cache hit) read from the parts' attributes without a dict or a call per
        field (each value as ``_number``, ``_int`` and ``_code`` take it); any other line
        through ``add`` as its dict."""
        usage = parts.usage
        if parts.error is not None or parts.cache is not None or type(usage) is not dict:
            self.add(parts.fields())  # type: ignore[arg-type]
            return
        job = parts.job
        if job.__class__ is not str or job != self.jobs.last:
            self.jobs.add(job if job.__class__ is str else str(job))
        latency, cost = parts.latency_ms, parts.cost_usd
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        # float(v) of a JSON int or float is what _number gives; any other type goes to it.
        self.staged_floats.extend(
            (
                latency if latency.__class__ is float else _number(latency),
                float(tokens_in) if tokens_in.__class__ is int else _number(tokens_in),
                float(tokens_out) if tokens_out.__class__ is int else _number(tokens_out),
                cost if cost.__class__ is float else _number(cost),
            )
        )
        attempt, model = parts.attempt, parts.model
        models, staged = self.models, self.staged_ints
        staged.extend(
            (
                attempt if attempt.__class__ is int else _int(attempt),
                False,
                -1,  # no error: no kind
                models.setdefault(model, len(models))
                if model.__class__ is str
                else _code(models, model),
            )
        )
        if len(staged) >= self.staged_limit:
            self.unstage()

    def unstage(self) -> None:
        """The staged rows into the chunks, in the order they were read."""
        self.floats.extend(self.staged_floats)
        self.ints.extend(self.staged_ints)
        self.staged_floats.clear()
        self.staged_ints.clear()

    def result(self, stats: LogStats) -> RequestLog:
        """The counts, sums and quantiles (the pieces are freed as each is taken)."""
        self.unstage()
        attempt, failed_codes, kind, model = self.ints.columns()
        failed = failed_codes.astype(bool)
        del failed_codes
        models = tuple(self.models)
        served = counts_by_name(model, models)
        unreported = int(np.count_nonzero((model < 0) & ~failed))
        errors = counts_by_name(kind, tuple(self.kinds))
        retries = int(np.count_nonzero(attempt > 1))
        del attempt, kind, model
        # The float columns one at a time (at 1000×, 55 MB each as float64).
        latency = self.floats.column(0)
        finite = np.isfinite(latency)
        if not finite.all():
            latency = latency[finite]
        del finite
        # The same order statistics, interpolated alike: partitioned in place, not copied.
        p50, p95 = (
            (float(v) for v in np.percentile(latency, [50, 95], overwrite_input=True))
            if len(latency)
            else (None, None)
        )
        del latency
        tokens_in = _total(self.floats.column(1))
        tokens_out = _total(self.floats.column(2))
        cost = self.floats.column(3)
        cost_known = cost[np.isfinite(cost)]
        del cost
        log = RequestLog(
            failed=failed,
            served_models=served,
            served_model_names=models,
            unreported=unreported,
            errors_by_kind=errors,
            retries=retries,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=float(cost_known.sum()) if len(cost_known) else None,
            cost_known=len(cost_known),
            latency_p50_ms=p50,
            latency_p95_ms=p95,
            n_jobs=len(self.jobs),
            stats=stats,
            cache_hits=self.hits,
            cache_saved_usd=self.saved if math.isfinite(self.saved) else 0.0,
            cache_runs=tuple(sorted(self.paid_by)),
        )
        self.jobs = JobCount()
        release_freed()
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
