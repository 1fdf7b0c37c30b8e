"""The one integrity check of a run folder, shared by every reader (docs/run-folder.md).

Every command that reads a run folder checks the same three things:

- each log line's run id (``JsonlReader``'s ``run``, as each line is read): a line stamped
  with another run, or numbered but not stamped, was copied in, and every reader refuses it
  (``ForeignLineError``) before the record numbers are checked, so a foreign line whose
  ``seq`` does not fit is named as foreign, not as a cut log;
- the record numbers (``runfolder.sequence``), once both logs are read;
- the manifest's seal (``verify``, ``runfolder.seal``). The seal lives in a file that can be
  deleted or emptied, so stamped logs beside a ``sessions.jsonl`` that is missing or holds no
  seal are a finding too. Findings are warnings where the manifest only labels a result,
  refusals under ``--strict`` and by ``resume`` unless ``--allow-mismatch``.

The run id is made at creation (``new_run_id``), so two runs whose folders share a name do
not share it; older runs carry their folder's name and read as before, as do folders whose
lines carry no ``run`` and no ``seq`` (analysis's ``legacy=True``; never resumed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from runfolder.jsonl import JsonlReader, whole_lines
from runfolder.layout import MANIFEST, OUTPUTS, REQUESTS, SESSIONS
from runfolder.manifest import read_manifest_object
from runfolder.seal import edited_fields, manifest_digest


def new_run_id(name: str) -> str:
    """A new run's id: its folder's ``name`` (for people) and 64 random bits (for the check)."""
    return f"{name}-{uuid4().hex[:16]}"


def _stamped(folder: Path) -> bool:
    """Whether the run's logs were written by a session (their first record carries a run id).

    Only the first record of each log is read: the other lines are checked by the readers.
    """
    for name in (REQUESTS, OUTPUTS):
        for line in whole_lines(folder / name):
            if line.strip():
                return b'"run":' in line
    return False


@dataclass(frozen=True)
class Finding:
    """Something the seal check found: ``kind`` is a stable key, ``message`` one line naming
    the file (and line) and the cause."""

    kind: str  # sessions_missing | sessions_unsealed | session_foreign | manifest_edited
    message: str


def verify(folder: Path, raw: Mapping[str, Any] | None = None) -> tuple[Finding, ...]:
    """What is wrong with the seal of ``folder``'s manifest (``raw``, as on disk: read when
    not given). A run whose logs no session wrote (made before seals, or not yet begun) has
    nothing to seal."""
    raw = read_manifest_object(folder) if raw is None else raw
    path = folder / SESSIONS
    run_id = str(raw.get("run_id"))
    found: list[Finding] = []
    seal: tuple[int, Mapping[str, Any]] | None = None
    for lineno, record in JsonlReader[dict[str, Any]](path).numbered():
        if record.get("run") not in (run_id, None):
            found.append(
                Finding(
                    "session_foreign",
                    f"{path} line {lineno} belongs to run {record.get('run')!r}, not this "
                    f"folder's run {run_id!r}: its seal is not this manifest's; delete line "
                    f"{lineno} or restore the file from a copy",
                )
            )
        elif isinstance(record.get("manifest_sha256"), str) and isinstance(
            record.get("manifest_fields"), dict
        ):
            seal = (lineno, record)
    if seal is None and _stamped(folder):  # a missing file reads as empty
        missing = not path.exists()
        found.append(
            Finding(
                "sessions_missing" if missing else "sessions_unsealed",
                f"{path} {'is missing' if missing else 'holds no seal'}, though the logs were "
                f"written by a session: it holds the seal of {MANIFEST}, so an edit of the "
                "manifest can no longer be detected; restore it from a copy",
            )
        )
    elif seal is not None and manifest_digest(raw) != seal[1]["manifest_sha256"]:
        edits = edited_fields(raw, seal[1]["manifest_fields"]) or ["its content changed"]
        found.append(
            Finding(
                "manifest_edited",
                f"{folder / MANIFEST} was edited since its last session: "
                + ", ".join(edits)
                + f" (its seal: {path} line {seal[0]})",
            )
        )
    return tuple(found)
