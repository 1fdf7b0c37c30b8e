"""Compressed logs: a JSONL log stored as a sequence of zstd frames, one per flush.

Every frame holds whole lines and is written by one ``write``, so the torn-line rule becomes
a torn-frame rule (docs/run-folder.md, "Compressed logs"): an incomplete last frame is
ignored and cut before the next append; a complete frame not ending with a newline, or bytes
that are not zstd, are refused. Readers name the plain path; ``stored`` finds the file that
holds the log (the plain one wins: ``compact`` writes the compressed file whole before it
removes the plain one, so both exist only for a moment, holding the same records).
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import BinaryIO

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

from runfolder.errors import LogFormatError

SUFFIX = ".zst"
# zstd's default level: on the affine suite's logs it compresses about as well as level 9
# at a fraction of the CPU (docs/performance.md, "Logs").
LEVEL = 3
_CHUNK = 1 << 20


def compressed(path: Path) -> Path:
    """The compressed file of the log ``path`` names (``requests.jsonl.zst``)."""
    return path.with_name(path.name + SUFFIX)


def stored(path: Path) -> Path:
    """The file that holds the log ``path`` names: the plain file if it exists, else the
    compressed one if that exists, else ``path`` (a log not written yet)."""
    if path.exists():
        return path
    packed = compressed(path)
    return packed if packed.exists() else path


def compress_frame(lines: bytes) -> bytes:
    """One complete zstd frame holding ``lines`` (whole lines, each ending with a newline)."""
    return zstd.compress(lines, level=LEVEL)


def frames(handle: BinaryIO, name: str) -> Generator[tuple[bytes, int], None, int]:
    """Each complete frame of a compressed log, decompressed, with the offset where it ends
    in the file. A torn last frame is not yielded; its length is the generator's return value.
    """
    decompressor = zstd.ZstdDecompressor()
    parts: list[bytes] = []
    start = 0  # where the data being fed begins in the file
    frame_end = 0  # where the last complete frame ends
    number = 0
    while chunk := handle.read(_CHUNK):
        data = chunk
        while data:
            try:
                parts.append(decompressor.decompress(data))
            except zstd.ZstdError as exc:
                raise LogFormatError(
                    f"{name}: frame {number + 1} (at byte {frame_end}) is not zstd data ({exc}); "
                    "only the last frame may be torn by a crash, so the file was edited or "
                    f"damaged: restore it, or cut it at byte {frame_end}"
                ) from None
            if not decompressor.eof:
                start += len(data)
                break
            leftover = decompressor.unused_data
            frame_end = start + len(data) - len(leftover)
            number += 1
            text = b"".join(parts)
            if text and not text.endswith(b"\n"):
                raise LogFormatError(
                    f"{name}: frame {number} does not end with a whole line; the writer never "
                    "makes one, so the file was edited or damaged: restore it"
                )
            yield text, frame_end
            parts, decompressor = [], zstd.ZstdDecompressor()
            start, data = frame_end, leftover
    return start - frame_end
