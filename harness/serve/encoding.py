"""Request bodies as clients send them: ``Content-Encoding`` identity, gzip or zstd.

The official ``typesafe-sdk`` compresses request bodies of 1 KiB or more with zstd whenever
zstd is importable (its ``[zstd]`` extra, or Python 3.14), so serve-sim must read them.
Decoding stops at the body limit, so a small compressed body cannot expand past it.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable

if sys.version_info >= (3, 14):  # pragma: no cover - exercised on 3.14 only
    from compression.zstd import ZstdDecompressor, ZstdError
else:
    from backports.zstd import ZstdDecompressor, ZstdError


class EncodingError(ValueError):
    """A body that cannot be decoded; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _gunzip(data: bytes, limit: int) -> tuple[bytes, bool]:
    # wbits 16 + MAX_WBITS: a gzip header and trailer around the deflate stream.
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, limit + 1)
    return out, inflater.eof


def _unzstd(data: bytes, limit: int) -> tuple[bytes, bool]:
    decompressor = ZstdDecompressor()
    out = decompressor.decompress(data, max_length=limit + 1)
    return out, decompressor.eof


# Each returns at most limit + 1 bytes, and whether the stream ended there.
_DECODERS: dict[str, Callable[[bytes, int], tuple[bytes, bool]]] = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "zstd": _unzstd,
}


def decode_body(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """``body`` with its content codings undone, last applied first; EncodingError 415 for
    an unknown coding, 400 for data that does not decode, 413 past ``limit`` bytes."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise EncodingError(
                415,
                f"unsupported Content-Encoding {coding!r}; send identity, gzip or zstd",
            )
        try:
            body, complete = decoder(body, limit)
        except (zlib.error, ZstdError) as exc:
            raise EncodingError(400, f"the {coding} request body does not decode: {exc}") from None
        if len(body) > limit:
            raise EncodingError(413, f"the decoded request body exceeds {limit} bytes")
        if not complete:
            raise EncodingError(400, f"the {coding} request body ends early")
    return body
