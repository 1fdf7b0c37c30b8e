"""``numericjev merge RUN``: the shards of a run (``harness.running.sharding``) become one run folder.

What merge checks and writes, as a user sees it: docs/scaling.md. Nothing is written until
every shard ``RUN/shards/K`` exists, is not running (its lock is free), names the parent's
run id and its own index, matches the parent, holds only jobs of its own hash bucket, and
together they hold every job of the suite.

Each log is the shards' whole lines in shard order (a torn last line left out), written to a
temporary file and renamed into place. ``sessions.jsonl`` ends with a ``"command": "merge"``
line sealing the parent's manifest: the shards' lines seal their own manifests, so without
it every reader would take the parent for an edited manifest. Each shard numbers its records
1..N_K (``seq``, checked here: a shard cut in the middle is refused); the merged logs number
them 1..N by adding the earlier shards' counts to each ``seq``, the only bytes changed, so
merging again gives the same bytes.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from harness.protocol.cases import Suite
from harness.running.folder import suite_of
from harness.running.sharding import Shard, mismatches, shard_count, shard_from_manifest, shard_of
from runfolder import (
    MANIFEST,
    OUTPUTS,
    REQUESTS,
    SESSIONS,
    TOTALS,
    RunFolderError,
    RunLock,
    field_digests,
    load_manifest,
    manifest_digest,
    read_manifest_object,
    read_sessions,
    read_totals,
    scan_logs,
    seq_of,
    stored,
    totals_current,
    verify,
    whole_lines,
    write_cases,
    write_totals,
)

MERGED_FILES = (OUTPUTS, REQUESTS, SESSIONS)
NUMBERED = (REQUESTS, OUTPUTS)  # the logs whose records carry ``seq``


@dataclass(frozen=True)
class Merged:
    """What a merge wrote."""

    folder: Path
    shards: int
    jobs: int
    failed_jobs: int  # jobs recorded as failed (resume their shard to retry them)
    bytes_written: dict[str, int]
    seconds: float


def _whole_lines(path: Path) -> int:
    """Bytes of ``path`` up to its last newline (0 when missing): a torn last line is out."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    with path.open("rb") as handle:
        position = size
        while position > 0:
            step = min(65536, position)
            handle.seek(position - step)
            chunk = handle.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                return position - step + cut + 1
            position -= step
    return 0


def _shard_jobs(folder: Path, shard: Shard, decoders: tuple[str, ...]) -> tuple[set[str], int]:
    """The jobs shard ``folder`` recorded outputs for, and how many of them failed.

    Raises when it holds a job of another shard's bucket."""
    path = folder / OUTPUTS
    status = _statuses(path, whole_lines(path), shard)  # plain or compressed (run --compress)
    complete = {j for j, s in status.items() if all(d in s for d in decoders)}
    failed = sum(1 for j in complete if any(status[j][d] != "ok" for d in decoders))
    return complete, failed


def _statuses(path: Path, lines: Iterator[bytes], shard: Shard) -> dict[str, dict[str, str]]:
    """Each job's last status per decoder; refuses a job of another shard's bucket."""
    status: dict[str, dict[str, str]] = {}
    for number, line in enumerate(lines, start=1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise RunFolderError(f"{path} line {number} is not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise RunFolderError(f"{path} line {number} is not a JSON object")
        job = str(record.get("job"))
        if shard_of(job, shard.count) != shard.index:
            raise RunFolderError(
                f"{path.parent} holds job {job}, which belongs to shard "
                f"{shard_of(job, shard.count)}/{shard.count}: the shard folders were mixed up"
            )
        status.setdefault(job, {})[str(record.get("decoder"))] = str(record.get("status"))
    return status


def merge(folder: Path, suite: Suite | None = None, *, rescan: bool = True) -> Merged:
    """Check the shards of the run in ``folder`` and write the merged logs there. ``suite``
    (else rebuilt from the manifest) and ``rescan=False`` (no re-read of each shard log's
    numbering) are for ``Shards`` run here, whose shards were just written."""
    t0 = time.perf_counter()
    parent = load_manifest(folder)
    count = shard_count(parent)
    if count is None:
        raise RunFolderError(f"{folder} is not a sharded run (its manifest has no 'shards')")
    suite = suite or suite_of(parent)
    if suite.case_hash() != parent.case_hash:
        raise RunFolderError(
            f"{folder}: this code builds other cases than the run's, so it cannot tell which "
            "jobs the run needs; merge with the code that started it"
        )
    expected = {spec.id: shard_of(spec.id, count) for spec in suite.jobs()}
    with ExitStack() as locks:
        locks.enter_context(RunLock(folder))
        missing_shards, problems = [], []
        held: set[str] = set()
        failed = 0
        numbered: list[int] = []  # each shard's record count (0: unnumbered, older runs)
        for index in range(count):
            shard = Shard(index, count)
            path = shard.folder(folder)
            if not (path / MANIFEST).exists():
                missing_shards.append(index)
                continue
            manifest = load_manifest(path)
            if manifest.run_id != parent.run_id or shard_from_manifest(manifest) != shard:
                raise RunFolderError(f"{path} is not shard {index}/{count} of run {parent.run_id}")
            different = mismatches(parent, manifest)
            if different:
                raise RunFolderError(f"{path}: its {', '.join(different)} differ from the run's")
            locks.enter_context(RunLock(path))  # refuses while the shard is running
            numbered.append(
                scan_logs(path, parent.run_id).last_seq if rescan else _last_number(path)
            )
            # The shard's seal, as every reader checks it (its manifest becomes the parent's).
            problems += [f.message for f in verify(path)]
            jobs, shard_failed = _shard_jobs(path, shard, parent.decoders)
            failed += shard_failed
            held |= jobs
            want = sum(1 for k in expected.values() if k == index)
            if len(jobs) < want:
                problems.append(
                    f"shard {index} has {want - len(jobs):,} of its {want:,} jobs missing"
                    f" (finish it: numericjev run --shard {index}/{count} --run {folder})"
                )
        if missing_shards:
            names = ", ".join(str(k) for k in missing_shards)
            problems.insert(
                0,
                f"shard{'s' if len(missing_shards) > 1 else ''} {names} of {count} not found "
                f"under {folder}/shards (copy them back, or run them: numericjev run --shard "
                f"K/{count} --run {folder})",
            )
        unknown = held - expected.keys()
        if unknown:
            problems.append(f"{len(unknown)} jobs are not in the suite, e.g. {min(unknown)}")
        if problems:
            raise RunFolderError(f"cannot merge {folder}: " + "; ".join(problems))
        offsets = [sum(numbered[:k]) for k in range(count)]
        tails = {SESSIONS: _merge_session(folder, count)}
        written = {
            name: _concatenate(folder, name, count, offsets, tails.get(name, b""))
            for name in MERGED_FILES
        }
        _merge_totals(folder, count, parent.run_id)
        write_cases(folder, suite.case_payload())  # it hashes to the parent's case_hash
    return Merged(folder, count, len(held), failed, written, time.perf_counter() - t0)


def _merge_session(folder: Path, count: int) -> bytes:
    """The ``sessions.jsonl`` line that seals the parent's manifest after a merge: the last
    shard session's (code, model, server, limits) with the parent's seal, so that resume,
    status and analysis check the parent's manifest against its own digest. Deterministic,
    so merging again writes the same bytes."""
    last: dict[str, Any] | None = None
    for index in range(count):
        for record in read_sessions(Shard(index, count).folder(folder)):
            if last is None or str(record.get("utc")) >= str(last.get("utc")):
                last = dict(record)
    if last is None:
        return b""  # shards made before sessions.jsonl: nothing was sealed
    raw = read_manifest_object(folder)
    last.update(
        command="merge",
        allowed_mismatches=[],
        manifest_sha256=manifest_digest(raw),
        manifest_fields=field_digests(raw),
    )
    return orjson.dumps(last) + b"\n"


def _merge_totals(folder: Path, count: int, run_id: str) -> None:
    """``totals.json`` of the merged run, as an unsharded run has (``numericjev list`` reads
    it): the sum of the shards' own, when each is current; else none (``list`` then shows
    what it cannot know, and ``status`` counts from the log). Merging again writes the same."""
    parts = []
    for index in range(count):
        path = Shard(index, count).folder(folder)
        totals = read_totals(path)
        if totals is None or not totals_current(path, totals):
            with suppress(FileNotFoundError):
                (folder / TOTALS).unlink()
            return
        parts.append(totals)
    write_totals(
        folder,
        {
            "run": run_id,
            "utc": max(t["utc"] for t in parts),  # the last shard session's end
            "requests_end": (folder / REQUESTS).stat().st_size,
            "requests": sum(t["requests"] for t in parts),
            "errors": sum(t["errors"] for t in parts),
            "input_tokens": sum(t["input_tokens"] for t in parts),
            "output_tokens": sum(t["output_tokens"] for t in parts),
            "cost_usd": sum(t["cost_usd"] for t in parts),
            "cost_known": all(t["cost_known"] for t in parts),
        },
    )


def _copy(source: BinaryIO, out: BinaryIO, length: int) -> None:
    """Append the first ``length`` bytes of ``source`` to ``out``: in the kernel where it
    can (``copy_file_range``: 1.5 GB of a 100x run's requests without passing through
    Python), else in 1 MiB chunks."""
    out.flush()
    remaining = length
    try:
        while remaining:
            done = os.copy_file_range(source.fileno(), out.fileno(), remaining)
            if done == 0:
                break
            remaining -= done
    except (AttributeError, OSError):
        pass  # not Linux, or a filesystem without it: copy the rest through Python
    source.seek(length - remaining)
    out.seek(0, os.SEEK_END)
    while remaining:
        chunk = source.read(min(remaining, 1 << 20))
        if not chunk:
            raise RunFolderError(f"{source.name} is shorter than it was a moment ago")
        out.write(chunk)
        remaining -= len(chunk)


def _last_number(folder: Path) -> int:
    """The highest record number of a shard: its logs' last whole lines' (0: unnumbered)."""
    last = 0
    for name in NUMBERED:
        path = folder / name
        if stored(path) != path:  # compressed: the last whole line of the last frame
            kept = deque(whole_lines(path), maxlen=1)
            last = max(last, (seq_of(kept[0]) or 0) if kept else 0)
            continue
        end = _whole_lines(path)
        if not end:
            continue
        with path.open("rb") as handle:
            handle.seek(max(0, end - 65536))
            tail = handle.read(end - handle.tell())
        line = tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1 :]
        last = max(last, seq_of(line) or 0)
    return last


def _renumbered_lines(lines: Iterator[bytes], out: BinaryIO, offset: int) -> int:
    """Append ``lines`` to ``out``, ``offset`` added to each numbered line's ``seq``; the
    bytes read."""
    read = 0
    for line in lines:
        read += len(line)
        seq = seq_of(line)
        if seq is None or not offset:
            out.write(line)
            continue
        at = line.rindex(b'"seq":') + 6
        out.write(line[:at] + str(seq + offset).encode() + b"}\n")
    return read


def _concatenate(folder: Path, name: str, count: int, offsets: list[int], tail: bytes) -> int:
    """Write ``folder/name`` as the shards' files in shard order, then ``tail``; the bytes
    read."""
    tmp = folder / f".{name}.merge.tmp"
    total = 0
    with tmp.open("wb") as out:
        for index in range(count):
            path = Shard(index, count).folder(folder) / name
            if stored(path) != path or (name in NUMBERED and offsets[index]):
                # Compressed shard logs (merged as plain lines), or lines to renumber.
                total += _renumbered_lines(whole_lines(path), out, offsets[index])
                continue
            length = _whole_lines(path)
            if length:
                with path.open("rb") as source:
                    _copy(source, out, length)
            total += length
        out.write(tail)
    # No fsync: the merged files are derived from the shards, which stay as they were; after
    # a crash, merging again rebuilds them (and saves the cost of forcing 1.5 GB to disk).
    os.replace(tmp, folder / name)
    return total
