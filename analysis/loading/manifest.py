"""The run folder's manifest.json, read into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from analysis.errors import RunFolderError

__all__ = ["SUPPORTED_FORMAT_VERSION", "Manifest", "ModelSpec", "load_manifest"]

# The newest run-folder format this package knows how to read.
SUPPORTED_FORMAT_VERSION = 1

_FIX_HINT = "pass a folder written by `numericjev run` (runs/<run-id>)"


@dataclass(frozen=True)
class ModelSpec:
    """The model a run was made against, as the harness recorded it."""

    name: str
    backend: str | None = None
    simulated: bool = False
    base_url: str | None = None


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


def _strings(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RunFolderError(f"{path}: '{key}' must be a list of names; got {value!r}")
    return tuple(value)


def _optional_int(value: Any, key: str, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunFolderError(f"{path}: '{key}' must be a whole number; got {value!r}")
    return value


def load_manifest(run_dir: Path) -> Manifest:
    """Read and check ``run_dir/manifest.json``; raise RunFolderError saying what to fix."""
    if not run_dir.exists():
        raise RunFolderError(f"{run_dir} does not exist; {_FIX_HINT}")
    if not run_dir.is_dir():
        raise RunFolderError(f"{run_dir} is a file, not a run folder; {_FIX_HINT}")
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise RunFolderError(
            f"{run_dir} has no manifest.json, so it is not a run folder; {_FIX_HINT}"
        )
    try:
        raw = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        # The harness writes the manifest atomically, so a broken one was edited or cut short.
        raise RunFolderError(
            f"{path} is not valid JSON ({exc}); the harness writes it atomically, so restore "
            "the original file or re-run the suite"
        ) from exc
    if not isinstance(raw, dict):
        raise RunFolderError(f"{path} must hold a JSON object; got {type(raw).__name__}")
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
    suite = raw["suite"]
    if not isinstance(suite, str) or not suite:
        raise RunFolderError(f"{path}: 'suite' must be a non-empty name; got {suite!r}")
    model = raw["model"]
    if not isinstance(model, dict) or not isinstance(model.get("name"), str):
        raise RunFolderError(f"{path}: 'model' must be an object with a 'name'; got {model!r}")
    return Manifest(
        run_dir=run_dir,
        run_id=str(raw.get("run_id") or run_dir.name),
        suite=suite,
        decoders=_strings(raw["decoders"], "decoders", path),
        conditions=_strings(raw.get("conditions"), "conditions", path),
        orders=_strings(raw.get("orders"), "orders", path),
        model=ModelSpec(
            name=model["name"],
            backend=model.get("backend"),
            simulated=bool(model.get("simulated", False)),
            base_url=model.get("base_url"),
        ),
        format_version=version,
        created_utc=raw.get("created_utc"),
        seed=_optional_int(raw.get("seed"), "seed", path),
        case_hash=raw.get("case_hash"),
        source_hash=raw.get("source_hash"),
        n_cases=_optional_int(raw.get("n_cases"), "n_cases", path),
        n_jobs=_optional_int(raw.get("n_jobs"), "n_jobs", path),
        repeats=_optional_int(raw.get("repeats"), "repeats", path),
        raw=raw,
    )
