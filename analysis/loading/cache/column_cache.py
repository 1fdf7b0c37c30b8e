"""A run's columns kept beside its logs, so that reading them again costs a file load.

Reading a 100× affine run's logs (1.6 GB of JSON lines) takes tens of seconds, nearly all of
it parsing; the columns it yields load in well under a second. ``numericjev analyze``,
``report``, ``diff`` and ``compare`` therefore keep them in ``RUN/.columns/`` (``logs.npz``:
outputs and exchanges; ``answers.npz``: the Probabilities join; ``rounds.npz``: the HTML
report's job viewer) and read them back while the logs are unchanged.

A kept file is used only when its key matches: each log's size, modification time, inode
and a digest of its first and last 64 KiB, the option orders paired, and a digest of the
code that builds the columns (``analysis.loading`` and ``runfolder``, and the installed
version). A resume, a compact
or an edit changes the key; a mismatch, a damaged file or an unwritable folder means the
logs are read as if nothing were kept. Files are written whole to a temporary name, then
renamed: a kill leaves the old file or the new one, never half of one. Each array is one
zstd-compressed member of an uncompressed zip (an ``.npz`` of byte arrays, a JSON header
naming dtypes and shapes), read without pickling (``allow_pickle=False``): a kept file from
someone else's run folder can hold only numbers and strings. ``NUMERICJEV_COLUMN_CACHE=off`` (or ``--no-cache``) reads
the logs every time and keeps nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import math
import os
import sys
import zipfile
from array import array
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

import runfolder
from analysis.loading.columns.row_chunks import release_freed
from runfolder import stored

__all__ = [
    "CACHE_DIR",
    "CACHE_ENV",
    "RUN_LOGS",
    "cache_enabled",
    "cache_key",
    "cached",
    "keep",
    "log_key",
    "recall",
    "switched_off",
]

CACHE_DIR = ".columns"
CACHE_ENV = "NUMERICJEV_COLUMN_CACHE"
RUN_LOGS = ("outputs.jsonl", "requests.jsonl")
_FORMAT = 2  # 2: members zstd-compressed
_EDGE = 1 << 16  # bytes digested at each end of a log
_SPEC = "__spec__"
_CODED = 1024  # tuples of strings longer than this are stored as a table and codes
_LOADING = Path(__file__).parents[1]  # analysis/loading
_RUNFOLDER = Path(runfolder.__file__).parent

T = TypeVar("T")


_OFF: ContextVar[bool] = ContextVar("column_cache_off", default=False)


def cache_enabled() -> bool:
    """False inside ``switched_off`` or when ``NUMERICJEV_COLUMN_CACHE`` says off (0, off,
    no, false)."""
    if _OFF.get():
        return False
    return os.environ.get(CACHE_ENV, "").strip().lower() not in ("0", "off", "no", "false")


@contextmanager
def switched_off(off: bool = True) -> Iterator[None]:
    """Within the block, read the logs every time and keep nothing (``--no-cache``)."""
    token = _OFF.set(off)
    try:
        yield
    finally:
        _OFF.reset(token)


@functools.cache
def _code_digest() -> str:
    """What built the columns: the reading code's bytes (a change rebuilds every cache)."""
    digest = hashlib.blake2b(digest_size=16)
    with contextlib.suppress(PackageNotFoundError):  # a checkout run without installing
        digest.update(version("numericjev").encode())
    # analysis/loading whole (its subpackages too: this file sits in one of them), then runfolder.
    for root, found in ((_LOADING, _LOADING.rglob), (_RUNFOLDER, _RUNFOLDER.glob)):
        for path in sorted(found("*.py")):
            name = path.relative_to(root).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def log_key(path: Path) -> dict[str, Any]:
    """Identify the log ``path`` names (plain or compressed) without reading all of it."""
    found = stored(path)
    if not found.is_file():
        return {"name": path.name, "absent": True}
    stat = found.stat()
    digest = hashlib.blake2b(digest_size=16)
    with found.open("rb") as handle:
        digest.update(handle.read(_EDGE))
        if stat.st_size > _EDGE:
            handle.seek(max(stat.st_size - _EDGE, _EDGE))
            digest.update(handle.read(_EDGE))
    return {
        "name": found.name,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
        "edges": digest.hexdigest(),
    }


def cache_key(run_dir: Path, logs: tuple[str, ...], **extra: Any) -> dict[str, Any] | None:
    """The key of what reading ``logs`` of ``run_dir`` yields (``extra``: the reader's
    options); None when the cache is off. Take it before reading: ``keep`` compares it with
    the logs afterwards, so a log that grew meanwhile is not kept under the old key."""
    if not cache_enabled():
        return None
    return {
        "format": _FORMAT,
        "code": _code_digest(),
        "names": list(logs),
        "logs": [log_key(run_dir / name) for name in logs],
        "extra": extra,
    }


# Encoding: a JSON spec mirrors the value; arrays and long string tuples go into the npz.


def _encode(value: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    if isinstance(value, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"array": name}
    if isinstance(value, array):
        name = f"a{len(arrays)}"
        arrays[name] = np.frombuffer(value, np.dtype(value.typecode))
        return {"typed": name, "typecode": value.typecode}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "class": type(value).__name__,
            "fields": {
                f.name: _encode(getattr(value, f.name), arrays, f"{where}.{f.name}")
                for f in dataclasses.fields(value)
            },
        }
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"dict": {k: _encode(v, arrays, f"{where}/{k}") for k, v in value.items()}}
        return {
            "pairs": [
                [_encode(k, arrays, where), _encode(v, arrays, where)] for k, v in value.items()
            ]
        }
    if isinstance(value, frozenset):
        return {"frozenset": sorted(value)}
    if isinstance(value, tuple | list):
        kind = type(value).__name__
        if len(value) > _CODED and all(v is None or isinstance(v, str) for v in value):
            table: dict[str | None, int] = {}
            codes = np.fromiter((table.setdefault(v, len(table)) for v in value), np.int32)
            name = f"a{len(arrays)}"
            arrays[name] = codes
            return {"strings": list(table), "codes": name, "as": kind}
        return {kind: [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot keep a {type(value).__name__} at {where}")


def _decode(spec: Any, arrays: Any, classes: Mapping[str, type]) -> Any:
    if not isinstance(spec, dict):
        return spec
    if "array" in spec:
        return arrays[spec["array"]]
    if "typed" in spec:
        typed = array(spec["typecode"])
        typed.frombytes(arrays.raw(spec["typed"]))
        return typed
    if "class" in spec:
        fields = {k: _decode(v, arrays, classes) for k, v in spec["fields"].items()}
        return classes[spec["class"]](**fields)
    if "dict" in spec:
        return {k: _decode(v, arrays, classes) for k, v in spec["dict"].items()}
    if "pairs" in spec:
        return {_decode(k, arrays, classes): _decode(v, arrays, classes) for k, v in spec["pairs"]}
    if "frozenset" in spec:
        return frozenset(spec["frozenset"])
    if "strings" in spec:
        strings = spec["strings"]
        found = [strings[i] for i in arrays[spec["codes"]].tolist()]
        return found if spec["as"] == "list" else tuple(found)
    if "tuple" in spec:
        return tuple(_decode(v, arrays, classes) for v in spec["tuple"])
    if "list" in spec:
        return [_decode(v, arrays, classes) for v in spec["list"]]
    return float(spec["float"])


def _packed(data: np.ndarray) -> np.ndarray:
    """An array's bytes, zstd-compressed (columns of codes and repeated numbers shrink ~15×
    on a sim run, and decompress at about 1 GB/s), read from its own buffer (no copy)."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(zstd.compress(raw.data, level=3), np.uint8)


def _write_member(archive: zipfile.ZipFile, member: str, data: np.ndarray) -> None:
    """One ``.npy`` member, stored, as ``np.savez`` writes it (pickling refused)."""
    with archive.open(f"{member}.npy", "w", force_zip64=True) as out:
        np.lib.format.write_array(out, data, allow_pickle=False)


class _Members:
    """The arrays of an open kept file, decompressed one at a time as they are asked for."""

    def __init__(self, kept: Any, shapes: Mapping[str, list[Any]]) -> None:
        self.kept, self.shapes = kept, shapes

    def raw(self, name: str) -> bytes:
        """The array's bytes."""
        return zstd.decompress(self.kept[name].tobytes())

    def __getitem__(self, name: str) -> np.ndarray:
        dtype, shape = self.shapes[name]
        # A bytearray, so that the array is writable as one read from the logs is.
        return np.frombuffer(bytearray(self.raw(name)), np.dtype(dtype)).reshape(shape)


def recall(
    run_dir: Path, name: str, key: dict[str, Any] | None, classes: Mapping[str, type]
) -> Any:
    """The value kept as ``name`` under ``key``, or None (cache off, absent, stale, or
    damaged: the caller reads the logs)."""
    path = run_dir / CACHE_DIR / f"{name}.npz"
    if key is None or not path.is_file():
        return None
    try:
        # Opened here, not by np.load: it leaks the handle of a file that is not a zip.
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as kept:
            header = orjson.loads(kept[_SPEC].tobytes())
            if header.get("key") != key:
                return None
            # Arrays are read as the spec reaches them, not all at once.
            return _decode(header["value"], _Members(kept, header["members"]), classes)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile, zstd.ZstdError):
        return None  # damaged, or written by another version


def keep(run_dir: Path, name: str, key: dict[str, Any] | None, value: Any) -> Path | None:
    """Write ``value`` as ``name`` under ``key`` (taken before the logs were read) if the
    logs are still what the key says; None when not kept (cache off, logs changed while
    read, or a folder that cannot be written: the value is still good, just not kept)."""
    if key is None or key != cache_key(run_dir, tuple(key["names"]), **key["extra"]):
        return None
    folder = run_dir / CACHE_DIR
    path = folder / f"{name}.npz"
    temporary = folder / f".{name}.{os.getpid()}.tmp.npz"
    arrays: dict[str, np.ndarray] = {}
    try:
        spec = _encode(value, arrays, name)
        shapes = {name: [data.dtype.str, list(data.shape)] for name, data in arrays.items()}
        header = orjson.dumps({"key": key, "value": spec, "members": shapes})
        folder.mkdir(exist_ok=True)
        with temporary.open("wb") as handle, zipfile.ZipFile(handle, "w") as archive:
            _write_member(archive, _SPEC, np.frombuffer(header, np.uint8))
            # Each array compressed as it is written: one compressed copy alive at a time,
            # not all of them (~35 MB more at the peak of a 100× run's first `report`).
            for member, data in arrays.items():
                _write_member(archive, member, _packed(data))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        return None
    finally:
        release_freed()  # the compressed copies' pages, before the caller's next step
    return path


def cached(
    run_dir: Path,
    name: str,
    key: dict[str, Any] | None,
    classes: Mapping[str, type],
    build: Callable[[], T],
) -> T:
    """What was kept as ``name`` under ``key``, else ``build()`` (then kept)."""
    found = recall(run_dir, name, key, classes)
    if found is not None:
        return found
    value = build()
    keep(run_dir, name, key, value)
    return value
