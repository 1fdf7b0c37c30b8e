"""The run folder's manifest.json, read into analysis's frozen view of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.errors import RunFolderError
from runfolder import FORMAT_VERSION, MANIFEST, Fields, read_manifest_object

__all__ = ["SUPPORTED_FORMAT_VERSION", "Manifest", "ModelSpec", "load_manifest"]

# The newest run-folder format this package knows how to read.
SUPPORTED_FORMAT_VERSION = FORMAT_VERSION

_FIX_HINT = "pass a folder written by `numericjev run` (runs/<run-id>)"


@dataclass(frozen=True)
class ModelSpec:
    """The model a run was made against, as the harness recorded it."""

    name: str
    backend: str | None = None
    simulated: bool = False
    base_url: str | None = None
    wire: str | None = None  # the HTTP wire format (absent: in process, or older System One)


@dataclass(frozen=True)
class Manifest:
    """The fields of manifest.json that analysis uses; ``raw`` keeps the whole object."""

    run_dir: Path
    run_id: str
    suite: str
    decoders: tuple[str, ...]
    conditions: tuple[str, ...]
    orders: tuple[str, ...]
    model: ModelSpec
    format_version: int = 1
    created_utc: str | None = None
    seed: int | None = None
    case_hash: str | None = None
    source_hash: str | None = None
    n_cases: int | None = None
    n_jobs: int | None = None
    repeats: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)


def load_manifest(run_dir: Path) -> Manifest:
    """Read and check ``run_dir/manifest.json``; raise RunFolderError saying what to fix.

    The file is read and each field checked by ``runfolder`` (the same words as the harness
    uses). Unlike ``runfolder.load_manifest``, which requires every field the harness writes,
    only ``suite``, ``decoders`` and ``model.name`` are required here: older or hand-made
    manifests without the rest still analyse, with those facts shown as unknown.
    """
    raw = read_manifest_object(run_dir)
    path = run_dir / MANIFEST
    version = raw.get("format_version", 1)
    if not isinstance(version, int) or version > SUPPORTED_FORMAT_VERSION:
        raise RunFolderError(
            f"{path} has format_version {version!r}; this analysis reads version "
            f"{SUPPORTED_FORMAT_VERSION} — upgrade numericjev to read this run"
        )
    for key in ("suite", "decoders", "model"):
        if key not in raw:
            raise RunFolderError(
                f"{path} lacks '{key}', so it was not written by `numericjev run`; {_FIX_HINT}"
            )
    f = Fields(raw, str(path))
    suite = f.text("suite")
    if not suite:
        raise RunFolderError(f"{path}: field 'suite' must be a non-empty name; got ''")
    model = f.nested("model")
    return Manifest(
        run_dir=run_dir,
        run_id=str(raw.get("run_id") or run_dir.name),
        suite=suite,
        decoders=f.names("decoders"),
        conditions=f.names("conditions") if raw.get("conditions") is not None else (),
        orders=f.names("orders") if raw.get("orders") is not None else (),
        model=ModelSpec(
            name=model.text("name"),
            backend=model.raw.get("backend"),
            simulated=bool(model.raw.get("simulated", False)),
            base_url=model.raw.get("base_url"),
            wire=model.optional_text("wire"),
        ),
        format_version=version,
        created_utc=raw.get("created_utc"),
        seed=f.optional_integer("seed"),
        case_hash=raw.get("case_hash"),
        source_hash=raw.get("source_hash"),
        n_cases=f.optional_integer("n_cases"),
        n_jobs=f.optional_integer("n_jobs"),
        repeats=f.optional_integer("repeats"),
        raw=raw,
    )
