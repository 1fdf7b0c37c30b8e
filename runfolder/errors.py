"""The run-folder format's errors: one base for every folder or log problem.

RunFolderError       a run folder that is missing, foreign, locked, or whose manifest is unusable
├── LogFormatError   a JSONL line that is not a record and is not a torn tail
│   └── ForeignLineError  a log line of another run (runfolder.integrity)
└── RecordError      a record that cannot be written exactly (nothing is written)

``harness`` and ``analysis`` re-export these classes rather than subclass them: the format
code raises them without knowing either tree, so a single class per concept lets an
``except`` anywhere catch a folder problem whichever layer noticed it. Both command lines
translate ``RunFolderError`` into one line and exit status 2.
"""

from __future__ import annotations


class RunFolderError(Exception):
    """A run folder that cannot be used as asked; the message names the file and the fix."""


class LogFormatError(RunFolderError):
    """A line of a JSONL log is not a JSON object and is not the torn tail a crash leaves."""


class RecordError(RunFolderError):
    """A value that JSON cannot carry exactly (e.g. an integer beyond 64 bits, NaN)."""


class ForeignLineError(LogFormatError):
    """A log line stamped with another run's id (or numbered but not stamped): copied in."""
