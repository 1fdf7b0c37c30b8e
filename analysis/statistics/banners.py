"""Warnings printed above the tables: runs that are incomplete or mixed, and diffs whose two
sides differ in more than the model (no I/O).

A table of a half-finished run, or of a run answered by two models, looks like any other
table; so does a diff of two runs made with different prompts, knobs or prices, and a run
whose manifest was edited after its last session sealed it (``runfolder.seal``). Each such
condition becomes a :class:`Banner` that ``analyze``, ``report`` and ``diff`` print first
(Markdown) or list under ``"warnings"`` (JSON), and that ``--strict`` turns into a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.loading.run import Run
from runfolder import Manifest

from .facts import RunFacts

__all__ = ["DEFAULT_WIRE", "Banner", "diff_banners", "run_banners"]

# A manifest without model.wire was written before the harness spoke any other wire format.
DEFAULT_WIRE = "systemone"
_UNREPORTED = "(not reported)"  # RunFacts' entry for requests that named no served model


@dataclass(frozen=True)
class Banner:
    """One warning: ``kind`` is a stable key for programs, ``message`` one line for people."""

    # incomplete | mixed_models | resumed | manifest_edited | sessions_missing |
    # sessions_unsealed | session_foreign
    # | cases_changed | same_run | sides_differ
    kind: str
    message: str


def _text(value: Any) -> str:
    return "absent" if value is None else str(value)


def _price(model: dict[str, Any], key: str) -> str:
    """A manifest price as shown: null is a price nobody knew, not a missing field."""
    if key not in model:
        return "absent"
    return "unknown" if model[key] is None else str(model[key])


def _incomplete(who: str, f: RunFacts, run_dir: str, unasked: int = 0) -> Banner | None:
    if f.jobs_pending is None:
        if not f.jobs_failed:
            return None
        counts = (
            f"{f.jobs_failed:,} job(s) failed and the manifest gives no n_jobs, so pending "
            "jobs cannot be counted"
        )
    elif f.jobs_failed or f.jobs_pending > unasked:
        # Pending beyond the families a stopped sequential rule left unasked: missing.
        pending = max(f.jobs_pending - unasked, 0)
        counts = (
            f"{f.jobs_done:,} of {f.n_jobs:,} jobs done, {f.jobs_failed:,} failed, "
            f"{pending:,} pending"
            + (f" ({unasked:,} more left unasked by the sequential rule)" if unasked else "")
        )
    else:
        return None
    # A sequential comparison's cell: resuming the comparison retries the families asked;
    # resuming the cell alone would ask the unasked ones too.
    again = str(Path(run_dir).parent) if unasked else run_dir
    return Banner(
        "incomplete",
        f"{who} is incomplete: {counts}; its tables cover only the outputs it has "
        f"(`numericjev resume {again}` continues it)",
    )


def _mixed(who: str, f: RunFacts) -> Banner | None:
    served = [(name, n) for name, n in f.served_models if name != _UNREPORTED]
    if len(served) < 2:
        return None
    listed = ", ".join(f"{name} ×{n:,}" for name, n in served)
    return Banner(
        "mixed_models",
        f"{who} was answered by {len(served)} served models ({listed}); its numbers mix them",
    )


def _session_changes(manifest: Manifest, record: Mapping[str, Any]) -> list[str]:
    """What one run/resume invocation used that differs from the manifest."""
    changes = []
    model = record.get("model")
    name = model.get("name") if isinstance(model, dict) else model
    if isinstance(name, str) and name != manifest.model.name:
        changes.append(f"model {manifest.model.name} → {name}")
    sources: list[Mapping[str, Any]] = [record] + ([model] if isinstance(model, dict) else [])
    for source in sources:
        if "base_url" in source and source["base_url"] != manifest.model.base_url:
            changes.append(
                f"base_url {_text(manifest.model.base_url)} → {_text(source['base_url'])}"
            )
            break
    code = record.get("source_hash")  # the code that ran this session
    if isinstance(code, str) and manifest.source_hash and code != manifest.source_hash:
        changes.append(f"harness source {manifest.source_hash[:12]} → {code[:12]}")
    # Limits (concurrency, pace, caps) change how fast and how far a session went, never what
    # a model answered, so a resume with other limits is not a mixed run and gets no banner.
    allowed = record.get("allowed_mismatches")
    if allowed:
        listed = allowed if isinstance(allowed, list) else [allowed]
        changes.append("allowed mismatches: " + ", ".join(map(str, listed)))
    return changes


def _resumed(who: str, run: Run) -> list[Banner]:
    # sessions.jsonl when the run has one; else a manifest list of resumptions, if any.
    records = run.sessions or run.manifest.extra.get("resumptions") or ()
    banners = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            continue
        changes = _session_changes(run.manifest, record)
        if changes:
            command = record.get("command") or "session"
            banners.append(
                Banner(
                    "resumed",
                    f"{who} was continued with other settings ({command} #{number}: "
                    + "; ".join(changes)
                    + "); its outputs may come from more than one configuration",
                )
            )
    return banners


def _sealed(who: str, run: Run) -> list[Banner]:
    """What the seal check found (``runfolder.integrity``): a manifest edited since its last
    session, a session line of another run, or no sessions.jsonl to hold the seal at all."""
    return [
        Banner(
            finding.kind,
            f"{who}: {finding.message}; the tables describe the run as recorded in the logs, "
            "not as the manifest now says",
        )
        for finding in run.seal
    ]


def _cases_changed(who: str, run: Run) -> Banner | None:
    """``cases.json`` no longer hashes to the manifest's case hash."""
    if run.hashes is None or run.hashes.case != "differs":
        return None
    return Banner(
        "cases_changed",
        f"{who}'s cases.json does not match its manifest's case hash (recomputed "
        f"{str(run.hashes.case_hash)[:12]}, recorded {_text(run.manifest.case_hash)[:12]}): "
        "the case set was edited or damaged after the run started",
    )


def run_banners(
    run: Run, facts: RunFacts, who: str | None = None, unasked: int = 0
) -> tuple[Banner, ...]:
    """Warnings about one run: incomplete, answered by several models, resumed differently,
    manifest edited since it was sealed, case set changed since the run started.
    ``unasked``: pending jobs a stopped sequential rule chose not to ask (no warning)."""
    who = who or f"run {facts.run_id}"
    found = [
        _incomplete(who, facts, str(run.manifest.folder), unasked),
        _mixed(who, facts),
        *_resumed(who, run),
        *_sealed(who, run),
        _cases_changed(who, run),
    ]
    return tuple(b for b in found if b is not None)


def _differences(a: Manifest, b: Manifest) -> list[str]:
    """Each setting other than the model itself in which the two manifests differ."""
    found = []
    if a.source_hash != b.source_hash:
        found.append(
            f"harness source hash (A {_text(a.source_hash)[:12]}, B {_text(b.source_hash)[:12]}):"
            " prompts or decoders may have changed between the runs"
        )
    ma, mb = a.model.to_dict(), b.model.to_dict()
    if a.model.backend == "sim" and b.model.backend == "sim":
        knobs_a, knobs_b = ma.get("params") or {}, mb.get("params") or {}
        changed = sorted(
            k for k in knobs_a.keys() | knobs_b.keys() if knobs_a.get(k) != knobs_b.get(k)
        )
        if changed:
            found.append(
                "sim knobs ("
                + "; ".join(
                    f"{k} A {_text(knobs_a.get(k))}, B {_text(knobs_b.get(k))}" for k in changed
                )
                + ")"
            )
    wire_a, wire_b = ma.get("wire") or DEFAULT_WIRE, mb.get("wire") or DEFAULT_WIRE
    if wire_a != wire_b:
        found.append(f"wire format (A {wire_a}, B {wire_b})")
    for key in sorted(k for k in ma.keys() | mb.keys() if k.startswith("price")):
        if ma.get(key) != mb.get(key):
            found.append(f"{key} (A {_price(ma, key)}, B {_price(mb, key)})")
    if a.decoders != b.decoders:
        found.append(f"decoders (A {', '.join(a.decoders)}; B {', '.join(b.decoders)})")
    return found


def diff_banners(a: Run, b: Run, facts_a: RunFacts, facts_b: RunFacts) -> tuple[Banner, ...]:
    """Warnings about a diff: one run on both sides, sides that differ, and each side's own."""
    ma, mb = a.manifest, b.manifest
    if ma.folder.resolve() == mb.folder.resolve():
        same = Banner(
            "same_run",
            f"A and B are one run folder ({ma.folder}): every difference is zero by "
            "construction — pass two different run folders",
        )
        return (same, *run_banners(a, facts_a))
    found = []
    if ma.run_id == mb.run_id:
        found.append(
            Banner(
                "same_run",
                f"A and B are one run (run_id {ma.run_id} in {ma.folder} and {mb.folder}), "
                "perhaps copied at different moments: not two independent runs",
            )
        )
    sides = [
        Banner("sides_differ", f"A and B differ in {difference}")
        for difference in _differences(ma, mb)
    ]
    return (
        *found,
        *sides,
        *run_banners(a, facts_a, f"A (run {facts_a.run_id})"),
        *run_banners(b, facts_b, f"B (run {facts_b.run_id})"),
    )
