"""The one place a run's records are written and counted: attempts, outputs, running totals.

The scheduler hands every ``Attempt`` here, and every finished (or failed) job's outputs.
Methods are synchronous: in a single-threaded event loop a synchronous write cannot
interleave with another task's.

When lines reach the OS (docs/reliability.md, "Resume never pays twice"): a finished job's
exchanges, then its outputs, at once, so what is on disk is always records 1..N; exchanges in
between once per event-loop pass for a paid or slow model (measured: a write per line cost
~6% of the client's CPU at concurrency 256), in 64 KB blocks for an in-process sim or oracle,
free to ask again. Every line ends with the next number of the run's one counter, ``seq``,
spent only once its line is written (a refused record leaves no hole). An output an earlier
session recorded ``ok`` is not written again (``Job.recorded_ok``).

A write the OS refuses stops the run at once (``WriteGuard``): the first failure becomes
``guard.failure``, ``on_failure`` stops the session, and nothing more is written, not even
what is buffered, so the logs stay a prefix of the records that ``resume`` continues from.
The flush at the end of a pass is a callback whose error asyncio would only log, so it
reports through ``failure`` too.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, cast

from orjson import Fragment

from harness.calling import Attempt
from harness.errors import WriteFailed
from harness.progress import Counters, Progress
from harness.running.jobs import Job
from runfolder import (
    OUTPUTS,
    REQUESTS,
    ErrorKind,
    JsonlAppender,
    OutputLine,
    RequestLine,
    write_totals,
)

# What serve-sim names itself: the simulator, or the exact oracle (serve-sim --model oracle).
SIMULATOR_MODELS = frozenset({"sim"})
ORACLE_MODELS = frozenset({"oracle"})


class LineSink(Protocol):
    """Where one log's records go: a ``JsonlAppender``, or a worker's pipe to the process
    that writes the run folder (``harness.spreading.pool``)."""

    @property
    def position(self) -> int:
        """The log's length so far (0 when the log is written elsewhere)."""
        ...

    def write(self, record: Mapping[str, Any]) -> None:
        """Take one record (numbered: ``seq`` is its last key)."""
        ...

    def flush(self) -> None:
        """Hand what was taken to the OS (or to the writer)."""
        ...

    def close(self) -> None:
        """Hand over the rest, for good."""
        ...


class Recorder:
    """Owns a run folder's two append-only logs and the run's ``Counters``."""

    def __init__(
        self,
        folder: Path,
        run_id: str,
        counters: Counters,
        progress: Progress,
        *,
        simulated: bool,
        oracle: bool = False,
        requests_end: int = 0,
        outputs_end: int = 0,
        next_seq: int = 1,
        sinks: tuple[LineSink, LineSink] | None = None,
    ) -> None:
        """``*_end`` are the logs' valid lengths (a torn tail beyond them is cut first);
        ``next_seq`` is the number of the next record (one more than the logs' highest).
        ``sinks`` (requests, outputs) replace the folder's logs (a worker process's)."""
        self.folder = folder
        self.run_id = run_id
        self.seq = next_seq
        self.counters = counters
        self.progress = progress
        self.simulated = simulated
        self.oracle = oracle
        self.writes_folder = sinks is None  # else the folder's writer is another process
        self._requests, self._outputs = sinks or (
            JsonlAppender(folder / REQUESTS, requests_end, buffered=True),
            JsonlAppender(folder / OUTPUTS, outputs_end, buffered=True),
        )
        # See the module docstring: an in-process sim's or oracle's exchanges go out in
        # blocks; any other model's at the end of each event-loop pass (or, off asyncio, at
        # once).
        free = simulated or oracle
        self._loop: asyncio.AbstractEventLoop | None = None
        if not free:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # not on asyncio (trio): hand each line over at once
                self._loop = None
        self._per_line = not free and self._loop is None
        self._flush_pending = False
        self.on_failure: Callable[[], None] = lambda: None  # stops the run (the session's)
        self.guard = WriteGuard(folder, lambda: self.on_failure())

    def _flush_soon(self) -> None:
        """The flush at the end of an event-loop pass: a failure stops the run through
        ``on_failure`` (raised here, asyncio would only log it)."""
        with suppress(WriteFailed):
            self.flush()

    def flush(self) -> None:
        """Hand both logs' lines to the OS, the exchanges first."""
        self._flush_pending = False
        self.guard.flush((self._requests, REQUESTS), (self._outputs, OUTPUTS))

    def attempt(
        self, job: Job, body: Mapping[str, Any], qmap: dict[str, str], attempt: Attempt
    ) -> None:
        """Write one attempt of ``job``'s current round and count it."""
        kind = attempt.kind
        usage = attempt.usage
        cost = attempt.cost_usd
        # "job" comes first: resume filters raw lines on that prefix without parsing them.
        line: RequestLine = {
            "job": job.id,
            "round": job.round + 1,
            "t": round(attempt.t, 3),
            "request": body if attempt.request_json is None else _verbatim(attempt.request_json),
            "qmap": qmap,
            "attempt": attempt.number,
            "latency_ms": round(attempt.latency_ms, 3),
            "status": attempt.status,
            "response": _as_received(attempt.response, attempt.response_json),
            "error": None if kind is None else {"kind": kind, "message": attempt.message or ""},
            "model": attempt.model,
            "usage": usage,
            "cost_usd": cost,
            "request_id": attempt.request_id,
            "run": self.run_id,
            "seq": self.seq,  # last: readers find it at the end of the line without parsing
        }
        if attempt.sent is not None:
            line = _with(line, "request", "sent", attempt.sent)
        if attempt.cached is not None:
            line = _with(line, "run", "cache", dict(attempt.cached))
        with self.guard.writing(REQUESTS):
            self._requests.write(line)
        self.seq += 1
        # Hand the exchange to the OS now, at the end of this event-loop pass, or later.
        if self._per_line:
            self.guard.flush((self._requests, REQUESTS))
        elif self._loop is not None and not self._flush_pending:
            self._flush_pending = True
            self._loop.call_soon(self._flush_soon)
        answered = attempt.answered  # every question answered, or all but refused ones
        if answered and attempt.model:
            job.served.add(attempt.model)
        self.counters.count(answered, kind, attempt.model, usage, cost)
        self.progress.update(self.counters)

    def finished(self, job: Job, failed: ErrorKind | None) -> None:
        """Write ``job``'s outputs: ok, or failed by an attempt of kind ``failed``."""
        # A System One server may itself be the simulator or the oracle (numericjev
        # serve-sim): trust the served model's name as well as the backend's own label.
        # Exact labels are not the simulator's: an oracle's outputs say "oracle", not
        # "simulated".
        oracle = self.oracle or bool(job.served & ORACLE_MODELS)
        simulated = not oracle and (self.simulated or bool(job.served & SIMULATOR_MODELS))
        # The exchanges before these outputs reach the OS first, then the outputs: what is on
        # disk stays a prefix of the numbered records whatever a kill interrupts.
        self.guard.flush((self._requests, REQUESTS))
        run_id = self.run_id
        for record in job.outputs(simulated, error=failed):
            if record["decoder"] in job.recorded_ok:
                continue  # its ok line is in the log already (a failed job resumed)
            line = cast(OutputLine, record)  # a fresh dict: stamped in place, not copied
            if oracle:
                line["oracle"] = True
            line["run"] = run_id
            line["seq"] = self.seq
            with self.guard.writing(OUTPUTS):
                self._outputs.write(line)
            self.seq += 1
        # Counted before the outputs are handed over: a worker's block carries its counters
        # as they are when sent, so the job is counted done in the same message that records
        # its outputs (one event: a lost Ray node cannot split them).
        c = self.counters
        if failed is None:
            c.jobs_done += 1
        else:
            c.jobs_failed += 1
        c.rounds = max(c.rounds, job.round)
        self.guard.flush((self._outputs, OUTPUTS))
        self.progress.update(c)

    def save_totals(self) -> None:
        """Write ``totals.json`` from the counters, for ``requests.jsonl`` as long as it is
        now (``WriteGuard.save_totals``)."""
        self.guard.save_totals(self.run_id, self.counters, self._requests.position)

    def close(self) -> None:
        """Flush both logs to disk (a refused write becomes ``failure``); after a failed
        write, drop what is still buffered instead."""
        self.guard.close(((self._requests, REQUESTS), (self._outputs, OUTPUTS)))


class WriteGuard:
    """The one rule for a log write the OS refuses (the module docstring), shared by this
    recorder and the one writer of a run in processes or on Ray (``pool.parent.Writer``)."""

    def __init__(self, folder: Path, on_failure: Callable[[], None] = lambda: None) -> None:
        self.folder = folder
        self.on_failure = on_failure
        self.failure: WriteFailed | None = None

    @contextmanager
    def writing(self, name: str) -> Iterator[None]:
        """Around one write to log ``name``: an ``OSError`` becomes the run's ``WriteFailed``
        (raised again for every write after it)."""
        if self.failure is not None:
            raise self.failure
        try:
            yield
        except OSError as exc:
            if self.failure is None:
                full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
                self.failure = WriteFailed(
                    f"cannot write {self.folder / name}: {exc.strerror or exc} "
                    f"(errno {exc.errno}); {'free space' if full else 'fix that'}, then: "
                    f"numericjev resume {self.folder}"
                )
                self.on_failure()
            raise self.failure from exc

    def flush(self, *logs: tuple[LineSink, str]) -> None:
        """Hand each (sink, name)'s lines to the OS in turn, or raise the run's ``WriteFailed``."""
        for sink, name in logs:
            with self.writing(name):
                sink.flush()

    def close(self, logs: Iterable[tuple[LineSink, str]]) -> None:
        """Close each (sink, name) to disk; after a failed write (before or now), drop what
        a log still buffers instead, so nothing reaches the disk out of order."""
        for sink, name in logs:
            if self.failure is None:
                with suppress(WriteFailed), self.writing(name):
                    sink.close()
            if self.failure is not None and isinstance(sink, JsonlAppender):
                sink.abandon()

    def save_totals(self, run_id: str, c: Counters, requests_end: int) -> None:
        """Write ``totals.json`` (what ``numericjev list`` shows) for a ``requests.jsonl`` of
        ``requests_end`` bytes: a summary of the log, never the record, so not after a refused
        write (the counters hold lines never written), and a disk that refuses it loses
        nothing."""
        if self.failure is None:
            with suppress(OSError):
                write_totals(
                    self.folder,
                    {
                        "run": run_id,
                        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
                        "requests_end": requests_end,
                        "requests": c.requests,
                        "errors": c.errors,
                        "input_tokens": c.input_tokens,
                        "output_tokens": c.output_tokens,
                        "cost_usd": c.cost_usd,
                        "cost_known": c.cost_known,
                    },
                )


def _as_received(response: Any, received: bytes | None) -> Any:
    """``response`` for the log: the bytes it was parsed from, as they are, when they fit on
    one line (what a server sends is valid JSON, or it would not have parsed), else the
    parsed object, serialised again."""
    if received is None:
        return response
    received = received.strip()  # JSON allows whitespace around the value; a line does not
    if b"\n" in received or b"\r" in received:  # pretty-printed: a JSONL line must be one
        return response
    return _verbatim(received)


def _verbatim(data: bytes) -> Any:
    """JSON bytes that ``dumps_line`` writes into the line as they are (not parsed again)."""
    return Fragment(data)


def _with(line: RequestLine, after: str, key: str, value: Any) -> RequestLine:
    """``line`` with ``key`` right after the field ``after`` (field order is the order on
    disk: ``sent`` after ``request``; the request cache's mark after ``run``, so that ``seq``
    stays last)."""
    out: dict[str, Any] = {}
    for name, field_value in line.items():
        out[name] = field_value
        if name == after:
            out[key] = value
    return cast(RequestLine, out)
