"""The run-folder format as code: what ``harness`` writes and ``analysis`` reads.

It owns the file names (docs/run-folder.md), the typed records, the manifest, the ONE JSONL
writer and reader (``runfolder.jsonl``), the record numbers (``runfolder.sequence``), the
manifest's seal and the one integrity check every reader makes, the lock and the errors; and
the comparison folder's ``compare.json``, how run folders are named, listed and found
(``latest``), shared by both command lines. It depends on the standard library and orjson
only, and imports neither ``harness`` nor ``analysis``: both import it.
"""

from runfolder.comparison import (
    MIN_LOOK,
    ComparisonCell,
    ComparisonRecord,
    is_comparison,
    load_comparison,
    look_sizes,
    write_comparison,
)
from runfolder.errors import LogFormatError, RecordError, RunFolderError
from runfolder.finding import RUNS_ROOT, entries, resolve_run, unique_folder
from runfolder.hashing import SOURCE_PACKAGES, case_digest, source_digest
from runfolder.integrity import Finding, new_run_id, verify
from runfolder.jsonl import (
    JsonlAppender,
    JsonlReader,
    dumps_line,
    refuse_link,
    seq_of,
    valid_end,
    whole_lines,
)
from runfolder.layout import (
    COMPARISON,
    LOCK,
    MANIFEST,
    OUTPUTS,
    REQUESTS,
    SESSIONS,
    TOTALS,
)
from runfolder.line_search import job_records, lines_containing
from runfolder.listing import job_status, list_rows
from runfolder.lock import RunLock
from runfolder.manifest import (
    Fields,
    Manifest,
    ModelInfo,
    encode_manifest,
    load_manifest,
    read_cases,
    read_manifest_object,
    write_cases,
    write_manifest,
)
from runfolder.records import (
    ERROR_KINDS,
    ErrorKind,
    LimitsRecord,
    OutputIdentity,
    OutputLine,
    OutputRecord,
    OutputResult,
    RequestLine,
    SessionCommand,
    SessionRecord,
    Usage,
    error_kind,
)
from runfolder.seal import field_digests, manifest_digest
from runfolder.sequence import check_sequence, scan_logs
from runfolder.sessions import append_session, read_sessions
from runfolder.totals import read_totals, totals_current, write_totals
from runfolder.zlog import compressed, stored

__all__ = [
    "COMPARISON",
    "ERROR_KINDS",
    "LOCK",
    "MANIFEST",
    "MIN_LOOK",
    "OUTPUTS",
    "REQUESTS",
    "RUNS_ROOT",
    "SESSIONS",
    "SOURCE_PACKAGES",
    "TOTALS",
    "ComparisonCell",
    "ComparisonRecord",
    "ErrorKind",
    "Fields",
    "Finding",
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
    "RecordError",
    "RequestLine",
    "RunFolderError",
    "RunLock",
    "SessionCommand",
    "SessionRecord",
    "Usage",
    "append_session",
    "case_digest",
    "check_sequence",
    "compressed",
    "dumps_line",
    "encode_manifest",
    "entries",
    "error_kind",
    "field_digests",
    "is_comparison",
    "job_records",
    "job_status",
    "lines_containing",
    "list_rows",
    "load_comparison",
    "load_manifest",
    "look_sizes",
    "manifest_digest",
    "new_run_id",
    "read_cases",
    "read_manifest_object",
    "read_sessions",
    "read_totals",
    "refuse_link",
    "resolve_run",
    "scan_logs",
    "seq_of",
    "source_digest",
    "stored",
    "totals_current",
    "unique_folder",
    "valid_end",
    "verify",
    "whole_lines",
    "write_cases",
    "write_comparison",
    "write_manifest",
    "write_totals",
]
