"""A run folder loaded whole."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runfolder import (
    Finding,
    JsonlReader,
    Manifest,
    RunFolderError,
    SessionRecord,
    check_sequence,
    is_comparison,
    load_manifest,
    read_sessions,
    stored,
    verify,
)

from .answers import AnswerCounts, AnswerLog, AnswersJoin, order_pair
from .chain_units import ChainLog
from .column_cache import RUN_LOGS, cache_enabled, cache_key, keep, recall
from .exchanges import RequestLog
from .outputs import LogStats, Outputs
from .provenance import HashCheck, recheck
from .row_chunks import release_freed
from .side_by_side import (
    SIDE_BY_SIDE_MAX_BYTES,
    Aside,
    exchanges_aside,
    read_exchanges,
    read_outputs,
    read_paths_checked,
    start_aside,
)

__all__ = ["AnswersDigest", "Run", "load_run"]


@dataclass(frozen=True, eq=False)
class Run:
    """A run folder: its manifest, outputs, request log and sessions (none in older runs)."""

    manifest: Manifest
    outputs: Outputs
    requests: RequestLog
    sessions: tuple[SessionRecord, ...] = ()
    hashes: HashCheck | None = None  # the manifest's hashes recomputed (None: not checked)
    answers: AnswerLog | None = None  # the interval answers, when asked for (Probabilities)
    # What the seal check found (runfolder.integrity): each becomes a banner.
    seal: tuple[Finding, ...] = ()


_KEPT = {c.__name__: c for c in (Outputs, RequestLog, LogStats, AnswerLog, AnswerCounts, ChainLog)}

# Takes a run's answers as soon as they are read (their names are the outputs' own).
AnswersDigest = Callable[[AnswerLog, Manifest], None]


def load_run(
    path: Path | str,
    *,
    probabilities: bool = False,
    orders: tuple[str, str] | None = None,
    digest: AnswersDigest | None = None,
) -> Run:
    """Load manifest.json, outputs.jsonl, requests.jsonl and sessions.jsonl of one run folder.

    Each log is read once: with ``probabilities``, the same pass over outputs.jsonl also
    reads the interval paths and the pass over requests.jsonl joins their answers
    (``Run.answers``); ``orders`` pairs option orders (default: the manifest's, as
    ``order_pair`` picks them; a diff passes run A's to run B). The columns read are kept
    in ``RUN/.columns/`` and read back while the logs are unchanged (``column_cache``).
    With ``digest``, the answers go to it as soon as they are read and are not kept
    (``Run.answers`` None): read back, they are then never in memory beside the outputs.
    """
    run_dir = Path(path)
    if is_comparison(run_dir):
        raise RunFolderError(
            f"{run_dir} is a comparison folder (numericjev compare), not one run: "
            f"`numericjev analyze {run_dir}` summarises it; to look at one of its runs, pass "
            f"its folder, e.g. {run_dir}/<suite>-m1-<model>"
        )
    manifest = load_manifest(run_dir, partial=True)
    pairing = (orders or order_pair(manifest.orders)) if probabilities else None
    # Keys are taken before the logs are read: a log that grows meanwhile is not kept.
    key = cache_key(run_dir, RUN_LOGS)
    answers_key = None if pairing is None else cache_key(run_dir, RUN_LOGS, orders=list(pairing))
    answers = recall(run_dir, "answers", answers_key, _KEPT) if pairing else None
    # Answers that must be read mean reading both logs: the kept outputs are not loaded then.
    must_read = pairing is not None and answers is None
    if answers is not None and digest is not None:
        digest(answers, manifest)
        answers = None  # dropped before the outputs are decoded
    kept = None if must_read else recall(run_dir, "logs", key, _KEPT)
    if kept is None:

        def taken(found: AnswerLog) -> AnswerLog | None:
            jobs = found.names["job"]  # compact (``CompactNames``) as the join leaves them
            if cache_enabled():  # kept as strings, then compact again for the digest
                found.names["job"] = tuple(jobs)
                keep(run_dir, "answers", answers_key, found)
                found.names["job"] = jobs
            if digest is None:  # handed back: the job names as strings
                found.names["job"] = tuple(jobs)
                return found
            digest(found, manifest)
            return None  # dropped

        outputs, requests, answers = _read_logs(
            run_dir, pairing, manifest.run_id, taken, apart=digest is not None
        )
        keep(run_dir, "logs", key, (outputs, requests))
    else:
        outputs, requests = kept
    return Run(
        manifest=manifest,
        outputs=outputs,
        requests=requests,
        sessions=tuple(read_sessions(run_dir)),  # absent before sessions.jsonl: ()
        hashes=recheck(run_dir, manifest),
        answers=answers,
        seal=verify(run_dir, manifest.raw),
    )


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
_Taken = Callable[[AnswerLog], AnswerLog | None]
_Read = tuple[Outputs, RequestLog, AnswerLog | None]


def _read_logs(
    run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: _Taken, *, apart: bool
) -> _Read:
    """One pass over each log: the outputs (and interval paths), then the exchanges (and,
    with ``pairing``, the answers joined with those paths, given to ``taken``). A line of
    another run is refused (``JsonlReader``'s ``run``), as every reader refuses it.

    ``apart`` (the answers are digested and dropped): a requests.jsonl too large to read
    side by side has its answers joined and dropped before the outputs' columns are read,
    so that the two never share memory (each log is then read twice: ``_read_apart``)."""
    with _collector_paused():
        requests_path = stored(run_dir / RUN_LOGS[1])
        size = requests_path.stat().st_size if requests_path.is_file() else 0
        if apart and pairing is not None and size > SIDE_BY_SIDE_MAX_BYTES:
            return _read_apart(run_dir, pairing, run_id, taken)
        return _read_both(run_dir, pairing, run_id, taken)


def _read_apart(run_dir: Path, pairing: tuple[str, str], run_id: str, taken: _Taken) -> _Read:
    """The exchange columns, then the interval paths and the answers joined with them, the
    answers ``taken``; then the outputs' columns. requests.jsonl is read twice: its exchange
    columns (~320 MB at their peak at 1000×) are gathered by a second process while this
    one reads the interval paths (here, after them, on one core), never beside the join."""
    outputs_path, requests_path = run_dir / RUN_LOGS[0], run_dir / RUN_LOGS[1]
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


def _read_both(run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: _Taken) -> _Read:
    outputs_path, requests_path = run_dir / RUN_LOGS[0], run_dir / RUN_LOGS[1]
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
    aside: Aside, run_dir: Path, pairing: tuple[str, str] | None, run_id: str, taken: _Taken
) -> _Read | None:
    """This process's share of a read side by side (``side_by_side``), or None when a line
    was refused on either side."""
    try:
        outputs, join, reader = _outputs_joined(run_dir / RUN_LOGS[0], run_id, pairing)
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
        read_exchanges(run_dir / RUN_LOGS[1], run_id, join.reader(), columns=False)
    return _checked(run_dir, outputs, requests, join, log, reader, taken)


def _checked(
    run_dir: Path,
    outputs: Outputs,
    requests: RequestLog,
    join: AnswersJoin | None,
    log: JsonlReader[Any],
    reader: JsonlReader[Any],
    taken: _Taken,
) -> _Read:
    """The logs read, once their record numbers are checked across both files: a log cut in
    the middle is refused as by resume (each reader counts a repeated record once)."""
    check_sequence(run_dir, log, reader)
    present = stored(run_dir / RUN_LOGS[1]).is_file()
    return outputs, requests, None if join is None else taken(join.result(present))
