"""Errors that the analysis package reports to its users.

The tree (each message names the bad value and says how to fix it)::

    AnalysisError            base of every error raised here
    ├── RunFolderError       the path is not a readable run folder (missing, no or bad manifest)
    ├── LogFormatError       a JSONL line other than a torn last line cannot be read
    ├── SelectionError       a requested job or decoder is not in the run (report --job/--decoder)
    └── DiffRefusedError     two runs cannot be compared (different suite or case set)

The CLI turns any of these into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "AnalysisError",
    "DiffRefusedError",
    "LogFormatError",
    "RunFolderError",
    "SelectionError",
]


class AnalysisError(Exception):
    """Base class: a problem with the input that the user can fix."""


class RunFolderError(AnalysisError):
    """The path is missing, is not a run folder, or its manifest cannot be used."""


class LogFormatError(AnalysisError):
    """A line of outputs.jsonl or requests.jsonl cannot be read and is not a torn last line."""


class SelectionError(AnalysisError):
    """A job or decoder asked for on the command line does not exist in the run."""


class DiffRefusedError(AnalysisError):
    """Two runs do not share a suite and case set, so their metrics are not comparable."""
