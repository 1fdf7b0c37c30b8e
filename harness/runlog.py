"""The run folder: manifest, append-only JSONL logs, and the lock that keeps a second process out.

Every record is one JSON object per line, written by ``dumps_line`` and flushed as written.
A crash can leave a torn last line; readers ignore it and ``JsonlAppender`` cuts it off
before appending again, so nothing already recorded is ever lost or rewritten.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from harness.errors import RunFolderError

MANIFEST = "manifest.json"
REQUESTS = "requests.jsonl"
OUTPUTS = "outputs.jsonl"
LOCK = ".lock"
FORMAT_VERSION = 1


def dumps_line(record: dict[str, Any]) -> bytes:
    """The one place a log record becomes bytes: compact JSON plus a newline."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


def iter_jsonl(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(end_offset, line)`` for each complete line (a torn tail has no newline)."""
    if not path.exists():
        return
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                return
            offset += len(line)
            yield offset, line


class JsonlReader:
    """Streams the records of one JSONL file; after iteration, says where valid data ends.

    A line that is not a JSON object is torn if it is the last one (a crash mid-write) and
    an error anywhere else: the log was edited, and guessing would be silently wrong.
    ``keep`` filters raw lines before parsing, so a resume can skip finished jobs cheaply.
    """

    def __init__(self, path: Path, keep: Callable[[bytes], bool] | None = None) -> None:
        self.path = path
        self.keep = keep
        self.valid_bytes = 0
        self.torn = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        bad: int | None = None
        for number, (end, line) in enumerate(iter_jsonl(self.path), start=1):
            if bad is not None:
                raise RunFolderError(
                    f"{self.path}: line {bad} is not a JSON record and is not the last line; "
                    "the log was edited or corrupted: restore it, or start a new run"
                )
            wanted = self.keep is None or self.keep(line)
            if not wanted and line.startswith(b"{") and line.endswith(b"}\n"):
                self.valid_bytes = end
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                bad = number
                continue
            if not isinstance(record, dict):
                raise RunFolderError(f"{self.path}: line {number} is JSON but not an object")
            self.valid_bytes = end
            if wanted:
                yield record
        size = self.path.stat().st_size if self.path.exists() else 0
        self.torn = size != self.valid_bytes


def valid_end(path: Path) -> int:
    """Where the last whole record of ``path`` ends."""
    reader = JsonlReader(path, keep=lambda _line: False)
    for _ in reader:
        pass
    return reader.valid_bytes


class JsonlAppender:
    """Appends records to one JSONL file, first cutting off a torn tail left by a crash."""

    def __init__(self, path: Path, end: int | None = None) -> None:
        self.path = path
        if end is None:
            end = valid_end(path)
        self._handle: BinaryIO = path.open("ab")
        if self._handle.tell() != end:
            self._handle.truncate(end)
            self._handle.seek(end)

    def write(self, record: dict[str, Any]) -> None:
        """Append one record and hand it to the OS at once (a SIGKILL loses nothing written)."""
        self._handle.write(dumps_line(record))
        self._handle.flush()

    def close(self) -> None:
        """Flush to disk and close."""
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (temp file, fsync, rename): it is never half-written."""
    tmp = folder / f".{MANIFEST}.tmp"
    with tmp.open("wb") as handle:
        handle.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, folder / MANIFEST)


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a run folder; refuses a folder that is not a run."""
    if not folder.is_dir():
        raise RunFolderError(f"{folder} is not a folder; pass a run folder such as runs/<id>")
    path = folder / MANIFEST
    if not path.exists():
        raise RunFolderError(f"{folder} has no {MANIFEST}, so it is not a run folder")
    try:
        manifest = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFolderError(f"{path} is not valid JSON ({exc}); the manifest was edited") from exc
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        raise RunFolderError(f"{path} is not a NumericJev manifest of format {FORMAT_VERSION}")
    for key in ("suite", "case_hash", "source_hash", "model", "decoders", "seed"):
        if key not in manifest:
            raise RunFolderError(f"{path} lacks {key!r}; the manifest was edited or truncated")
    return manifest


class RunLock:
    """An exclusive, non-blocking lock on a run folder, released when the process dies."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or refuse with the holder's pid."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderError(
                f"{self.path.parent} is in use by another process (pid {holder}); "
                "wait for it to finish or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        """Drop the lock."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # no stale pid for people to wonder about
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
