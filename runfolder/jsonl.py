"""The ONE way a JSONL log is written (``dumps_line``, ``JsonlAppender``) and read (``JsonlReader``).

The torn-line rule, the same for every reader (resume, status, analysis; docs/run-folder.md):
a last line WITHOUT its newline is torn, even if it parses: the writer ends every record with
its newline in the same write, so it is a write a crash interrupted, and keeping a prefix that
happens to parse would let a reader and a later resume disagree. Every reader ignores (and
counts) it; ``JsonlAppender`` cuts it off before appending. Any line WITH its newline must be
a JSON object, or the log was edited or damaged: ``LogFormatError`` names the file and line.
Blank lines are skipped.

``seq``, the last key of every ``requests.jsonl`` and ``outputs.jsonl`` line
(``runfolder.sequence``), only grows within one file: a line whose ``seq`` is not above the
one before it repeats a record and is skipped by every reader (``duplicates``). The reader
keeps the count and sums of the numbers it accepted for ``sequence.check_sequence``. Lines
without ``seq`` (older runs) are read as before.

orjson refuses integers outside [-2**63, 2**64 - 1]: ``dumps_line`` raises ``RecordError``
naming the field, and nothing is written. Non-finite floats are refused where the user's
numbers enter (``require_writable``); log records carry only finite computed or parsed ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import orjson

from runfolder import zlog
from runfolder.errors import ForeignLineError, LogFormatError, RecordError, RunFolderError
from runfolder.layout import MANIFEST
from runfolder.unwritable import find_unwritable

R = TypeVar("R")

_BLANK = b" \t\r\n"  # first bytes of a line that may be blank
_SEQ_KEY = b',"seq":'  # how the writer ends a numbered record: ...,"seq":123}
_SEQ_KEY_LEN = len(_SEQ_KEY)
_SEQ_TAIL = 40  # bytes at the end of a line that can hold it (the key, 20 digits, "}" and space)


def seq_of(line: bytes) -> int | None:
    """The ``seq`` a raw log line ends with, or None (an older line, or not the writer's).

    Reads only the tail of the line, without parsing it: the writer puts ``seq`` last, and a
    string value cannot hold ``,"seq":`` unescaped, so the match is the record's own key.
    """
    at = line.rfind(_SEQ_KEY, max(0, len(line) - _SEQ_TAIL))
    if at < 0:
        return None
    tail = line[at + len(_SEQ_KEY) :].rstrip(_BLANK)
    if not tail.endswith(b"}"):
        return None
    digits = tail[:-1].strip()
    return int(digits) if digits.isdigit() and len(digits) < 20 else None


# A line that is a torn record with a whole one run on from it (``run_on``), as said.
TORN = "is a torn line (an incomplete write) followed by later records (from column {column})"


def run_on(line: bytes) -> int | None:
    """Where a whole record starts inside ``line`` after a torn one (0-based), or None:
    a torn write with later records run on from it, not a record of its own."""
    at = line.find(b'{"', 1)
    while at > 0:
        try:
            if type(orjson.loads(line[at:])) is dict:
                return at
        except orjson.JSONDecodeError:
            pass
        at = line.find(b'{"', at + 1)
    return None


def dumps_line(record: Mapping[str, Any], where: str = "a record") -> bytes:
    """The one place a log record becomes bytes: compact JSON plus a newline.

    Raises ``RecordError`` naming the field when a value cannot be written exactly (an
    integer beyond 64 bits, a non-string key, a lone surrogate, a Decimal).
    """
    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise _unwritable(where, find_unwritable(record) or ("(unknown)", str(exc))) from exc


def require_writable(value: Any, where: str) -> None:
    """Refuse ``value`` (``RecordError`` naming the field) unless JSON carries it exactly.

    For records whose numbers come from the user (the manifest, sessions, ``compare.json``):
    unlike ``dumps_line`` it refuses NaN and infinities too, which orjson writes as null.
    """
    found = find_unwritable(value)
    if found is not None:
        raise _unwritable(where, found)


def _unwritable(where: str, found: tuple[str, str]) -> RecordError:
    return RecordError(
        f"{where}: cannot record field {found[0]!r}: it holds {found[1]}; nothing was written"
    )


class JsonlReader(Generic[R]):
    """Streams the records of one JSONL file under the torn-line rule (module docstring).

    Iterate for records, or ``numbered()`` for (line number, record); a missing file reads as
    empty. After iterating: ``valid_bytes`` (where the last whole line ends), ``torn_bytes``
    (a torn tail's length, 0 if none), ``records``, ``duplicates`` and the ``seq_*`` figures
    for ``sequence.check_sequence``. ``keep`` filters raw lines before parsing (a resume skips
    finished jobs cheaply); a skipped line is still checked to look like one ``{...}``.

    ``run`` (the manifest's run id): a line stamped with another run, or numbered but not
    stamped, was copied in and is refused (``ForeignLineError``); a repeat is skipped only
    when it carries ``run``. ``legacy``: lines with neither ``run`` nor ``seq`` are read,
    unless a stamped line follows them. A line ``keep`` leaves unparsed counts as stamped.
    ``decode``: a line as the caller's own record ``R`` (with a ``run`` attribute when
    ``run`` is given), or None to parse it as a dict.
    """

    def __init__(
        self,
        path: Path,
        keep: Callable[[bytes], bool] | None = None,
        *,
        run: str | None = None,
        legacy: bool = False,
        decode: Callable[[bytes], R | None] | None = None,
    ) -> None:
        self.path = path
        self.run, self.legacy = run, legacy
        self.keep = keep
        self.decode = decode
        # With ``run``, a repeat is skipped only when it carries that run id: a line copied in
        # from another run is yielded instead, for the caller to refuse by name.
        self._run_key = b'"run":' + orjson.dumps(run) if run is not None else None
        self.valid_bytes = 0
        self.torn_bytes = 0
        self.records = 0
        self.duplicates = 0
        self.seq_last = 0
        self.seq_count = 0
        self.seq_sum = 0
        self.seq_squares = 0
        self._frame_end = 0  # a compressed log's: see _lines

    @property
    def torn(self) -> bool:
        """True when the file ends in a torn line (ignored, and cut before the next append)."""
        return self.torn_bytes > 0

    def __iter__(self) -> Iterator[R]:
        for _, record in self.numbered():
            yield record

    def _lines(self, handle: BinaryIO, packed: bool) -> Iterator[bytes]:
        """Every whole line; sets ``torn_bytes``. For a compressed log, ``_frame_end`` is
        set before each line to where the data it belongs to ends in the file (the end of
        its frame once its frame's last line is read, else the end of the frame before);
        ``numbered`` counts a plain file's positions itself."""
        if packed:
            end = 0
            frames = zlog.frames(handle, str(self.path))
            while True:
                try:
                    text, frame_end = next(frames)
                except StopIteration as stop:
                    self.torn_bytes = stop.value
                    return
                # Split on newlines only, as reading a plain file does (not on a bare \r).
                lines = [part + b"\n" for part in text.split(b"\n")[:-1]]
                self._frame_end = end
                for line in lines[:-1]:
                    yield line
                if lines:
                    self._frame_end = frame_end
                    yield lines[-1]
                end = frame_end
        for line in handle:
            if not line.endswith(b"\n"):
                self.torn_bytes = len(line)  # only the last line can lack its newline
                return
            yield line

    def numbered(self) -> Iterator[tuple[int, R]]:
        """Yield (line number, record) for every record (1-based, as an editor counts)."""
        path = zlog.stored(self.path)
        if not path.exists():
            return
        keep, decode, loads, run_key, run = (
            self.keep,
            self.decode,
            orjson.loads,
            self._run_key,
            self.run,
        )
        unstamped: int | None = None  # the first legacy line read (``legacy``), if any
        # The per-line counts in locals (a first read's hot loop), in the reader once the
        # loop ends or is left: no caller reads them before.
        last, count, total, squares = self.seq_last, self.seq_count, self.seq_sum, self.seq_squares
        records, valid = self.records, self.valid_bytes
        try:
            with path.open("rb") as handle:
                packed, end = path != self.path, 0
                # A plain file's lines read here, not through _lines (a generator per line).
                for number, line in enumerate(self._lines(handle, True) if packed else handle, 1):
                    if packed:
                        end = self._frame_end
                    elif line[-1] == 10:  # b"\n"
                        end += len(line)
                    else:
                        self.torn_bytes = len(line)  # only the last line can lack its newline
                        return
                    if line[0] in _BLANK and not line.strip():
                        valid = end
                        continue
                    # The writer's ending ``,"seq":123}\n`` read in place, any other by seq_of.
                    # (Every line here ends with its newline and holds more than it: line[-2]
                    # is the byte before the newline, as endswith(b"}\n") would test.)
                    at = line.rfind(_SEQ_KEY, -_SEQ_TAIL) if line[-2] == 125 else -1  # b"}"
                    digits = line[at + _SEQ_KEY_LEN : -2] if at >= 0 else b""
                    seq = int(digits) if digits.isdigit() and len(digits) < 20 else seq_of(line)
                    if seq is not None:
                        if seq > last:
                            last = seq
                            count += 1
                            total += seq
                            squares += seq * seq
                        elif run_key is None or run_key in line:
                            # A record read already: count it once.
                            if not (line.startswith(b"{") and line.rstrip(_BLANK).endswith(b"}")):
                                self._parse(line, number)  # still refuse what is not a record
                            valid = end
                            self.duplicates += 1
                            continue
                        # else another run's line under a lower number: yielded, for the
                        # caller to refuse by name (never counted as this run's repeat)
                    wanted = keep is None or keep(line)
                    if not wanted and line.startswith(b"{") and line.endswith(b"}\n"):
                        if unstamped is not None:  # a line of this run after a legacy one
                            raise self._foreign(unstamped, None)
                        valid = end
                        records += 1
                        continue
                    # The common case without a call (else _parse decodes or refuses it).
                    if decode is None:
                        try:
                            record: Any = loads(line)
                        except orjson.JSONDecodeError:
                            record = None
                        if type(record) is not dict:
                            record = self._parse(line, number)
                    else:
                        record = decode(line)
                        if record is None:
                            record = self._parse(line, number)
                    if run is not None:  # the run id read in place (a first read's hot loop)
                        stamp = record.get("run") if type(record) is dict else record.run
                        if stamp != run or unstamped is not None:
                            unstamped = self._check(number, stamp, record, unstamped)
                    valid = end
                    records += 1
                    if wanted:
                        yield number, record
        finally:
            self.seq_last, self.seq_count, self.seq_sum = last, count, total
            self.seq_squares, self.records, self.valid_bytes = squares, records, valid

    def _check(self, number: int, stamp: Any, record: Any, unstamped: int | None) -> int | None:
        """The first legacy line once line ``number`` (stamped ``stamp``) is read; raises
        ``ForeignLineError`` when either is not this run's."""
        if stamp == self.run:
            raise self._foreign(unstamped or number, None)  # unstamped is set: it is foreign
        fields = record if type(record) is dict else record.fields()
        if stamp is None and self.legacy and "seq" not in fields:
            return number if unstamped is None else unstamped
        raise self._foreign(number, stamp)

    def _foreign(self, number: int, stamp: Any) -> ForeignLineError:
        whose = "carries no run id" if stamp is None else f"belongs to run {stamp!r}"
        return ForeignLineError(
            f"{self.path} line {number} {whose}, not this folder's run {self.run!r} "
            f"({MANIFEST}): it was copied in from another run, and no result may be computed "
            f"from it; delete line {number} or restore the log from a copy"
        )

    def _parse(self, line: bytes, number: int) -> R:
        if self.decode is not None:
            found = self.decode(line)
            if found is not None:
                return found
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            what = f"is not a JSON object ({exc})"
            try:
                line.decode()
            except UnicodeDecodeError as bad:  # orjson calls it "surrogates not allowed"
                what = (
                    f"is not valid UTF-8 (byte 0x{line[bad.start]:02x} at column {bad.start + 1})"
                )
            if (at := run_on(line)) is not None:
                what = TORN.format(column=at + 1)
        else:
            if isinstance(record, dict):
                return record  # type: ignore[return-value]
            what = f"is not a JSON object (found {type(record).__name__})"
        raise LogFormatError(
            f"{self.path} line {number} {what}; only the last line may be torn by a crash, and "
            "only when it lacks its newline, so the log was edited or damaged: restore the "
            f"file, or repair or delete line {number}"
        )


def whole_lines(path: Path) -> Iterator[bytes]:
    """Every whole line of the log ``path`` names, plain or compressed, unparsed (a torn
    tail left out)."""
    reader: JsonlReader[dict[str, Any]] = JsonlReader(path)
    stored = zlog.stored(path)
    if stored.exists():
        with stored.open("rb") as handle:
            yield from reader._lines(handle, stored != path)


def refuse_link(path: Path) -> None:
    """Refuse a log that is a symbolic link: a run's records belong in its own folder."""
    if path.is_symlink():
        raise RunFolderError(
            f"{path} is a symbolic link: a run's log must be a file of its own folder; "
            "replace the link with a copy of the file it points to"
        )


def valid_end(path: Path) -> int:
    """Where the last whole record of ``path`` ends (0 for a missing file)."""
    reader: JsonlReader[dict[str, Any]] = JsonlReader(path, keep=lambda _line: False)
    for _ in reader:
        pass
    return reader.valid_bytes


class JsonlAppender:
    """Appends records to one JSONL file, first cutting off a torn tail left by a crash.

    ``end``: where the valid data ends, when the caller has just read the file (else it is
    scanned). ``buffered``: lines go to the OS at ``flush`` or every ``BUFFER_BYTES``, when
    the caller decides (``harness.running.recorder``), not one by one. ``compress``: a new log
    is stored as zstd frames, one per hand-over (``runfolder.zlog``); a log keeps its form.
    """

    BUFFER_BYTES = 1 << 16

    def __init__(
        self,
        path: Path,
        end: int | None = None,
        *,
        buffered: bool = False,
        compress: bool = False,
    ) -> None:
        packed = zlog.compressed(path)
        self._packed = not path.exists() and (compress or packed.exists())
        self.path = packed if self._packed else path
        if end is None:
            end = valid_end(path)
        self._buffered = buffered
        self._name = path.name
        self._pending = bytearray()  # compressed logs: lines gathered for the next frame
        buffering = self.BUFFER_BYTES if buffered and not self._packed else -1
        refuse_link(self.path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW  # a link made since too
        self._handle: BinaryIO = os.fdopen(os.open(self.path, flags, 0o666), "ab", buffering)
        if self._handle.tell() != end:
            self._handle.truncate(end)
            self._handle.seek(end)

    @property
    def position(self) -> int:
        """Where the file ends: the length of everything written so far (while open)."""
        self._frame()
        return self._handle.tell()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record and hand it to the OS at once (a SIGKILL loses nothing written),
        unless ``buffered``."""
        self.write_line(dumps_line(record, self._name))

    def write_line(self, line: bytes) -> None:
        """Append one record already made bytes by ``dumps_line`` (in another process: the
        one writer of a run in worker processes, ``harness.spreading.pool``), as ``write`` does."""
        if self._packed:
            self._pending += line
            if not self._buffered or len(self._pending) >= self.BUFFER_BYTES:
                self._frame()
            return
        self._handle.write(line)
        if not self._buffered:
            self._handle.flush()

    def _frame(self) -> None:
        """Compressed logs: write the gathered lines as one frame, handed to the OS."""
        if self._pending and not self._handle.closed:
            self._handle.write(zlog.compress_frame(bytes(self._pending)))
            self._handle.flush()
            self._pending.clear()

    def flush(self) -> None:
        """Hand every line written so far to the OS (nothing once closed)."""
        if not self._handle.closed:
            self._frame()
            self._handle.flush()

    def close(self) -> None:
        """Flush to disk and close."""
        if not self._handle.closed:
            self.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

    def abandon(self) -> None:
        """Close without handing the OS what is still buffered: after a failed write, so
        that nothing reaches the disk out of order (resume cuts a torn last line)."""
        if not self._handle.closed:
            self._pending.clear()
            self._handle.raw.close()  # type: ignore[attr-defined]  # the buffer is dropped

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
