"""A run folder from the harness's side: its manifest, its sessions, and whether it still fits
(``create_run_folder``, ``record_session``, ``open_for_resume``, ``model_spec_of``). The
format itself (records, manifest class, reader, writer, lock, seal) is ``runfolder``'s.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypedDict, Unpack

from harness.backends import GGUF_PREFIX, WIRES, ModelSpec
from harness.backends.base import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOP_LOGPROBS,
    Backend,
)
from harness.backends.pricing import Price, price_for, recorded_output_price, require_price
from harness.calling import Limits, RetrySettings
from harness.calling.limits import DEFAULT_MAX_WAIT_S
from harness.errors import ConfigError, ManifestMismatch, RunFolderError
from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite
from harness.running.settings import RunSettings
from harness.running.sharding import Shard
from runfolder import (
    LOCK,
    MANIFEST,
    OUTPUTS,
    REQUESTS,
    SESSIONS,
    Fields,
    Manifest,
    ModelInfo,
    RunLock,
    SessionCommand,
    SessionRecord,
    append_session,
    compressed,
    encode_manifest,
    field_digests,
    manifest_digest,
    new_run_id,
    read_manifest_object,
    refuse_link,
    source_digest,
    stored,
    verify,
    write_cases,
    write_manifest,
)

# The manifest field that keeps the run's request-cache mode (``RunSettings.cache``).
CACHE_FIELD = "cache"
ROOT = Path(__file__).resolve().parents[2]  # the checkout: harness/running/folder.py


def source_hash() -> str:
    """SHA-256 over the format, harness and suite sources: what produced the requests."""
    return source_digest(ROOT)


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
    price: Price | None = None  # prices a reply that carries no cost (None: unknown)
    retry: RetrySettings = field(default_factory=RetrySettings)
    shard: Shard | None = None  # run only this shard's jobs (``harness.running.sharding``)
    settings: RunSettings = field(default_factory=RunSettings)  # cache mode, log form

    @property
    def price_per_million(self) -> float | None:
        """USD per million input tokens (None: unknown)."""
        return None if self.price is None else self.price.input_per_million

    def jobs_total(self) -> int:
        """How many jobs this plan runs: the suite's, or its shard's."""
        return len(self.shard.jobs(self.suite)) if self.shard else self.suite.job_count()


def run_price(spec: ModelSpec | None, backend: Backend) -> Price | None:
    """What prices a reply that carries no cost: ``spec``'s price (input and output), else
    the backend's (input; in-process models: 0), else None (unknown)."""
    given = spec and price_for(None, None, spec.price_per_million, spec.price_per_million_output)
    return given or price_for(None, None, backend.price_per_million)


def build_manifest(
    folder: Path,
    plan: RunPlan,
    run_id: str | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """The manifest written before the first request; it never holds a key.

    ``run_id`` defaults to a new id of this run alone (``new_run_id``; a comparison names its
    cells' runs itself, a shard takes its parent's); ``extra`` adds fields (a shard's
    ``"shard"``). ``cache`` records the run's request-cache mode, which ``resume`` keeps
    unless told otherwise."""
    suite = plan.suite
    # The model: the backend's description, the retry policy and the price.
    described = {
        **plan.backend.describe(),
        "retries": asdict(plan.retry),
        "price_usd_per_million_input": plan.price_per_million,
    }
    return Manifest(
        folder=folder,
        run_id=run_id or new_run_id(folder.name),
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
        n_jobs=plan.jobs_total(),
        model=ModelInfo.from_fields(Fields(described, "the backend's description", "model.")),
        limits=plan.limits.as_record(),
        versions={
            "harness": harness_version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        extra={CACHE_FIELD: plan.settings.cache, **(extra or {})},
    )


def recorded_cache(fields: Mapping[str, Any]) -> str | None:
    """The request-cache mode a run was started with, from its manifest's fields (or its
    ``extra``); None in runs made before it was kept."""
    mode = fields.get(CACHE_FIELD)
    return mode if isinstance(mode, str) else None


def _refuse_existing(folder: Path) -> None:
    """Refuse a ``--run`` folder that is a file, holds a run, or holds anything else."""
    if folder.exists() and not folder.is_dir():
        raise RunFolderError(f"--run {folder} is a file, not a folder; choose another --run folder")
    if (folder / MANIFEST).exists():
        raise RunFolderError(
            f"{folder} already holds a run; continue it with: numericjev resume {folder}"
        )
    # The lock and the manifest's temporary file: another run creating this folder right now
    # (the lock then refuses this one, naming it), or a run killed before its manifest was
    # in place.
    ours = {LOCK, f".{MANIFEST}.tmp"}
    if folder.exists() and any(entry.name not in ours for entry in folder.iterdir()):
        raise RunFolderError(f"{folder} exists and is not empty; choose another --run folder")


def create_run_folder(
    folder: Path,
    plan: RunPlan,
    lock: RunLock,
    run_id: str | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """Create a new run folder, take its ``lock``, and write its manifest (``run_id``: see
    ``build_manifest``).

    Refuses to reuse an existing run or folder. The lock is taken before the manifest is
    written and the folder checked again under it: of two runs started into one new folder
    at once, one writes the manifest and the other is refused (the lock's message, or the
    run the first one left), with nothing of either overwritten.
    """
    _refuse_existing(folder)
    manifest = build_manifest(folder, plan, run_id, extra=extra)
    encode_manifest(manifest)  # a value JSON cannot carry is refused before the folder exists
    folder.mkdir(parents=True, exist_ok=True)
    lock.acquire()
    try:
        _refuse_existing(folder)
        write_manifest(folder, manifest)
        # The case set the manifest's case_hash hashes, so that analyze can recheck it; after
        # the manifest, so that a run racing into this folder is told it holds a run.
        write_cases(folder, plan.suite.case_payload())
        if plan.settings.compress:
            # Empty compressed logs: every writer after this (this process, workers, resume)
            # appends frames to them (runfolder.zlog).
            for name in (REQUESTS, OUTPUTS):
                compressed(folder / name).touch()
    except BaseException:
        lock.release()
        raise
    return manifest


def record_session(
    folder: Path,
    command: SessionCommand,
    manifest: dict[str, Any],
    plan: RunPlan,
    allowed: list[str],
) -> None:
    """Append this invocation to ``sessions.jsonl`` with the seal of the manifest it runs
    under (``manifest`` as on disk); the caller holds the lock."""
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
        "run": str(manifest.get("run_id")),
        "manifest_sha256": manifest_digest(manifest),
        "manifest_fields": field_digests(manifest),
    }
    append_session(folder, record)


def suite_of(manifest: Manifest) -> Suite:
    """Rebuild the suite a manifest names."""
    params = {k: str(v) for k, v in manifest.suite_params.items()}
    return load_suite(manifest.suite, seed=manifest.seed, params=params, decoders=manifest.decoders)


@dataclass(frozen=True)
class Opened:
    """A run folder read back for resume: its manifest (``raw``: as on disk), suite, problems."""

    manifest: Manifest
    suite: Suite
    problems: list[str]  # what --allow-mismatch lets through (recorded in sessions.jsonl)


def open_for_resume(folder: Path, allow_mismatch: bool) -> Opened:
    """Read and check a run folder before resuming it; refuse a mismatch unless allowed.

    Refused, in one line naming each difference: a manifest edited since the last session
    sealed it, cases or code that changed. With ``allow_mismatch`` the differences are
    returned, to be recorded in ``sessions.jsonl``. (The server is checked once the resume's
    backend exists: ``server_change``.)
    """
    for name in (REQUESTS, OUTPUTS, SESSIONS):  # before anything is written (JsonlAppender's rule)
        refuse_link(stored(folder / name))
    raw = read_manifest_object(folder)
    where = f"{folder}/{MANIFEST}"
    # The seal, as every reader checks it: a missing sessions.jsonl is a problem too.
    problems = [f.message for f in verify(folder, raw)]
    manifest = Manifest.from_dict(raw, folder, where)
    try:
        suite = suite_of(manifest)
    except ConfigError as exc:
        if not problems:
            raise RunFolderError(
                f"{where} names a suite this code cannot rebuild ({exc}); "
                "the manifest was edited or comes from other code"
            ) from exc
        raise ManifestMismatch("; ".join(problems) + f"; and it cannot be rebuilt ({exc})") from exc
    if manifest.case_hash != suite.case_hash():
        problems.append("the case set differs from the one the run started with")
    if manifest.source_hash != source_hash():
        problems.append("the harness or suite source changed since the run started")
    if problems and not allow_mismatch:
        raise ManifestMismatch(
            "; ".join(problems) + ": resuming would mix two versions in one run. Restore the "
            "run's settings or start a new run, or pass --allow-mismatch to continue anyway "
            "(recorded in sessions.jsonl)"
        )
    return Opened(manifest, suite, problems)


def check_price(plan: RunPlan) -> None:
    """Refuse a spend cap with no price to reserve against (``pricing.require_price``)."""
    described = plan.backend.describe()
    where = f" at {described['base_url']}" if described.get("base_url") else ""
    require_price(
        plan.limits.max_cost_usd, plan.price_per_million, f"model {plan.backend.name!r}{where}"
    )


def server_change(manifest: Manifest, plan: RunPlan, allow_mismatch: bool) -> str | None:
    """The server a resume would ask, when it is not the run's (``--base-url``); refused in
    one line unless ``allow_mismatch``, which returns it to be recorded.

    Compared as each backend records its server (normalised, scrubbed), so the same server
    written another way is the same server.
    """
    recorded = manifest.model.base_url
    now = plan.backend.describe().get("base_url")
    if now == recorded:
        return None
    change = (
        f"the server {now} is not the run's ({recorded}): its answers could come from another model"
    )
    if not allow_mismatch:
        raise ManifestMismatch(
            f"{change}. Resume with the run's server, or pass --allow-mismatch to continue "
            "anyway (recorded in sessions.jsonl)"
        )
    return change


# What a manifest's model.backend may name (an HTTP backend's name is its wire format).
BACKENDS = ("sim", "oracle", "gguf", *WIRES)


class LimitChanges(TypedDict, total=False):
    """What a resume may change of a run's limits, for its own session; what is left out
    (or None) stays the run's own."""

    concurrency: int | None
    rps: float | None
    max_requests: int | None
    max_cost_usd: float | None
    max_wait_s: float | None


def limits_of(manifest: Manifest, **changes: Unpack[LimitChanges]) -> Limits:
    """A resume's limits: each given value, else the run's own (the request cap never carries
    over: it counts the requests of one invocation)."""
    saved = manifest.limits
    assert saved is not None  # read strictly (load_manifest), so recorded
    own: dict[str, Any] = {
        "concurrency": saved["concurrency"] or DEFAULT_CONCURRENCY,
        "rps": saved["rps"],
        "max_requests": None,
        "max_cost_usd": saved["max_cost_usd"],
        "max_wait_s": saved.get("max_wait_s", DEFAULT_MAX_WAIT_S),
    }
    own.update((k, v) for k, v in changes.items() if v is not None)
    return Limits(**own)


def model_spec_of(
    manifest: Manifest, *, base_url: str | None = None
) -> tuple[ModelSpec, RetrySettings]:
    """The model a run folder was started with and its retry policy, as the manifest records
    them (never a key). ``base_url`` replaces the recorded server."""
    model, where = manifest.model, f"{manifest.folder}/{MANIFEST}"
    if model.backend not in BACKENDS:
        raise RunFolderError(f"{where} names an unknown backend {model.backend!r}")
    params = model.params
    # Recorded as model.retries; a run made before that kept it in a System One's params.
    recorded = model.retries or params.get("retries") or {}
    known = {k: v for k, v in recorded.items() if k in RetrySettings.__dataclass_fields__}
    attempts = known.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
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
    top = params.get("top_logprobs", DEFAULT_TOP_LOGPROBS)
    spec = ModelSpec(
        name=name,
        base_url=None
        if model.backend == "gguf"
        else base_url or model.base_url or os.environ.get(variable),
        sim={k: str(v) for k, v in params.items()} if model.backend == "sim" else {},
        timeout_s=float(params.get("timeout_s", DEFAULT_TIMEOUT_S)),
        max_attempts=attempts,
        price_per_million=model.price_usd_per_million_input,
        wire=wire,
        top_logprobs=top
        if isinstance(top, int) and not isinstance(top, bool)
        else DEFAULT_TOP_LOGPROBS,
        key_env=params["key_env"] if isinstance(params.get("key_env"), str) else None,
        price_per_million_output=recorded_output_price(params.get("price")),
    )
    return spec, retry
