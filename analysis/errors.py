"""Errors that the analysis package reports to its users.

The trees (each message names the bad value and says how to fix it)::

    AnalysisError            base of the errors raised only here
    ├── SelectionError       a requested job or decoder is not in the run (report --job/--decoder)
    ├── DiffRefusedError     two runs cannot be compared (different suite or case set)
    └── StrictRefusedError   --strict was given and a warning banner applies

    RunFolderError           (runfolder's class) the path is not a readable run folder
    └── LogFormatError       (runfolder's class) a JSONL line other than a torn tail

The run-folder errors are the format package's own classes, re-exported: the one reader
raises them without knowing this package, and an ``except`` here must catch what it raises.
The CLI turns any of these into one line on stderr and exit code 2.
"""

from __future__ import annotations

from pathlib import Path

from runfolder import LogFormatError, RunFolderError

__all__ = [
    "AnalysisError",
    "DiffRefusedError",
    "LogFormatError",
    "RunFolderError",
    "SelectionError",
    "StrictRefusedError",
    "bad_output_line",
]


class AnalysisError(Exception):
    """Base class: a problem with the input that the user can fix."""


class SelectionError(AnalysisError):
    """A job or decoder asked for on the command line does not exist in the run."""


class DiffRefusedError(AnalysisError):
    """Two runs do not share a suite and case set, so their metrics are not comparable."""


class StrictRefusedError(AnalysisError):
    """``--strict`` was given and the run (or the pair of runs) has a warning banner."""


def bad_output_line(path: Path, lineno: int, reason: object) -> LogFormatError:
    """The one-line refusal of an outputs.jsonl line that no reader can use."""
    return LogFormatError(
        f"{path} line {lineno}: {reason}; outputs.jsonl lines are written by "
        "`numericjev run` — repair the line or re-run the job"
    )
