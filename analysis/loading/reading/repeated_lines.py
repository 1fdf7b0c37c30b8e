"""outputs.jsonl lines that repeat a line read before but for their job, repeat and ``seq``,
taken without parsing them.

A simulated run's lines differ mostly in those three fields: at 100× (614,400 outputs) only
6,144 lines are distinct once the job id, the repeat number and ``seq`` are left out, and
parsing each line (orjson) and reading its fields (``OutputsReader``, ``PathsReader``) was
most of a first read's outputs pass. Here the raw line is split around the three values;
when the rest of its bytes equal those of a line read before, the readers are given what
that line made (its row, its unit), with this line's job and repeat, and the line is not
parsed (``JsonlReader``'s ``keep``: it is still counted, and its ``seq`` checked).

Exact by construction: a line is taken here only when its bytes, but for a job string
without escapes, a repeat in plain digits and the writer's ``,"seq":N}`` ending, equal
those of a line parsed before, read whole and checked (``JsonlReader``'s ``run``, the readers'
own checks), whose parsed job and repeat were those read from its bytes and that named its case
and family (the defaults of both are the job). Such a line parses to the same record but
for the job, repeat and ``seq`` (every other byte is equal, and neither repeated key
appears elsewhere in it), so the readers' rows are the ones they would make of it. A real
model's lines rarely repeat: once a few thousand lines are learned with few repeats met,
the cache is dropped and each line is parsed as before (at most ``LEARNED`` are kept).
"""

from __future__ import annotations

from typing import Any

from analysis.loading.logs.outputs import OutputsReader
from analysis.loading.probabilities.interval_paths import PathsReader
from runfolder import OutputLine

__all__ = ["LEARNED", "RepeatedLines"]

LEARNED = 20_000  # distinct lines kept at most (~600 bytes each at 100x)
_CHECKED = 5_000  # every so many lines learned: dropped if a quarter as many repeats were met

_JOB = b'{"job":"'  # the writer's first field
_REPEAT = b',"repeat":'
_SEQ = b',"seq":'
_SEQ_TAIL = 40  # as runfolder.jsonl: the key, 20 digits, "}" and a newline
# Keys whose value is taken from the line's bytes: found once in a line, never twice.
_TAKEN = (b'"job":', b'"repeat":')
_Key = tuple[bytes, bytes]
_Pending = tuple[_Key, str, int]


class RepeatedLines:
    """The ``keep`` filter of the outputs pass's reader: ``keep(line)`` False when the line
    repeats one read before (it is then given to the readers here), True to parse it; then
    ``learn(record)`` after the readers took each parsed line."""

    def __init__(self, outputs: OutputsReader | None, paths: PathsReader | None) -> None:
        self.outputs, self.paths = outputs, paths
        self.lines: dict[_Key, tuple[Any, Any, int]] = {}
        self.pending: _Pending | None = None  # the last line passed on to be parsed
        self.repeats = 0
        self.on = True

    def keep(self, line: bytes) -> bool:
        """False when ``line`` was taken here (it repeats a line read before but for its
        job, repeat and ``seq``), True when it must be parsed."""
        self.pending = None
        if not self.on or not line.startswith(_JOB):
            return True
        end = line.find(b'"', 8)
        at = line.find(_REPEAT, end)
        seq = line.rfind(_SEQ, len(line) - _SEQ_TAIL)
        if end < 0 or at < 0 or seq < at or not line.endswith(b"}\n"):
            return True
        after = line.find(b",", at + 10)
        digits, number = line[at + 10 : after], line[seq + 7 : -2]
        job_bytes = line[8:end]
        # JSON's own spellings only: digits without a leading zero, a job string without
        # escapes or control characters (anything else is parsed).
        if not (
            digits.isdigit()
            and number.isdigit()
            and (len(digits) == 1 or digits[0] != 48)  # b"0"
            and (len(number) == 1 or number[0] != 48)
            and len(digits) < 19
            and job_bytes.isascii()
            and b"\\" not in job_bytes
        ):
            return True
        job = job_bytes.decode()
        if not job.isprintable():
            return True
        key = (line[end:at], line[after:seq])
        known = self.lines.get(key)
        repeat = int(digits)
        if known is None or (self.paths is not None and known[2] != self.paths.generation):
            self.pending = key, job, repeat
            return True
        self.repeats += 1
        if self.outputs is not None:
            self.outputs.repeated(job, repeat, known[0])
        if self.paths is not None:
            self.paths.repeated(job, repeat, known[1])
        return False

    def learn(self, record: OutputLine) -> None:
        """After the readers took the line ``keep`` passed on: what they made of it, kept
        for the lines that repeat it (when it is one of the writer's plain lines)."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        key, job, repeat = pending
        found = record.get("repeat")
        if (
            record.get("job") != job
            or found.__class__ is not int
            or found != repeat
            or "case" not in record
            or "family" not in record
            or any(name in part for name in _TAKEN for part in key)
        ):
            return
        learned = len(self.lines)
        if learned % _CHECKED == 0 and self.repeats * 4 < learned:
            self.lines, self.on = {}, False  # lines that rarely repeat: parse them all
            return
        if learned >= LEARNED:
            return
        paths = self.paths
        self.lines[key] = (
            None if self.outputs is None else self.outputs.last,
            None if paths is None else paths.last,
            0 if paths is None else paths.generation,
        )
