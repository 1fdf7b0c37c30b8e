"""The manifest's seal: what the manifest held when a session last accepted it.

Every ``sessions.jsonl`` line records a SHA-256 of the manifest's content
(``manifest_sha256``) and a short digest of each field by dotted name (``manifest_fields``);
the newest sealed session is the reference. Why there: docs/reliability.md ("The manifest is
sealed"). Digests rather than a copy: they name the edited field without keeping a second
copy of the settings that could be taken for the truth. The digest is of the parsed content
(keys sorted), so reformatting the file is not an edit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

_FIELD_DIGEST_CHARS = 16  # 64 bits per field: an accidental match is not a concern


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def manifest_digest(raw: Mapping[str, Any]) -> str:
    """SHA-256 of a manifest's content (keys sorted), the seal's first part."""
    return hashlib.sha256(_canonical(dict(raw))).hexdigest()


def _leaves(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            _leaves(item, f"{path}.{key}" if path else str(key), out)
    else:
        out[path] = value  # lists (decoders, orders) are one field each


def field_digests(raw: Mapping[str, Any]) -> dict[str, str]:
    """A short digest of each field of a manifest, by dotted name, the seal's second part."""
    leaves: dict[str, Any] = {}
    _leaves(raw, "", leaves)
    return {
        name: hashlib.sha256(_canonical(value)).hexdigest()[:_FIELD_DIGEST_CHARS]
        for name, value in sorted(leaves.items())
    }


def _shown(value: Any) -> str:
    text = _canonical(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def edited_fields(raw: Mapping[str, Any], sealed: Mapping[str, str]) -> list[str]:
    """Each field of ``raw`` that differs from the seal's ``sealed`` field digests, in words."""
    leaves: dict[str, Any] = {}
    _leaves(raw, "", leaves)
    now = field_digests(raw)
    found = []
    for name in sorted(now.keys() | sealed.keys()):
        if name not in now:
            found.append(f"field '{name}' was removed")
        elif name not in sealed:
            found.append(f"field '{name}' was added (now {_shown(leaves[name])})")
        elif now[name] != sealed[name]:
            found.append(f"field '{name}' was edited (now {_shown(leaves[name])})")
    return found
