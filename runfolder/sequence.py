"""Record numbers across a run's two logs: duplicates counted once, a log cut in the middle refused.

The writer numbers every ``requests.jsonl`` and ``outputs.jsonl`` record of a run from ONE
counter, ``seq`` (1, 2, 3, ... over every session), the line's last key, and hands lines to
the OS whole, in that order (``harness.running.recorder``). So a crash leaves exactly
records 1..M on disk (at most one torn last line, dropped); within a file the numbers only
grow (a repeat is skipped by ``JsonlReader``); and a file cut in the middle leaves holes in
1..N, which is damage, not a crash: every reader refuses it rather than read the shorter log
as the run. What a crash loses, and why: docs/reliability.md ("Resume never pays twice",
"Damaged logs").

The check needs no memory per record: two increasing runs of numbers are exactly 1..N when
their count is N and their sums of values and of squares are those of 1..N (a hole cannot
be filled by a repeat from the other file without changing one of the three). Only when it
fails is the folder read again, to name the first missing record. Cutting away only the
records after the last ``outputs.jsonl`` line cannot be told from a crash this way. Runs
made before ``seq`` have no numbers; their logs are read as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from runfolder.errors import LogFormatError
from runfolder.jsonl import TORN, JsonlReader, run_on, seq_of, whole_lines
from runfolder.layout import OUTPUTS, REQUESTS


def check_sequence(folder: Path, *readers: JsonlReader[Any]) -> int:
    """Refuse logs whose numbered records are not exactly 1..N; returns N (0: unnumbered).

    ``readers`` have each read one whole log of ``folder`` (``requests.jsonl`` and
    ``outputs.jsonl``). Raises ``LogFormatError`` naming the cause: a record in both logs, a
    line whose number does not follow the others, or the first missing record.
    """
    count = sum(r.seq_count for r in readers)
    total = sum(r.seq_sum for r in readers)
    squares = sum(r.seq_squares for r in readers)
    n = max((r.seq_last for r in readers), default=0)
    if count == n and total == n * (n + 1) // 2 and squares == n * (n + 1) * (2 * n + 1) // 6:
        return n
    raise LogFormatError(
        f"{folder}: {REQUESTS} and {OUTPUTS} hold {count:,} numbered records, but their "
        f"numbers run to {n:,}: {_cause(folder, n, count)}"
    )


def _cause(folder: Path, last: int, count: int) -> str:
    """Why the numbers are not 1..``last``, read from the logs again (a second, rare pass):
    each log's lines as its reader counts them (a repeat within one log is skipped)."""
    cap = min(last, 4 * count + 1_000_000)  # numbers far beyond the lines are not mapped
    seen = bytearray(cap + 1)
    seen[0] = 1
    top: list[tuple[int, str, int]] = []  # the two highest numbers, with file and line
    for name in (REQUESTS, OUTPUTS):
        before = 0
        for lineno, line in enumerate(whole_lines(folder / name), 1):
            seq = seq_of(line)
            if seq is None or seq <= before:
                continue
            before = seq
            top = sorted([*top, (seq, name, lineno)])[-2:]
            if seq <= cap:
                if seen[seq]:
                    return (
                        f"record {seq:,} is in both logs ({name} line {lineno} repeats it): a "
                        "line was copied from one log into the other; delete the copy"
                    )
                seen[seq] = 1
    if len(top) == 2:
        (below, _, _), (highest, name, lineno) = top
        if highest > below + 1 and below <= cap and seen.find(0, 0, below + 1) < 0:
            return (
                f"{name} line {lineno} is numbered {highest:,}, but the records before it run "
                f"to {below:,}: its number does not follow the others, so the line was edited "
                "or copied in (a crash cannot renumber a line); delete or repair that line"
            )
    missing = seen.find(0)
    torn = _torn_before(folder, missing) if missing > 0 else None
    if torn is not None:
        return torn
    where = f"record {missing:,} is in neither log" if missing > 0 else "records are missing"
    return (
        f"{where}: lines were cut or deleted from the middle of a log, which a crash cannot do "
        "(it tears at most the last line); restore the logs from a copy, or start a new run"
    )


def _torn_before(folder: Path, missing: int) -> str | None:
    """Where record ``missing`` was torn and later records run on from it on one line (the
    first line numbered above it, in either log), said as that; None if it was not."""
    for name in (REQUESTS, OUTPUTS):
        for lineno, line in enumerate(whole_lines(folder / name), 1):
            seq = seq_of(line)
            if seq is None or seq < missing:
                continue
            at = run_on(line)
            if at is not None:
                return (
                    f"{name} line {lineno} {TORN.format(column=at + 1)}: record {missing:,} "
                    "was lost in it, which a crash alone cannot do (it tears only the last "
                    "line, and the harness cuts that before it appends); restore the logs from "
                    "a copy, or start a new run"
                )
            break
    return None


@dataclass(frozen=True)
class LogScan:
    """What one pass over a run's two logs found, without parsing a record."""

    last_seq: int  # the highest record number (0: an unnumbered, older run)
    duplicates: int  # repeated lines, skipped
    torn: tuple[str, ...]  # logs that end in a torn line


def scan_logs(folder: Path, run_id: str | None = None, *, legacy: bool = False) -> LogScan:
    """Check both logs' numbering in one cheap pass; refuses a cut log, and with ``run_id``
    a line of another run (``JsonlReader``'s ``run``: only the lines that do not carry it
    are parsed; ``legacy``: a run made before lines were stamped reads).

    For readers that do not read both logs themselves (``export``, ``merge``,
    ``import-predictions``).
    """
    key = b'"run":' + orjson.dumps(run_id) if run_id is not None else None
    readers = [
        JsonlReader[dict[str, Any]](
            folder / name,
            keep=lambda line: key is not None and key not in line,
            run=run_id,
            legacy=legacy,
        )
        for name in (REQUESTS, OUTPUTS)
    ]
    for reader in readers:
        for _ in reader:
            pass
    last = check_sequence(folder, *readers)
    return LogScan(
        last,
        sum(r.duplicates for r in readers),
        tuple(r.path.name for r in readers if r.torn),
    )
