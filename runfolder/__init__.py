"""The run-folder format as code: what ``harness`` writes and ``analysis`` reads.

A run folder holds ``manifest.json`` (written once), ``requests.jsonl`` and ``outputs.jsonl``
(append-only logs), ``sessions.jsonl`` (one line per run or resume) and a lock. This package
owns their names, the typed records, the manifest, the ONE JSONL writer and the ONE reader
(with one torn-line rule, explained in ``runfolder.jsonl``), the lock and the errors.

It depends on the standard library and orjson only, and imports neither ``harness`` nor
``analysis``: both import it, so the format has one owner.
"""

from runfolder.errors import LogFormatError, RecordError, RunFolderError
from runfolder.jsonl import JsonlAppender, JsonlReader, dumps_line, find_unwritable, valid_end
from runfolder.layout import FORMAT_VERSION, LOCK, MANIFEST, OUTPUTS, REQUESTS, SESSIONS
from runfolder.lock import RunLock
from runfolder.manifest import (
    Fields,
    Manifest,
    ModelInfo,
    encode_manifest,
    load_manifest,
    read_manifest_object,
    write_manifest,
)
from runfolder.records import (
    ERROR_KINDS,
    ErrorInfo,
    ErrorKind,
    ExchangeRecord,
    ImportedFrom,
    LimitsRecord,
    OutputIdentity,
    OutputLine,
    OutputRecord,
    OutputResult,
    OutputStatus,
    RequestLine,
    SessionCommand,
    SessionRecord,
    TraceStep,
    Usage,
    error_kind,
)
from runfolder.sessions import append_session, read_sessions

__all__ = [
    "ERROR_KINDS",
    "FORMAT_VERSION",
    "LOCK",
    "MANIFEST",
    "OUTPUTS",
    "REQUESTS",
    "SESSIONS",
    "ErrorInfo",
    "ErrorKind",
    "ExchangeRecord",
    "Fields",
    "ImportedFrom",
    "JsonlAppender",
    "JsonlReader",
    "LimitsRecord",
    "LogFormatError",
    "Manifest",
    "ModelInfo",
    "OutputIdentity",
    "OutputLine",
    "OutputRecord",
    "OutputResult",
    "OutputStatus",
    "RecordError",
    "RequestLine",
    "RunFolderError",
    "RunLock",
    "SessionCommand",
    "SessionRecord",
    "TraceStep",
    "Usage",
    "append_session",
    "dumps_line",
    "encode_manifest",
    "error_kind",
    "find_unwritable",
    "load_manifest",
    "read_manifest_object",
    "read_sessions",
    "valid_end",
    "write_manifest",
]
