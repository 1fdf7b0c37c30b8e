"""How a cache file of each version keys an exchange (docs/cache.md, "Cache versions").

A key hashes the model spec less ``SETTINGS`` (up to version 2, only its price), the
exchange's occasion (two jobs that send one body are two samples) and the body's JSON bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import xxhash

from harness.wire.encoded import EncodedBody

SCHEMA_VERSION = 3  # what a new file is made as
KEY_VERSIONS = (1, 2, 3)  # the versions read (``keyer`` and the module docstring say how)
# The spec's ``params`` that say how the harness talks to a model, not what the model is or
# how it samples: two runs that differ only in these are answered alike, so share entries.
SETTINGS = frozenset(
    {"price", "timeout_s", "connect_timeout_s", "concurrency", "api_key_set", "key_env"}
)
Key = str | bytes  # hex text up to version 2, the digest's bytes from version 3
Keyer = Callable[[Mapping[str, Any], str], Key]


def _identity(spec: Mapping[str, Any], dropped: frozenset[str]) -> bytes:
    """The spec as sorted-key JSON, less the ``params`` in ``dropped``."""
    params = {k: v for k, v in (spec.get("params") or {}).items() if k not in dropped}
    ident = {k: v for k, v in spec.items() if k != "params"} | {"params": params}
    return orjson.dumps(ident, option=orjson.OPT_SORT_KEYS)


def keyer(spec: Mapping[str, Any], version: int = SCHEMA_VERSION) -> Keyer:
    """The key of ``(body, occasion)`` for the model ``spec`` in a file of ``version``,
    with the spec's share hashed once."""
    if version >= 3:
        head = _identity(spec, SETTINGS) + b"\n"
        digest = xxhash.xxh3_128_digest
        dumps = orjson.dumps

        def key(body: Mapping[str, Any], occasion: str) -> Key:
            data = body.json if type(body) is EncodedBody else dumps(body)
            return digest(b"".join((head, occasion.encode(), b"\n", data)))

        return key
    prefix = hashlib.sha256(_identity(spec, frozenset({"price"})))
    option = orjson.OPT_SORT_KEYS if version == 1 else None

    def hexkey(body: Mapping[str, Any], occasion: str) -> Key:
        h = prefix.copy()
        h.update(b"\n" + occasion.encode() + b"\n")
        if option is None and type(body) is EncodedBody:
            h.update(body.json)  # version 2 keys the same bytes
        else:
            h.update(orjson.dumps(body, option=option))
        return h.hexdigest()

    return hexkey
