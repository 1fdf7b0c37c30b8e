"""``manifest.json``: the one ``Manifest`` type (and its ``ModelInfo``), read strictly for
the harness or ``partial`` for analysis, and written atomically.

Every check names the bad field in one line; ``to_dict()`` gives back exactly the object read
(key order included), fields this code does not know kept in ``extra``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from runfolder.errors import RunFolderError
from runfolder.jsonl import require_writable
from runfolder.layout import CASES, FORMAT_VERSION, MANIFEST
from runfolder.records import LimitsRecord

_HINT = "pass a folder written by `numericjev run` (runs/<run-id>)"


class Fields:
    """Typed access to a JSON object's fields; each check names the field when it fails."""

    def __init__(self, raw: Mapping[str, Any], where: str, prefix: str = "") -> None:
        self.raw = raw
        self.where = where
        self.prefix = prefix

    def get(self, key: str) -> Any:
        """The field's value; refuses a missing field."""
        if key not in self.raw:
            raise RunFolderError(
                f"{self.where}: field '{self.prefix}{key}' is missing; the manifest was edited "
                "or truncated (restore it, or start a new run)"
            )
        return self.raw[key]

    def _checked(self, key: str, what: str, optional: bool) -> Any:
        """The field if it is ``what``; ``optional``: null or missing reads as None."""
        value = self.raw.get(key) if optional else self.get(key)
        if (value is not None or not optional) and not _IS[what](value):
            raise RunFolderError(
                f"{self.where}: field '{self.prefix}{key}' must be {what}"
                f"{' or null' if optional else ''}; got {value!r}"
            )
        return value

    def text(self, key: str) -> str:
        """A string field."""
        return self._checked(key, "a string", False)

    def optional_text(self, key: str) -> str | None:
        """A string or null; a missing field reads as null."""
        return self._checked(key, "a string", True)

    def integer(self, key: str) -> int:
        """A whole-number field (not a boolean)."""
        return self._checked(key, "an integer", False)

    def optional_integer(self, key: str) -> int | None:
        """A whole number or null; a missing field reads as null."""
        return self._checked(key, "an integer", True)

    def optional_number(self, key: str) -> float | None:
        """A number or null; a missing field reads as null."""
        return self._checked(key, "a number", True)

    def boolean(self, key: str) -> bool:
        """A true/false field."""
        return self._checked(key, "true or false", False)

    def names(self, key: str) -> tuple[str, ...]:
        """A list of strings."""
        return tuple(self._checked(key, "a list of names", False))

    def mapping(self, key: str) -> dict[str, Any]:
        """A JSON object field."""
        return self._checked(key, "an object", False)

    def optional_mapping(self, key: str) -> dict[str, Any] | None:
        """A JSON object or null; a missing field reads as null."""
        return self._checked(key, "an object", True)

    def nested(self, key: str) -> Fields:
        """The checker for an object field, naming its fields as ``key.name``."""
        return Fields(self.mapping(key), self.where, f"{self.prefix}{key}.")


# What each check accepts, by the words its error uses.
_IS: dict[str, Callable[[Any], bool]] = {
    "a string": lambda v: isinstance(v, str),
    "an integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "a number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "true or false": lambda v: isinstance(v, bool),
    "a list of names": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "an object": lambda v: isinstance(v, dict),
}


@dataclass(frozen=True)
class ModelInfo:
    """The manifest's ``model``: what the backend described, plus the price used (never a key)."""

    name: str
    backend: str | None  # None only in a manifest read ``partial`` that lacks it
    simulated: bool
    base_url: str | None  # scrubbed of credentials
    params: dict[str, Any]  # the backend's own knobs, as it described them
    price_usd_per_million_input: float | None
    # The HTTP wire format spoken; None: in process, or a run (System One) from before it.
    wire: str | None = None
    # The retry policy (max_attempts, budget_s, waits); None: a run from before it (System
    # One then kept it as params.retries).
    retries: dict[str, Any] | None = None
    label: str | None = None  # how --model named it (sim:seed=7); None: a run from before it
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_fields(cls, fields: Fields, *, partial: bool = False) -> ModelInfo:
        """Read and check a ``model`` object (``partial``: only its ``name`` is required)."""
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(
            name=fields.text("name"),
            backend=fields.optional_text("backend") if partial else fields.text("backend"),
            simulated=bool(fields.raw.get("simulated")) if partial else fields.boolean("simulated"),
            base_url=fields.optional_text("base_url"),
            params=(fields.optional_mapping("params") or {})
            if partial
            else fields.mapping("params"),
            price_usd_per_million_input=fields.optional_number("price_usd_per_million_input"),
            retries=fields.optional_mapping("retries"),
            wire=fields.optional_text("wire"),
            label=fields.optional_text("label"),
            extra={k: v for k, v in fields.raw.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the order the harness writes them."""
        return {
            "name": self.name,
            **({} if self.label is None else {"label": self.label}),
            "backend": self.backend,
            **({} if self.wire is None else {"wire": self.wire}),
            "simulated": self.simulated,
            "base_url": self.base_url,
            "params": self.params,
            **({} if self.retries is None else {"retries": self.retries}),
            **self.extra,
            "price_usd_per_million_input": self.price_usd_per_million_input,
        }


@dataclass(frozen=True)
class Manifest:
    """A run's ``manifest.json``, written once before the first request.

    Field order is the key order on disk. ``extra`` keeps fields this code does not know.
    A fact a manifest read ``partial`` lacks is None (its lists empty, ``suite_params`` {}).
    """

    run_id: str
    created_utc: str | None
    suite: str
    suite_params: dict[str, Any]
    seed: int | None
    case_hash: str | None  # SHA-256 of the case set
    source_hash: str | None  # SHA-256 of the code that started the run
    n_cases: int | None
    decoders: tuple[str, ...]
    conditions: tuple[str, ...]
    orders: tuple[str, ...]
    repeats: int | None
    n_jobs: int | None
    model: ModelInfo
    limits: LimitsRecord | None
    versions: dict[str, str] | None  # harness, python, platform
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    # Not on disk: the run folder, and the object as read (empty for one built in memory).
    folder: Path = field(kw_only=True, compare=False, repr=False)
    raw: dict[str, Any] = field(kw_only=True, default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], folder: Path, where: str = "", *, partial: bool = False
    ) -> Manifest:
        """Check every field of ``folder``'s manifest object; ``where`` names the file in errors
        (default: ``folder/manifest.json``).

        ``partial`` is how analysis reads: only ``suite``, ``decoders`` and ``model.name`` are
        required, so older or hand-made manifests still analyse, their other facts unknown.
        """
        where = where or str(folder / MANIFEST)
        version = _version(raw, where, partial)
        f = Fields(raw, where)
        text = f.optional_text if partial else f.text
        integer = f.optional_integer if partial else f.integer
        known = {n for n in cls.__dataclass_fields__ if n not in ("extra", "folder", "raw")}
        limits = None if partial else f.nested("limits")  # checked first, as always
        versions = None if partial else f.mapping("versions")
        if versions is not None and not all(isinstance(v, str) for v in versions.values()):
            raise RunFolderError(f"{where}: field 'versions' must map names to strings")
        return cls(
            run_id=str(raw.get("run_id") or folder.name) if partial else f.text("run_id"),
            created_utc=text("created_utc"),
            suite=f.text("suite"),
            suite_params=(f.optional_mapping("suite_params") or {})
            if partial
            else f.mapping("suite_params"),
            seed=integer("seed"),
            case_hash=text("case_hash"),
            source_hash=text("source_hash"),
            n_cases=integer("n_cases"),
            decoders=f.names("decoders"),
            conditions=_names(f, "conditions", partial),
            orders=_names(f, "orders", partial),
            repeats=integer("repeats"),
            n_jobs=integer("n_jobs"),
            model=ModelInfo.from_fields(f.nested("model"), partial=partial),
            limits=None if limits is None else _limits(limits),
            versions=versions,
            format_version=version,
            extra={k: v for k, v in raw.items() if k not in known},
            folder=folder,
            raw=dict(raw),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the order the harness writes them; ``from_dict`` inverts it."""
        return {
            "format_version": self.format_version,
            "run_id": self.run_id,
            "created_utc": self.created_utc,
            "suite": self.suite,
            "suite_params": self.suite_params,
            "seed": self.seed,
            "case_hash": self.case_hash,
            "source_hash": self.source_hash,
            "n_cases": self.n_cases,
            "decoders": list(self.decoders),
            "conditions": list(self.conditions),
            "orders": list(self.orders),
            "repeats": self.repeats,
            "n_jobs": self.n_jobs,
            "model": self.model.to_dict(),
            "limits": None if self.limits is None else dict(self.limits),
            "versions": self.versions,
            **self.extra,
        }


def _names(f: Fields, key: str, partial: bool) -> tuple[str, ...]:
    return () if partial and f.raw.get(key) is None else f.names(key)


def _limits(limits: Fields) -> LimitsRecord:
    record: LimitsRecord = {
        "concurrency": limits.integer("concurrency"),
        "rps": limits.optional_number("rps"),
        "max_requests": limits.optional_integer("max_requests"),
        "max_cost_usd": limits.optional_number("max_cost_usd"),
    }
    if "max_wait_s" in limits.raw:  # absent in runs made before the ceiling
        record["max_wait_s"] = limits.optional_number("max_wait_s")
    return record


def _version(raw: Mapping[str, Any], where: str, partial: bool) -> int:
    """The format version of a manifest object; refuses one this code does not read. A
    ``partial`` read takes a missing version as 1 and needs ``suite``, ``decoders``, ``model``."""
    version = raw.get("format_version", 1) if partial else raw.get("format_version")
    if version is None and not partial:
        raise RunFolderError(
            f"{where} is not a NumericJev manifest of format {FORMAT_VERSION} (field "
            f"'format_version' is missing); {_HINT}"
        )
    if not partial and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise RunFolderError(
            f"{where}: field 'format_version' must be a positive integer; got {version!r}"
        )
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RunFolderError(
            f"{where} has format_version {version!r}; this {'analysis' if partial else 'numericjev'}"
            f" reads version {FORMAT_VERSION} — upgrade numericjev to read this run"
        )
    for key in ("suite", "decoders", "model") if partial else ():
        if key not in raw:
            raise RunFolderError(
                f"{where} lacks '{key}', so it was not written by `numericjev run`; {_HINT}"
            )
    if partial and raw["suite"] == "":
        raise RunFolderError(f"{where}: field 'suite' must be a non-empty name; got ''")
    return version


def read_manifest_object(folder: Path) -> dict[str, Any]:
    """``folder/manifest.json`` as a JSON object; refuses a folder that is not a run."""
    if not folder.exists():
        raise RunFolderError(f"{folder} is not a folder: it does not exist; {_HINT}")
    if not folder.is_dir():
        raise RunFolderError(f"{folder} is a file, not a run folder; {_HINT}")
    path = folder / MANIFEST
    if not path.is_file():
        raise RunFolderError(f"{folder} has no {MANIFEST}, so it is not a run folder; {_HINT}")
    # The harness writes the manifest atomically, so a broken one was edited or cut short.
    return read_document(
        path, "the harness writes it atomically, so restore the original file or start a new run"
    )


def load_manifest(folder: Path, *, partial: bool = False) -> Manifest:
    """The checked manifest of a run folder (``partial``: as analysis reads it)."""
    return Manifest.from_dict(read_manifest_object(folder), folder, partial=partial)


def encode_manifest(manifest: Manifest) -> bytes:
    """The bytes ``write_manifest`` writes; refuses a value JSON cannot carry exactly, NaN and
    infinities included (orjson writes them as null): its limits and prices are the user's."""
    return encode_document(manifest.to_dict(), MANIFEST)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (temp file, fsync, rename): it is never half-written."""
    write_document(folder / MANIFEST, encode_manifest(manifest))


def write_cases(folder: Path, payload: Mapping[str, Any]) -> None:
    """Write ``cases.json``, the case set the manifest's case_hash hashes (atomically)."""
    write_document(folder / CASES, encode_document(payload, CASES))


def read_cases(folder: Path) -> dict[str, Any] | None:
    """The run's ``cases.json`` (None in runs made before it was written)."""
    path = folder / CASES
    if not path.is_file():
        return None
    return read_document(path, "it is written once when the run starts; restore it")


def read_document(path: Path, fix: str) -> dict[str, Any]:
    """The JSON object in the file ``path`` (a manifest, ``compare.json``); ``fix`` ends the
    message when it is not JSON (written atomically, a broken one was edited or damaged)."""
    try:
        raw = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunFolderError(f"{path} is not valid JSON ({exc}); {fix}") from exc
    if not isinstance(raw, dict):
        raise RunFolderError(f"{path} must hold a JSON object; got {type(raw).__name__}")
    return raw


def encode_document(value: Mapping[str, Any], name: str) -> bytes:
    """Indented JSON of a file written once (a manifest, ``compare.json``); refuses, naming
    the field, a value JSON cannot carry exactly (NaN and infinities included)."""
    require_writable(value, name)
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def write_document(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename): never half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
