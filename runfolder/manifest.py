"""``manifest.json``: a frozen ``Manifest``, its strict loader and its atomic writer.

The loader names the bad field in one line (``runs/x/manifest.json: field 'seed' must be an
integer; got 'x'``) and ``to_dict()`` gives back exactly the object that was read, key order
included, so writing and reading round-trip. Fields this code does not know are kept in
``extra`` rather than dropped.

``Fields`` is the checker the loader uses; ``analysis`` uses the same one to read older or
partial manifests field by field, so both report a bad field in the same words.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from runfolder.errors import RunFolderError
from runfolder.jsonl import require_writable
from runfolder.layout import CASES, FORMAT_VERSION, MANIFEST
from runfolder.records import LimitsRecord

__all__ = [
    "Fields",
    "Manifest",
    "ModelInfo",
    "encode_manifest",
    "load_manifest",
    "read_manifest_object",
    "write_manifest",
]

_HINT = "pass a folder written by `numericjev run` (runs/<run-id>)"


class Fields:
    """Typed access to a JSON object's fields; each check names the field when it fails."""

    def __init__(self, raw: Mapping[str, Any], where: str, prefix: str = "") -> None:
        self.raw = raw
        self.where = where
        self.prefix = prefix

    def _bad(self, key: str, what: str) -> RunFolderError:
        return RunFolderError(
            f"{self.where}: field '{self.prefix}{key}' must be {what}; got {self.raw.get(key)!r}"
        )

    def get(self, key: str) -> Any:
        """The field's value; refuses a missing field."""
        if key not in self.raw:
            raise RunFolderError(
                f"{self.where}: field '{self.prefix}{key}' is missing; the manifest was edited "
                "or truncated (restore it, or start a new run)"
            )
        return self.raw[key]

    def text(self, key: str) -> str:
        """A string field."""
        value = self.get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def optional_text(self, key: str) -> str | None:
        """A string or null; a missing field reads as null."""
        value = self.raw.get(key)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string or null")
        return value

    def integer(self, key: str) -> int:
        """A whole-number field (not a boolean)."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer")
        return value

    def optional_integer(self, key: str) -> int | None:
        """A whole number or null; a missing field reads as null."""
        value = self.raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self._bad(key, "an integer or null")
        return value

    def optional_number(self, key: str) -> float | None:
        """A number or null; a missing field reads as null."""
        value = self.raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise self._bad(key, "a number or null")
        return value

    def boolean(self, key: str) -> bool:
        """A true/false field."""
        value = self.get(key)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def names(self, key: str) -> tuple[str, ...]:
        """A list of strings."""
        value = self.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of names")
        return tuple(value)

    def mapping(self, key: str) -> dict[str, Any]:
        """A JSON object field."""
        value = self.get(key)
        if not isinstance(value, dict):
            raise self._bad(key, "an object")
        return value

    def optional_mapping(self, key: str) -> dict[str, Any] | None:
        """A JSON object or null; a missing field reads as null."""
        value = self.raw.get(key)
        if value is not None and not isinstance(value, dict):
            raise self._bad(key, "an object or null")
        return value

    def nested(self, key: str) -> Fields:
        """The checker for an object field, naming its fields as ``key.name``."""
        return Fields(self.mapping(key), self.where, f"{self.prefix}{key}.")


@dataclass(frozen=True)
class ModelInfo:
    """The manifest's ``model``: what the backend described, plus the price used (never a key)."""

    name: str
    backend: str
    simulated: bool
    base_url: str | None  # scrubbed of credentials
    params: dict[str, Any]  # the backend's own knobs, as it described them
    price_usd_per_million_input: float | None
    # The wire format an HTTP backend spoke (systemone | openai-decisions | openai-chat);
    # None for in-process models and for runs made before it was recorded (System One).
    wire: str | None = None
    # The caller's retry policy (max_attempts, budget_s, waits); None in runs made before it
    # was recorded here (their System One backends kept it as params.retries).
    retries: dict[str, Any] | None = None
    # How --model named it when that says more than ``name``: a sim's knobs (sim:seed=7).
    # None in runs made before it was recorded.
    label: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_fields(cls, fields: Fields) -> ModelInfo:
        """Read and check a ``model`` object."""
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(
            name=fields.text("name"),
            backend=fields.text("backend"),
            simulated=fields.boolean("simulated"),
            base_url=fields.optional_text("base_url"),
            params=fields.mapping("params"),
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
    """

    run_id: str
    created_utc: str
    suite: str
    suite_params: dict[str, Any]
    seed: int
    case_hash: str  # SHA-256 of the case set
    source_hash: str  # SHA-256 of the code that started the run
    n_cases: int
    decoders: tuple[str, ...]
    conditions: tuple[str, ...]
    orders: tuple[str, ...]
    repeats: int
    n_jobs: int
    model: ModelInfo
    limits: LimitsRecord
    versions: dict[str, str]  # harness, python, platform
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = MANIFEST) -> Manifest:
        """Check every field of a manifest object; ``where`` names the file in errors."""
        check_version(raw, where)
        f = Fields(raw, where)
        limits = f.nested("limits")
        known = {name for name in cls.__dataclass_fields__ if name != "extra"}
        versions = f.mapping("versions")
        if not all(isinstance(v, str) for v in versions.values()):
            raise RunFolderError(f"{where}: field 'versions' must map names to strings")
        return cls(
            run_id=f.text("run_id"),
            created_utc=f.text("created_utc"),
            suite=f.text("suite"),
            suite_params=f.mapping("suite_params"),
            seed=f.integer("seed"),
            case_hash=f.text("case_hash"),
            source_hash=f.text("source_hash"),
            n_cases=f.integer("n_cases"),
            decoders=f.names("decoders"),
            conditions=f.names("conditions"),
            orders=f.names("orders"),
            repeats=f.integer("repeats"),
            n_jobs=f.integer("n_jobs"),
            model=ModelInfo.from_fields(f.nested("model")),
            limits=_limits(limits),
            versions=versions,
            format_version=f.integer("format_version"),
            extra={k: v for k, v in raw.items() if k not in known},
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
            "limits": dict(self.limits),
            "versions": self.versions,
            **self.extra,
        }


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


def check_version(raw: Mapping[str, Any], where: str) -> None:
    """Refuse an object that is not a manifest of a format this code reads."""
    version = raw.get("format_version")
    if version is None:
        raise RunFolderError(
            f"{where} is not a NumericJev manifest of format {FORMAT_VERSION} (field "
            f"'format_version' is missing); {_HINT}"
        )
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RunFolderError(
            f"{where}: field 'format_version' must be a positive integer; got {version!r}"
        )
    if version > FORMAT_VERSION:
        raise RunFolderError(
            f"{where} has format_version {version}; this numericjev reads version "
            f"{FORMAT_VERSION} — upgrade numericjev to read this run"
        )


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


def load_manifest(folder: Path) -> Manifest:
    """The checked manifest of a run folder."""
    return Manifest.from_dict(read_manifest_object(folder), str(folder / MANIFEST))


def encode_manifest(manifest: Manifest) -> bytes:
    """The bytes ``write_manifest`` writes; refuses a value JSON cannot carry exactly.

    Unlike log lines the manifest is scanned for NaN and infinities too (orjson would write
    them as null): its numbers come from the user (limits, prices), and it is written once.
    """
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
    """The JSON object in the file ``path`` (a manifest, ``compare.json``).

    ``fix`` ends the message when the file is not JSON: these files are written atomically,
    so a broken one was edited or damaged.
    """
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
