"""Shards: one run split by a stable hash of the job id, each part an ordinary run folder.

The layout (``RUN/manifest.json`` the parent with ``"shards": N``, ``RUN/shards/K/`` shard K,
its records stamped with the parent's run id, so merging is concatenation) is in
docs/scaling.md. ``shard_of`` hashes the id alone, so every machine agrees without talking,
whatever the shuffled order; the first shard creates the parent atomically, the others
check it matches them (``mismatches``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.calling import Limits
from harness.errors import ConfigError, ManifestMismatch
from harness.protocol.cases import JobSpec, Suite
from runfolder import MANIFEST, Manifest, encode_manifest, load_manifest

SHARDS_DIR = "shards"


def shard_of(job_id: str, count: int) -> int:
    """The shard (0..count-1) that runs ``job_id``: a stable hash, the same on every machine."""
    digest = hashlib.blake2b(job_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``--shard K/N``, K from 0)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(
                f"--shard K/N needs N >= 1 and 0 <= K < N; got {self.index}/{self.count}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"`` (e.g. ``--shard 2/8``, or ``$SLURM_ARRAY_TASK_ID/8``)."""
        index, sep, count = text.partition("/")
        try:
            numbers = int(index), int(count)
        except ValueError:
            numbers = None
        if not sep or numbers is None:
            raise ConfigError(f"--shard takes K/N, e.g. 0/4; got {text!r}")
        return cls(*numbers)

    def holds_id(self, job_id: str) -> bool:
        """Whether this shard runs the job ``job_id``."""
        return shard_of(job_id, self.count) == self.index

    def jobs(self, suite: Suite) -> list[JobSpec]:
        """This shard's jobs, in the suite's order."""
        return [s for s in suite.jobs() if self.holds_id(s.id)]

    def folder(self, parent: Path) -> Path:
        """``RUN/shards/K``."""
        return parent / SHARDS_DIR / str(self.index)

    def record(self, parent_id: str) -> dict[str, Any]:
        """What the shard's manifest says of it (under ``"shard"``)."""
        return {"index": self.index, "count": self.count, "parent": parent_id}

    def limits(self, limits: Limits) -> Limits:
        """This shard's share of the run's pace and spend cap (concurrency is per shard)."""
        return replace(
            limits,
            rps=None if limits.rps is None else limits.rps / self.count,
            max_cost_usd=None if limits.max_cost_usd is None else limits.max_cost_usd / self.count,
        )


def split_for_workers(limits: Limits, workers: int) -> Limits:
    """One machine's ``--concurrency`` and request cap shared by its worker processes."""
    return replace(
        limits,
        concurrency=max(1, math.ceil(limits.concurrency / workers)),
        max_requests=None
        if limits.max_requests is None
        else math.ceil(limits.max_requests / workers),
    )


def shard_from_manifest(manifest: Manifest) -> Shard | None:
    """The shard a manifest describes, or None for an ordinary run (or a parent)."""
    raw = manifest.extra.get("shard")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not all(
        isinstance(raw.get(k), int) for k in ("index", "count")
    ):
        raise ConfigError(f"manifest of run {manifest.run_id}: field 'shard' is not a shard")
    return Shard(int(raw["index"]), int(raw["count"]))


def shard_count(manifest: Manifest) -> int | None:
    """N when ``manifest`` is the parent of N shards, else None."""
    count = manifest.extra.get("shards")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


# What must agree between the parent and every shard. Model params may differ in the
# connection pool's size (concurrency is per shard) and nothing else.
_SAME = ("suite", "suite_params", "seed", "case_hash", "source_hash", "decoders")


def mismatches(parent: Manifest, shard: Manifest) -> list[str]:
    """The fields where ``shard`` differs from its ``parent`` (empty when they match)."""
    found = [name for name in _SAME if getattr(parent, name) != getattr(shard, name)]
    a, b = parent.model, shard.model
    if (a.name, a.backend, a.simulated) != (b.name, b.backend, b.simulated):
        found.append("model")
    else:
        pa = {k: v for k, v in a.params.items() if k != "concurrency"}
        pb = {k: v for k, v in b.params.items() if k != "concurrency"}
        if pa != pb:
            found.append("model.params")
    return found


def create_or_join_parent(folder: Path, manifest: Manifest, count: int) -> Manifest:
    """The parent manifest at ``folder``: written now if absent (atomically: exactly one
    writer wins a race), else read and checked against ``manifest``, this shard's plan."""
    wanted = replace(manifest, folder=folder, extra={**manifest.extra, "shards": count})
    data = encode_manifest(wanted)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / MANIFEST
    if not target.exists():
        tmp = folder / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        try:
            os.link(tmp, target)  # fails if another shard created it first
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    parent = load_manifest(folder)
    if shard_count(parent) is None:
        raise ConfigError(f"{folder} holds an unsharded run; give the shards a new --run folder")
    if shard_count(parent) != count:
        raise ManifestMismatch(
            f"{folder} was started with {shard_count(parent)} shards, not {count}; "
            f"use --shard K/{shard_count(parent)}"
        )
    different = mismatches(parent, wanted)
    if different:
        raise ManifestMismatch(
            f"{folder}: this shard's {', '.join(different)} differ from the run's; "
            "every shard must run the same suite, cases, code, decoders and model"
        )
    return parent
