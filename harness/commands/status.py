"""``numericjev status``: what a run folder holds, without touching it."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``status`` parser."""
    parser = sub.add_parser(
        "status",
        help="summarise a run folder",
        description="Jobs done, failed and pending; requests, tokens, cost and served models. Read-only.",
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help="the run folder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the folder's state."""
    from harness.replay import read_logs
    from harness.runlog import read_manifest

    folder: Path = args.run_folder
    manifest = read_manifest(folder)
    decoders = tuple(manifest["decoders"])
    state = read_logs(folder, decoders, str(manifest.get("run_id")))
    c = state.counters
    total = int(manifest.get("n_jobs") or 0)
    done, failed = len(state.finished), len(state.failed)
    model = manifest["model"]
    simulated = " (SIMULATED)" if model.get("simulated") else ""
    cost = f"USD {c.cost_usd:.6f}" if c.cost_known else f"USD {c.cost_usd:.6f} + unknown"
    served = ", ".join(f"{name} ({n:,})" for name, n in sorted(c.models.items())) or "none yet"
    print(
        f"run {folder}: suite {manifest['suite']} (cases {str(manifest['case_hash'])[:12]}), "
        f"model {model.get('name')}{simulated}"
    )
    print(
        f"jobs: {done:,} done, {failed:,} failed, {max(total - done - failed, 0):,} pending of {total:,}"
    )
    print(
        f"requests: {c.requests:,} answered, {c.errors:,} failed attempts"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in sorted(c.error_kinds.items()))})"
            if c.errors
            else ""
        )
    )
    print(f"tokens: in {c.input_tokens:,}, out {c.output_tokens:,}; cost {cost}")
    print(f"served models: {served}")
    if state.torn:
        print(f"note: torn last line in {', '.join(state.torn)} (cut off on the next resume)")
    return 0
