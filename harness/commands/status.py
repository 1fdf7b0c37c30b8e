"""``numericjev status``: what a run folder holds, without touching it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runfolder import Manifest

import orjson

from harness.commands.common import READING, RUN_HELP, exit_codes
from runfolder import REQUESTS, resolve_run, stored, whole_lines


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``status`` parser."""
    parser = sub.add_parser(
        "status",
        help="summarise a run folder",
        description="Jobs done, failed and pending; requests, tokens, cost and served models. "
        "Read-only. A comparison folder gets one line per run (as numericjev list).",
        epilog=exit_codes(*READING),
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help=RUN_HELP)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the folder's state."""
    from harness.running.recorder import ORACLE_MODELS, SIMULATOR_MODELS
    from harness.running.replay import read_logs
    from runfolder import (
        is_comparison,
        list_rows,
        load_manifest,
        read_sessions,
        verify,
    )

    folder = resolve_run(args.run_folder)
    if is_comparison(folder):
        row = list_rows([folder])[0]
        print(row.line())
        for cell in row.cells:
            print("  " + cell.line())
        return 0
    manifest = load_manifest(folder)
    state = read_logs(folder, manifest.decoders, manifest.run_id)
    sessions = read_sessions(folder)
    findings = verify(folder)
    c = state.counters
    total = manifest.n_jobs or 0  # read strictly: always recorded
    done, failed = len(state.finished), len(state.failed)
    model = manifest.model
    # A served model's manifest cannot know that serve-sim answered; the served names can.
    served_names = set(c.models)
    simulated = (
        " (ORACLE: exact labels)"
        if model.backend == "oracle" or served_names & ORACLE_MODELS
        else " (SIMULATED)"
        if model.simulated or served_names & SIMULATOR_MODELS
        else ""
    )
    cost = f"USD {c.cost_usd:.6f}" if c.cost_known else f"USD {c.cost_usd:.6f} + unknown"
    served = ", ".join(f"{name} ({n:,})" for name, n in sorted(c.models.items())) or "none yet"
    print(
        f"run {folder}: suite {manifest.suite} (cases {str(manifest.case_hash)[:12]}), "
        f"model {model.name}{simulated}"
    )
    print(
        f"jobs: {done:,} done, {failed:,} failed, {max(total - done - failed, 0):,} pending of {total:,}"
    )
    print(
        f"requests: {c.requests:,} answered"
        + (f" ({c.refusals:,} with refused questions)" if c.refusals else "")
        + f", {c.errors:,} failed attempts"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in sorted(c.error_kinds.items()))})"
            if c.error_kinds
            else ""
        )
    )
    print(f"tokens: in {c.input_tokens:,}, out {c.output_tokens:,}; cost {cost}")
    print(f"served models: {served}")
    from harness.running.folder import recorded_cache

    if (mode := recorded_cache(manifest.extra)) is not None:
        print(f"request cache: {mode} (the run's; resume keeps it unless --cache says otherwise)")
    if (line := _cache_line(folder)) is not None:
        print(line)
    # A merged parent's last line seals it ("merge"): not a session that sent anything.
    sessions = [s for s in sessions if s.get("command") != "merge"]
    if sessions:  # absent in runs made before sessions.jsonl
        resumes = sum(1 for s in sessions if s.get("command") == "resume")
        allowed = sum(len(s.get("allowed_mismatches") or ()) for s in sessions)
        print(
            f"sessions: {len(sessions)} ({resumes} resume{'' if resumes == 1 else 's'}; last started {sessions[-1].get('utc')})"
            + (f"; {allowed} mismatches let through by --allow-mismatch" if allowed else "")
        )
    for finding in findings:  # the seal, as every reader checks it (runfolder.integrity)
        print(f"note: {finding.message}; resume refuses it unless --allow-mismatch")
    if state.repeated_lines:
        print(f"note: {state.repeated_lines:,} repeated log lines, each counted once")
    if state.torn:
        print(f"note: torn last line in {', '.join(state.torn)} (cut off on the next resume)")
    _shards(folder, manifest)
    return 0


def _shards(folder: Path, manifest: Manifest) -> None:
    """For the parent of shards: each shard's jobs, and whether the parent is merged."""
    from harness.running.replay import read_logs
    from harness.running.sharding import Shard, shard_count
    from runfolder import load_manifest

    count = shard_count(manifest)
    if count is None:
        return
    parts = []
    for index in range(count):
        path = Shard(index, count).folder(folder)
        if not (path / "manifest.json").exists():
            parts.append(f"{index}: not here")
            continue
        own = load_manifest(path)
        state = read_logs(path, own.decoders, own.run_id)
        parts.append(f"{index}: {len(state.finished):,}/{own.n_jobs:,} done")
    merged = stored(folder / "outputs.jsonl").exists()
    print(f"shards ({count}): " + "; ".join(parts) + ("" if merged else " (not merged yet)"))


_HIT = b'"cache":{"hit":true'


def _cache_line(folder: Path) -> str | None:
    """One line for ``status``: exchanges answered from the cache (from which runs) and
    live, and the USD the cached answers cost when first paid; None without hits."""
    hits = live = 0
    saved = 0.0
    runs: set[str] = set()
    for raw in whole_lines(folder / REQUESTS):
        if _HIT not in raw:
            live += b'"status":200' in raw  # answered live (a miss, or no cache)
            continue
        mark = orjson.loads(raw)["cache"]
        hits += 1
        saved += mark.get("saved_usd") or 0.0
        runs.add(str(mark.get("from_run")))
    if not hits:
        return None
    return (
        f"cache: {hits:,} hits (answers paid by {', '.join(sorted(runs))}), {live:,} answered "
        f"live; USD {saved:.6f} saved"
    )
