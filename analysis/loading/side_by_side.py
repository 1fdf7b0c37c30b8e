"""The two logs read side by side: a second process reads columns while this one reads the rest.

A first read of a large run is parse-bound and single-threaded. On a machine with two or
more cores, a second process reads what needs nothing from the other log: requests.jsonl's
exchange columns and run-id check, and for the Probabilities section each interval question
reduced to ints (``asked``: which output and round, which answer and question). This process
reads outputs.jsonl meanwhile (the outputs' columns and their interval paths), then joins
the worker's question rows with those paths in NumPy (``answers.AnswersJoin``). (The worker reading the outputs' columns too
was tried: it then took 21 s against this process's 10 s at 100×, two processes decoding at
once each running ~35% slower, and the wall did not improve.)

The worker gives back what it read and the readers that counted the records (for
``runfolder.check_sequence``), or nothing when it refused a line; a line refused on either
side sends the read back to the serial path, which refuses it with the message it always gave.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runfolder import JsonlReader, LineCheck, OutputLine, RequestLine, RunFolderError, stored

from . import asked as asked_rows
from .asked import AskedChunk, AskedReader
from .exchanges import RequestLog, RequestsReader
from .interval_paths import PathsReader
from .outputs import LogStats, Outputs, OutputsReader
from .repeated_lines import RepeatedLines
from .request_parts import RequestParts, decode_parts

__all__ = [
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
    reader = JsonlReader[OutputLine](outputs_path, run=run_id)
    present = _read_checked(reader, outputs_path, run_id, outputs, found)
    stats = LogStats(present, reader.records, int(reader.torn), reader.duplicates)
    return outputs.result(stats), found, reader


def read_paths_checked(
    outputs_path: Path, run_id: str
) -> tuple[PathsReader, JsonlReader[OutputLine]]:
    """The outputs pass for the interval paths alone (no outputs' columns), each line
    checked as by ``read_outputs``, and the reader that counted the records."""
    found = PathsReader(outputs_path)
    reader = JsonlReader[OutputLine](outputs_path, run=run_id)
    _read_checked(reader, outputs_path, run_id, found)
    return found, reader


def _read_checked(
    reader: JsonlReader[OutputLine],
    outputs_path: Path,
    run_id: str,
    sink: OutputsReader | PathsReader,
    also: PathsReader | None = None,
) -> bool:
    """Each line of ``outputs_path`` checked as this run's and given to ``sink`` (and
    ``also``); False when the log is absent."""
    check = LineCheck(outputs_path, run_id, legacy=True)
    present = stored(outputs_path).is_file()
    if present:
        add, also_add = sink.add, None if also is None else also.add
        # Lines that repeat one read before but for their job, repeat and seq are given to
        # the readers unparsed (``repeated_lines``); the others are parsed, checked and read.
        if isinstance(sink, OutputsReader):
            repeated = RepeatedLines(check, sink, also)
        else:
            repeated = RepeatedLines(check, None, sink)
        reader.keep, learn = repeated.keep, repeated.learn
        for lineno, record in reader.numbered():
            # LineCheck passes this run's line when no unstamped one came before: that case
            # without a call (a first read's hot loop).
            if record.get("run") != run_id or check.unstamped is not None:
                check(lineno, record)
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
    log = JsonlReader[RequestLine | RequestParts](requests_path, run=run_id, decode=decode_parts)
    check = LineCheck(requests_path, run_id, legacy=True)
    present = stored(requests_path).is_file()
    if present:
        for lineno, exchange in log.numbered():
            if isinstance(exchange, RequestParts):
                if columns:
                    # LineCheck passes this run's line when no unstamped one came before:
                    # that case without building the line's dict for it.
                    if exchange.run != run_id or check.unstamped is not None:
                        check(lineno, exchange.fields())
                    requests.add_parts(exchange)
                if asked is not None:
                    asked.parts(exchange)
                continue
            if columns:
                check(lineno, exchange)
                requests.add(exchange)
            if asked is not None:
                asked.line(exchange)
    if asked is not None:
        asked.flush()
    return requests.result(LogStats(present, log.records, int(log.torn), log.duplicates)), log


_CHILD = (
    "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from analysis.loading.side_by_side import _serve; _serve()"
)


def _serve() -> None:
    """The second process: (requests.jsonl, run id, questions wanted, answers kept) pickled
    on stdin, ``read_exchanges``'s result and the question rows (None: given up) pickled on
    stdout, or None when it refused a line (the caller then reads both logs itself and raises the error, so the
    message is the one a serial read gives)."""
    requests_path, run_id, questions, kept = pickle.load(sys.stdin.buffer)
    gc.disable()  # as in ``run._collector_paused``: the lines hold no cycles
    asked = AskedReader(kept=kept) if questions else None
    try:
        requests, log = read_exchanges(requests_path, run_id, asked)
        # Past ``asked.ANSWERS_KEPT`` distinct answers (a real model's) the rows are given
        # up (None): the caller joins them serially, with its memory bounded.
        rows = None if asked is None or asked.over else asked.result()
        found: ReadAside | None = requests, log, rows
    except (RunFolderError, ValueError, TypeError):
        found = None
    pickle.dump(found, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)


class Aside:
    """The second process reading the exchange columns (``exchanges_aside``)."""

    def __init__(self, requests_path: Path, run_id: str, questions: bool = False) -> None:
        # A fresh interpreter, not multiprocessing: its spawn and forkserver run the caller's
        # main module again in the child, which a script without a ``__main__`` guard would
        # not survive, and fork copies this process's threads (a progress bar's) badly.
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.process.stdin is not None
        with self.process.stdin as pipe:
            pickle.dump(sys.path, pipe)
            # The cap as this process sees it (``asked.ANSWERS_KEPT``, patchable in a test).
            pickle.dump((requests_path, run_id, questions, asked_rows.ANSWERS_KEPT), pipe)

    def result(self) -> ReadAside | None:
        """What the second process read (it waits for it), or None when it refused a line or
        failed: the caller reads requests.jsonl itself then."""
        assert self.process.stdout is not None
        with self.process.stdout as pipe:
            output = pipe.read()
        if self.process.wait() != 0:
            return None
        found: ReadAside | None = pickle.loads(output)
        return found

    def stop(self) -> None:
        """Stop the second process (its result is not needed)."""
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def exchanges_aside(
    requests_path: Path, run_id: str, questions: bool = False
) -> Iterator[Aside | None]:
    """A second process reading requests.jsonl's exchange columns (and, with ``questions``,
    its question rows) while the block runs, or None on one core, or for a stored log under
    ``SIDE_BY_SIDE_BYTES`` or over ``SIDE_BY_SIDE_MAX_BYTES``."""
    log = stored(requests_path)
    size = log.stat().st_size if log.is_file() else 0
    if _cores() < 2 or not SIDE_BY_SIDE_BYTES <= size <= SIDE_BY_SIDE_MAX_BYTES:
        yield None
        return
    try:
        aside = Aside(requests_path, run_id, questions)
    except OSError:  # no second interpreter could start (or it died at once): read here
        yield None
        return
    try:
        yield aside
    except BaseException:
        aside.stop()  # a bad outputs line (or ^C): its work is not needed
        raise
    if aside.process.returncode is None:  # the block did not ask for the result
        aside.stop()
