"""The two provenance hashes a manifest records, computed one way for harness and analysis.

The case hash is the SHA-256 of the canonical case set (``cases.json`` holds exactly what is
hashed, so ``analyze`` recomputes it from the run folder); the source hash is the SHA-256 of
the format, harness and suite sources that made the requests (``analyze`` recomputes it from
the checkout it runs in, when that checkout has them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

SOURCE_PACKAGES = ("runfolder", "harness", "suites")


def case_digest(payload: Mapping[str, Any]) -> str:
    """SHA-256 of a case set's canonical JSON (sorted keys)."""
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


def source_digest(root: Path, packages: Iterable[str] = SOURCE_PACKAGES) -> str:
    """SHA-256 over every ``.py`` file of ``packages`` under ``root``, path and bytes."""
    digest = hashlib.sha256()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()
