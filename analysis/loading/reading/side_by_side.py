"""The two logs read side by side: a second process reads columns while this one reads the rest.

A first read of a large run is parse-bound and single-threaded. On a machine with two or
more cores, a second process reads what needs nothing from the other log: requests.jsonl's
exchange columns and run-id check, and for the Probabilities section each interval question
reduced to ints (``asked``: which output and round, which answer and question). This process
reads outputs.jsonl meanwhile (the outputs' columns and their interval paths), then joins
the worker's question rows with those paths in NumPy (``answers.AnswersJoin``). (The worker reading the outputs' columns too
was tried: it then took 21 s against this process's 10 s at 100×, two processes decoding at
once each running ~35% slower, and the wall did not improve.)

The worker writes each chunk of question rows to a spool file as soon as it has it (so it
never waits for this process), and this process joins them once its outputs pass ends, while
the worker still reads: at 100× this process used to wait ~4-7 s for the worker, then join
every chunk (~1.3 s). Each chunk carries only what its tables (``asked.AskedChunk``) gained
since the one before; this process grows its own copies, as the serial read's grow.

The worker ends with what it read and the readers that counted the records (for
``runfolder.check_sequence``), or nothing when it refused a line; a line refused on either
side sends the read back to the serial path, which refuses it with the message it always gave.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from analysis.loading.logs.exchanges import RequestLog, RequestsReader
from analysis.loading.logs.outputs import LogStats, Outputs, OutputsReader
from analysis.loading.logs.request_parts import RequestParts, decode_parts
from analysis.loading.probabilities import asked as asked_rows
from analysis.loading.probabilities.asked import AskedChunk, AskedReader
from analysis.loading.probabilities.interval_paths import PathsReader
from runfolder import JsonlReader, OutputLine, RequestLine, RunFolderError, stored

from .repeated_lines import RepeatedLines

__all__ = [
    "ROWS_SENT",
    "SIDE_BY_SIDE_BYTES",
    "SIDE_BY_SIDE_MAX_BYTES",
    "Aside",
    "Exchanges",
    "OutputsRead",
    "ReadAside",
    "exchanges_aside",
    "read_exchanges",
    "read_outputs",
    "read_paths_checked",
    "start_aside",
]

# Below this size a second process (~0.5 s to start and import) costs more than it saves.
SIDE_BY_SIDE_BYTES = 64 << 20
# Above this the two processes' columns held at once cost more memory than the wall is worth:
# at 1000x (16.6 GB) --no-probabilities peaked at 1,124 MB side by side, 954 MB serial.
SIDE_BY_SIDE_MAX_BYTES = 4 << 30

Exchanges = tuple[RequestLog, JsonlReader[RequestLine | RequestParts]]
# The worker's read: the exchanges, and the question rows when asked (else None).
ReadAside = tuple[RequestLog, JsonlReader[RequestLine | RequestParts], list[AskedChunk] | None]
# The outputs' columns, the interval paths (None: not asked) and the reader that counted.
OutputsRead = tuple[Outputs, PathsReader | None, JsonlReader[OutputLine]]


def read_outputs(outputs_path: Path, run_id: str, *, paths: bool) -> OutputsRead:
    """The outputs pass, each line checked as this run's: the outputs' columns, the interval
    ``paths`` when asked, and the reader that counted the records."""
    outputs = OutputsReader(outputs_path)
    found = PathsReader(outputs_path) if paths else None
    reader = JsonlReader[OutputLine](outputs_path, run=run_id, legacy=True)
    present = _read_checked(reader, outputs, found)
    stats = LogStats(present, reader.records, int(reader.torn), reader.duplicates)
    return outputs.result(stats), found, reader


def read_paths_checked(
    outputs_path: Path, run_id: str
) -> tuple[PathsReader, JsonlReader[OutputLine]]:
    """The outputs pass for the interval paths alone (no outputs' columns), each line
    checked as by ``read_outputs``, and the reader that counted the records."""
    found = PathsReader(outputs_path)
    reader = JsonlReader[OutputLine](outputs_path, run=run_id, legacy=True)
    _read_checked(reader, found)
    return found, reader


def _read_checked(
    reader: JsonlReader[OutputLine],
    sink: OutputsReader | PathsReader,
    also: PathsReader | None = None,
) -> bool:
    """Each line ``reader`` reads (checked as this run's) given to ``sink`` (and ``also``);
    False when the log is absent."""
    present = stored(reader.path).is_file()
    if present:
        add, also_add = sink.add, None if also is None else also.add
        # Lines that repeat one read before but for their job, repeat and seq are given to
        # the readers unparsed (``repeated_lines``); the others are parsed, checked and read.
        if isinstance(sink, OutputsReader):
            repeated = RepeatedLines(sink, also)
        else:
            repeated = RepeatedLines(None, sink)
        reader.keep, learn = repeated.keep, repeated.learn
        for lineno, record in reader.numbered():  # each checked as this run's (``run``)
            add(lineno, record)
            if also_add is not None:
                also_add(lineno, record)
            learn(record)
        reader.keep = None  # the reader is kept (check_sequence): the lines learned are not
    return present


def read_exchanges(
    requests_path: Path, run_id: str, asked: AskedReader | None = None, *, columns: bool = True
) -> Exchanges:
    """requests.jsonl's exchange columns, each line checked as this run's (a line of another
    run or not JSON: refused, as by ``load_run``), and the reader that counted its records;
    with ``asked``, each line's interval questions go to it too (flushed at the end).
    ``columns`` False: the questions only."""
    requests = RequestsReader()
    # Lines decoded into the parts read (``request_parts``); one of another shape, whole.
    log = JsonlReader[RequestLine | RequestParts](
        requests_path, run=run_id, legacy=True, decode=decode_parts
    )
    present = stored(requests_path).is_file()
    if present:
        # The methods a line calls, bound once (a first read's hot loop: 682,200 lines at 100x).
        add = requests.add_parts if columns else None
        ask = None if asked is None else asked.parts
        for exchange in log:  # each checked as this run's (``run``)
            if isinstance(exchange, RequestParts):
                if add is not None:
                    add(exchange)
                if ask is not None:
                    ask(exchange)
                continue
            if columns:
                requests.add(exchange)
            if asked is not None:
                asked.line(exchange)
    if asked is not None:
        asked.flush()
    return requests.result(LogStats(present, log.records, int(log.torn), log.duplicates)), log


# The worker imports the ``analysis`` package without running its ``__init__``, which brings
# in the statistics and rendering (scipy among them) it never uses: at 100x that was ~0.45 s
# of the worker's start, and ~23 MB of its memory, while it is the one this process waits for.
_CHILD = (
    "import importlib.util, pickle, sys, types; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "package = types.ModuleType('analysis'); "
    "package.__path__ = list(importlib.util.find_spec('analysis').submodule_search_locations); "
    "sys.modules['analysis'] = package; "
    "from analysis.loading.reading.side_by_side import _serve; _serve()"
)


# Rows per chunk the worker sends: a quarter of ``asked.ROWS``, as each is joined while the
# worker still holds its columns (the join's temporaries grow with the chunk).
ROWS_SENT = asked_rows.ROWS // 4
# The tables an AskedChunk shares with the chunks after it (lists that only grow).
_TABLES = ("jobs", "targets", "answers", "questions", "question_sets")


def _serve() -> None:
    """The second process: (requests.jsonl, run id, questions wanted, answers kept, rows per
    chunk, the spool's file descriptor) pickled on stdin; on stdout, pickled one after
    another, ``("rows", size)`` for each chunk of question rows as it is written to the spool
    (``_Sender``), then ``("end", (RequestLog, reader, rows given up))``, or ``("end", None)``
    when it refused a line (the caller then reads both logs itself and raises the error, so
    the message is the one a serial read gives)."""
    requests_path, run_id, questions, kept, rows, spool = pickle.load(sys.stdin.buffer)
    gc.disable()  # as in ``run._collector_paused``: the lines hold no cycles
    out = sys.stdout.buffer
    # Past ``asked.ANSWERS_KEPT`` distinct answers (a real model's) the rows are given up:
    # the caller joins them serially, with its memory bounded.
    sender = _Sender(out, spool)
    asked = AskedReader(sender, rows=rows, kept=kept, give_up=True) if questions else None
    try:
        requests, log = read_exchanges(requests_path, run_id, asked)
        found: tuple[RequestLog, JsonlReader[Any], bool] | None = (
            requests,
            log,
            asked is not None and asked.over,
        )
    except (RunFolderError, ValueError, TypeError):
        found = None
    pickle.dump(("end", found), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()


class _Sender:
    """The worker's sink for question rows: each chunk pickled into the spool, a file (a pipe
    would hold the worker up until this process, busy with the outputs, takes it; measured:
    ~5 s at 100x), with only what its tables gained since the chunk before (the whole
    tables, pickled with every chunk, grow with the log); its size told on stdout."""

    def __init__(self, out: IO[bytes], spool: int) -> None:
        self.out, self.spool = out, spool
        self.sent = dict.fromkeys(_TABLES, 0)

    def __call__(self, chunk: AskedChunk) -> None:
        gained: dict[str, Any] = {}
        for name in _TABLES:
            table = getattr(chunk, name)
            if table is not None:
                gained[name], self.sent[name] = table[self.sent[name] :], len(table)
        body = pickle.dumps(dataclasses.replace(chunk, **gained), pickle.HIGHEST_PROTOCOL)
        with open(self.spool, "wb", closefd=False) as spool:
            spool.write(body)
        pickle.dump(("rows", len(body)), self.out)
        self.out.flush()


class _Receiver:
    """This process's side of ``_Sender``: each chunk read back from the spool, given tables
    grown as the worker's."""

    def __init__(self, spool: int) -> None:
        self.spool, self.offset = spool, 0
        self.tables: dict[str, list[Any]] = {name: [] for name in _TABLES}

    def __call__(self, size: int) -> AskedChunk:
        body = bytearray()
        while len(body) < size:  # a regular file's pread is whole, but is not promised to be
            part = os.pread(self.spool, size - len(body), self.offset + len(body))
            if not part:
                raise EOFError("the worker's spool ended early")
            body += part
        self.offset += size
        gained: AskedChunk = pickle.loads(body)
        whole: dict[str, Any] = {}
        for name, table in self.tables.items():
            part = getattr(gained, name)
            if part is not None:
                table.extend(part)
                whole[name] = table
        return dataclasses.replace(gained, **whole)


class Aside:
    """The second process reading the exchange columns (``exchanges_aside``)."""

    def __init__(self, requests_path: Path, run_id: str, questions: bool = False) -> None:
        # The worker's question rows, read back as they come (``_Sender``); gone once closed.
        self.spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by result or stop)
        # A fresh interpreter, not multiprocessing: its spawn and forkserver run the caller's
        # main module again in the child, which a script without a ``__main__`` guard would
        # not survive, and fork copies this process's threads (a progress bar's) badly.
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(self.spool.fileno(),),
            )
        except BaseException:
            self.spool.close()
            raise
        assert self.process.stdin is not None
        with self.process.stdin as pipe:
            pickle.dump(sys.path, pipe)
            # The cap and chunk size as this process sees them (patchable in a test).
            kept = asked_rows.ANSWERS_KEPT
            pickle.dump(
                (requests_path, run_id, questions, kept, ROWS_SENT, self.spool.fileno()), pipe
            )
        self.questions = questions
        self.receiver = _Receiver(self.spool.fileno())
        self.ended = False
        self.end: tuple[RequestLog, JsonlReader[Any], bool] | None = None

    def rows(self) -> Iterator[AskedChunk]:
        """The chunks of question rows not yet taken, in log order, each as the worker sends
        it (it waits for them); none once the worker has ended."""
        assert self.process.stdout is not None
        while not self.ended:
            try:
                kind, value = pickle.load(self.process.stdout)
            except (EOFError, pickle.UnpicklingError):  # the worker died before its end
                self.ended = True
                return
            if kind == "end":
                self.ended, self.end = True, value
                return
            yield self.receiver(value)

    def result(self) -> ReadAside | None:
        """What the second process read (it waits for it), the chunks ``rows`` did not give
        (None: no questions asked, or given up), or None when it refused a line or failed:
        the caller reads requests.jsonl itself then."""
        chunks = list(self.rows())
        self._close()
        if self.process.returncode != 0 or self.end is None:
            return None
        requests, log, over = self.end
        return requests, log, None if over or not self.questions else chunks

    def stop(self) -> None:
        """Stop the second process (its result is not needed)."""
        self.process.kill()
        self._close()

    def _close(self) -> None:
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.spool.close()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def start_aside(requests_path: Path, run_id: str, questions: bool = False) -> Aside | None:
    """A second process reading requests.jsonl (``Aside``), or None on one core or when no
    second interpreter could start (the caller then reads here)."""
    if _cores() < 2:
        return None
    try:
        return Aside(requests_path, run_id, questions)
    except OSError:  # no second interpreter could start (or it died at once)
        return None


@contextmanager
def exchanges_aside(
    requests_path: Path, run_id: str, questions: bool = False
) -> Iterator[Aside | None]:
    """A second process reading requests.jsonl's exchange columns (and, with ``questions``,
    its question rows) while the block runs, or None on one core, or for a stored log under
    ``SIDE_BY_SIDE_BYTES`` or over ``SIDE_BY_SIDE_MAX_BYTES``."""
    log = stored(requests_path)
    size = log.stat().st_size if log.is_file() else 0
    aside = None
    if SIDE_BY_SIDE_BYTES <= size <= SIDE_BY_SIDE_MAX_BYTES:
        aside = start_aside(requests_path, run_id, questions)
    if aside is None:
        yield None
        return
    try:
        yield aside
    except BaseException:
        aside.stop()  # a bad outputs line (or ^C): its work is not needed
        raise
    if aside.process.returncode is None:  # the block did not ask for the result
        aside.stop()
