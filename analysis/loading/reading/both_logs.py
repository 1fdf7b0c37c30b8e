"""A run's two logs read into columns, one pass over each (side by side where it pays).

The reader only: which columns are kept in ``RUN/.columns/``, and when they are used
instead, is ``run_columns``' decision, not this module's.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.loading.columns.row_chunks import release_freed
from analysis.loading.logs.exchanges import RequestLog
from analysis.loading.logs.outputs import Outputs
from analysis.loading.probabilities.answers import AnswerLog, AnswersJoin
from runfolder import OUTPUTS, REQUESTS, JsonlReader, RunFolderError, check_sequence, stored

from .side_by_side import (
    SIDE_BY_SIDE_MAX_BYTES,
    Aside,
    exchanges_aside,
    read_exchanges,
    read_outputs,
    read_paths_checked,
    start_aside,
)

__all__ = ["Read", "Taken", "read_logs"]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while the logs stream past: decoded lines hold
    no cycles and are freed by reference counting, but each full collection would walk
    every object the readers keep (about a tenth of a first read's CPU at 100×)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# What becomes of the answers once read (kept, digested): returns them, or None if dropped.
Taken = Callable[[AnswerLog], AnswerLog | None]
Read = tuple[Outputs, RequestLog, AnswerLog | None]


def read_logs(
    run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: Taken, *, apart: bool
) -> Read:
    """One pass over each log: the outputs (and interval paths), then the exchanges (and,
    with ``pairing``, the answers joined with those paths, given to ``taken``). A line of
    another run is refused (``JsonlReader``'s ``run``), as every reader refuses it.

    ``apart`` (the answers are digested and dropped): a requests.jsonl too large to read
    side by side has its answers joined and dropped before the outputs' columns are read,
    so that the two never share memory (each log is then read twice: ``_read_apart``)."""
    with _collector_paused():
        requests_path = stored(run_dir / REQUESTS)
        size = requests_path.stat().st_size if requests_path.is_file() else 0
        if apart and pairing is not None and size > SIDE_BY_SIDE_MAX_BYTES:
            return _read_apart(run_dir, pairing, run_id, taken)
        return _read_both(run_dir, pairing, run_id, taken)


def _read_apart(run_dir: Path, pairing: tuple[str, str], run_id: str, taken: Taken) -> Read:
    """The exchange columns, then the interval paths and the answers joined with them, the
    answers ``taken``; then the outputs' columns. requests.jsonl is read twice: its exchange
    columns (~320 MB at their peak at 1000×) are gathered by a second process while this
    one reads the interval paths (here, after them, on one core), never beside the join."""
    outputs_path, requests_path = run_dir / OUTPUTS, run_dir / REQUESTS
    aside = _columns_aside(requests_path, run_id)
    try:
        paths, reader = read_paths_checked(outputs_path, run_id)
    except BaseException:
        if aside is not None:
            aside.stop()  # a bad outputs line (or ^C): its work is not needed
        raise
    # Refused a line, or no second process: read here (a refusal says why).
    found = None if aside is None else aside.result()
    requests, log = read_exchanges(requests_path, run_id) if found is None else found[:2]
    join = AnswersJoin(paths.table(pairing))
    del paths
    release_freed()  # what the passes freed (their lines, the job names' dictionary)
    # The questions only: every line was checked, and counted, by the columns' pass.
    read_exchanges(requests_path, run_id, join.reader(), columns=False)
    check_sequence(run_dir, log, reader)
    answers = taken(join.result(stored(requests_path).is_file()))
    del join
    release_freed()  # the join's and the statistics' heap, before the outputs' columns
    outputs, _, _ = read_outputs(outputs_path, run_id, paths=False)
    return outputs, requests, answers


def _columns_aside(requests_path: Path, run_id: str) -> Aside | None:
    """A second process reading requests.jsonl's exchange columns, or None on one core."""
    return start_aside(requests_path, run_id) if stored(requests_path).is_file() else None


def _read_both(run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: Taken) -> Read:
    outputs_path, requests_path = run_dir / OUTPUTS, run_dir / REQUESTS
    # The exchange columns need nothing from the outputs: read side by side on 2+ cores.
    with exchanges_aside(requests_path, run_id, questions=pairing is not None) as aside:
        if aside is not None:
            found = _read_beside(aside, run_dir, pairing, run_id, taken)
            if found is not None:
                return found
    # One core, a small log, or a line refused: the serial read (which says why).
    outputs, join, reader = _outputs_joined(outputs_path, run_id, pairing)
    requests, log = read_exchanges(requests_path, run_id, None if join is None else join.reader())
    return _checked(run_dir, outputs, requests, join, log, reader, taken)


def _outputs_joined(
    outputs_path: Path, run_id: str, pairing: tuple[str, str] | None
) -> tuple[Outputs, AnswersJoin | None, JsonlReader[Any]]:
    """The outputs pass, the answers join its interval paths make (with ``pairing``), and
    the reader that counted the records."""
    outputs, paths, reader = read_outputs(outputs_path, run_id, paths=pairing is not None)
    join = None if paths is None or pairing is None else AnswersJoin(paths.table(pairing))
    return outputs, join, reader


def _read_beside(
    aside: Aside, run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: Taken
) -> Read | None:
    """This process's share of a read side by side (``side_by_side``), or None when a line
    was refused on either side."""
    try:
        outputs, join, reader = _outputs_joined(run_dir / OUTPUTS, run_id, pairing)
    except RunFolderError:
        return None
    if join is not None:
        # The pass's freed heap handed back: the join grows while the worker still holds
        # its columns, and the tree's peak is there.
        release_freed()
        # Joined as the worker sends them: here while it still reads, not all after it.
        for chunk in aside.rows():
            join.add(chunk)
    found = aside.result()
    if found is None:
        return None
    requests, log, chunks = found
    if join is not None and chunks is None:  # too many distinct answers to ship: join here
        join = AnswersJoin(join.paths)  # afresh: the rows joined before it gave up are dropped
        read_exchanges(run_dir / REQUESTS, run_id, join.reader(), columns=False)
    return _checked(run_dir, outputs, requests, join, log, reader, taken)


def _checked(
    run_dir: Path,
    outputs: Outputs,
    requests: RequestLog,
    join: AnswersJoin | None,
    log: JsonlReader[Any],
    reader: JsonlReader[Any],
    taken: Taken,
) -> Read:
    """The logs read, once their record numbers are checked across both files: a log cut in
    the middle is refused as by resume (each reader counts a repeated record once)."""
    check_sequence(run_dir, log, reader)
    present = stored(run_dir / REQUESTS).is_file()
    return outputs, requests, None if join is None else taken(join.result(present))
