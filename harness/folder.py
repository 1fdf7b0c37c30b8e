"""A run folder from the harness's side: its manifest, its sessions, and whether it still fits.

``create_run_folder`` writes the manifest of a new run (what the plan will ask, of which
model, under which limits, from which code); ``open_for_resume`` reads one back, rebuilds its
suite and checks that the cases and the code are still the ones it started with;
``record_session`` appends each ``run`` or ``resume`` to ``sessions.jsonl``; ``model_spec_of``
and ``limits_of`` rebuild a run's model and limits from its manifest for a resume. The format
itself (records, manifest class, reader, writer, lock) is ``runfolder``'s.
"""

from __future__ import annotations

import hashlib
import os
import platform
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from harness.backends import GGUF_PREFIX, WIRES, ModelSpec
from harness.backends.base import Backend
from harness.calling import Limits, RetrySettings
from harness.cases import Suite
from harness.errors import ConfigError, ManifestMismatch, RunFolderError
from harness.registry import load_suite
from runfolder import (
    MANIFEST,
    RUNS_ROOT,
    Fields,
    Manifest,
    ModelInfo,
    SessionCommand,
    SessionRecord,
    append_session,
    encode_manifest,
    load_manifest,
    unique_folder,
    write_manifest,
)

ROOT = Path(__file__).resolve().parent.parent


def source_hash() -> str:
    """SHA-256 over the format, harness and suite sources: what produced the requests."""
    digest = hashlib.sha256()
    for package in ("runfolder", "harness", "suites"):
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def harness_version() -> str:
    """The installed distribution's version."""
    try:
        return metadata.version("numericjev")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class RunPlan:
    """Everything a run needs besides its folder: what to ask, whom, and within which bounds."""

    suite: Suite
    backend: Backend
    limits: Limits
    price_per_million: float | None = None
    retry: RetrySettings = field(default_factory=RetrySettings)


def safe_name(text: str) -> str:
    """``text`` fit for a folder name: letters, digits and ``-._``; anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in text)


def default_run_folder(suite: str, model: str, root: Path = RUNS_ROOT) -> Path:
    """Create ``runs/<suite>-<model>-<UTC time>`` (``-2``, ``-3``, ... when a run started in
    the same second already has it) and return it, empty."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return unique_folder(root, f"{suite}-{safe_name(model)}-{stamp}")


def describe_model(plan: RunPlan) -> ModelInfo:
    """The manifest's ``model``: the backend's description, the retry policy and the price."""
    described = {
        **plan.backend.describe(),
        "retries": asdict(plan.retry),
        "price_usd_per_million_input": plan.price_per_million,
    }
    return ModelInfo.from_fields(Fields(described, "the backend's description", "model."))


def build_manifest(folder: Path, plan: RunPlan, run_id: str | None = None) -> Manifest:
    """The manifest written before the first request; it never holds a key.

    ``run_id`` defaults to the folder's name (a comparison names its cells' runs itself:
    their folder names repeat from one comparison to the next)."""
    suite = plan.suite
    return Manifest(
        run_id=run_id or folder.name,
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        suite=suite.name,
        suite_params=dict(suite.params),
        seed=suite.seed,
        case_hash=suite.case_hash(),
        source_hash=source_hash(),
        n_cases=len(suite.cases),
        decoders=tuple(suite.decoders),
        conditions=tuple(suite.conditions),
        orders=tuple(suite.orders),
        repeats=suite.repeats,
        n_jobs=len(suite.jobs()),
        model=describe_model(plan),
        limits=plan.limits.as_record(),
        versions={
            "harness": harness_version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    )


def create_run_folder(folder: Path, plan: RunPlan, run_id: str | None = None) -> Manifest:
    """Create a new run folder with its manifest; refuses to reuse an existing run."""
    if (folder / MANIFEST).exists():
        raise RunFolderError(
            f"{folder} already holds a run; continue it with: numericjev resume {folder}"
        )
    # A manifest's temp file alone is a run killed before its manifest was in place.
    if folder.exists() and any(p.name != f".{MANIFEST}.tmp" for p in folder.iterdir()):
        raise RunFolderError(f"{folder} exists and is not empty; choose another --run folder")
    manifest = build_manifest(folder, plan, run_id)
    encode_manifest(manifest)  # a value JSON cannot carry is refused before the folder exists
    folder.mkdir(parents=True, exist_ok=True)
    write_manifest(folder, manifest)
    return manifest


def record_session(
    folder: Path, command: SessionCommand, run_id: str, plan: RunPlan, allowed: list[str]
) -> None:
    """Append this invocation to ``sessions.jsonl`` (the caller holds the lock)."""
    described = plan.backend.describe()
    record: SessionRecord = {
        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "harness_version": harness_version(),
        "source_hash": source_hash(),
        "model": str(described.get("name", plan.backend.name)),
        "base_url": described.get("base_url"),  # the backend's description is scrubbed
        "limits": plan.limits.as_record(),
        "allowed_mismatches": list(allowed),
        "run": run_id,
    }
    append_session(folder, record)


def suite_of(manifest: Manifest) -> Suite:
    """Rebuild the suite a manifest names."""
    params = {k: str(v) for k, v in manifest.suite_params.items()}
    return load_suite(manifest.suite, seed=manifest.seed, params=params, decoders=manifest.decoders)


def verify(manifest: Manifest, suite: Suite, allow_mismatch: bool) -> list[str]:
    """Compare the manifest's hashes with this code and these cases; refuse unless allowed."""
    problems = []
    if manifest.case_hash != suite.case_hash():
        problems.append("the case set differs from the one the run started with")
    if manifest.source_hash != source_hash():
        problems.append("the harness or suite source changed since the run started")
    if problems and not allow_mismatch:
        raise ManifestMismatch(
            "; ".join(problems) + ": resuming would mix two versions in one run. Start a new run, "
            "or pass --allow-mismatch to continue anyway (recorded in the log)"
        )
    return problems


def open_for_resume(folder: Path, allow_mismatch: bool) -> tuple[Manifest, Suite, list[str]]:
    """Read and verify a run folder's manifest before resuming it."""
    manifest = load_manifest(folder)
    try:
        suite = suite_of(manifest)
    except ConfigError as exc:
        raise RunFolderError(
            f"{folder}/manifest.json names a suite this code cannot rebuild ({exc}); "
            "the manifest was edited or comes from other code"
        ) from exc
    problems = verify(manifest, suite, allow_mismatch)
    return manifest, suite, problems


# What a manifest's model.backend may name (an HTTP backend's name is its wire format).
BACKENDS = ("sim", "oracle", "gguf", *WIRES)


def limits_of(
    manifest: Manifest,
    *,
    concurrency: int | None = None,
    rps: float | None = None,
    max_requests: int | None = None,
    max_cost_usd: float | None = None,
) -> Limits:
    """A resume's limits: each given value, else the run's own (the request cap never carries
    over: it counts the requests of one invocation)."""
    saved = manifest.limits
    return Limits(
        concurrency=concurrency if concurrency is not None else saved["concurrency"] or 64,
        rps=rps if rps is not None else saved["rps"],
        max_requests=max_requests,
        max_cost_usd=max_cost_usd if max_cost_usd is not None else saved["max_cost_usd"],
    )


def model_spec_of(
    manifest: Manifest, *, base_url: str | None = None, where: str = "manifest.json"
) -> tuple[ModelSpec, RetrySettings]:
    """The model a run folder was started with and its retry policy, as the manifest records
    them (never a key). ``base_url`` replaces the recorded server; ``where`` names the file
    in errors."""
    model = manifest.model
    if model.backend not in BACKENDS:
        raise RunFolderError(f"{where} names an unknown backend {model.backend!r}")
    params = model.params
    # Recorded as model.retries; a run made before that kept it in a System One's params.
    recorded = model.retries or params.get("retries") or {}
    known = {k: v for k, v in recorded.items() if k in RetrySettings.__dataclass_fields__}
    attempts = known.get("max_attempts", 6)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise RunFolderError(
            f"{where}: field 'model.retries.max_attempts' must be a whole number >= 1; "
            f"got {attempts!r}"
        )
    try:
        retry = RetrySettings(**known)
    except (TypeError, ValueError) as exc:
        raise RunFolderError(
            f"{where}: field 'model.retries' is not a retry policy: {exc}"
        ) from exc
    # Recorded as model.wire; a run made before that spoke System One.
    wire = model.wire or "systemone"
    if model.backend in ("sim", "oracle", "gguf"):
        wire = "systemone"  # in process: no wire (ModelSpec's default)
    if wire not in WIRES:
        raise RunFolderError(f"{where}: field 'model.wire' names an unknown wire {wire!r}")
    name = model.name
    if model.backend == "gguf":
        path = params.get("path")
        if not isinstance(path, str):
            raise RunFolderError(f"{where}: field 'model.params.path' must name the GGUF file")
        name = GGUF_PREFIX + path
    variable = "TYPESAFE_BASE_URL" if wire == "systemone" else "OPENAI_BASE_URL"
    top = params.get("top_logprobs", 20)
    spec = ModelSpec(
        name=name,
        base_url=None
        if model.backend == "gguf"
        else base_url or model.base_url or os.environ.get(variable),
        sim={k: str(v) for k, v in params.items()} if model.backend == "sim" else {},
        timeout_s=float(params.get("timeout_s", 30.0)),
        max_attempts=attempts,
        price_per_million=model.price_usd_per_million_input,
        wire=wire,
        top_logprobs=top if isinstance(top, int) and not isinstance(top, bool) else 20,
    )
    return spec, retry
