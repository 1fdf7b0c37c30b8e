"""What ``run`` and ``resume`` print when they end: a run's result in a few lines."""

from __future__ import annotations

import sys

from harness.session import RunResult


def summary_lines(result: RunResult) -> list[str]:
    """What a person needs to read after a run or resume."""
    folder, c = result.folder, result.counters
    cost = f"USD {c.cost_usd:.6f}" if c.cost_known else "cost unknown for some requests"
    lines = [
        f"run folder: {folder}",
        f"jobs: {c.jobs_done:,} of {c.jobs_total:,} done, {c.jobs_failed:,} failed, "
        f"{result.pending:,} pending",
        f"requests: {c.requests:,} answered"
        + (f" ({c.refusals:,} with refused questions)" if c.refusals else "")
        + f", {c.errors:,} failed attempts; "
        f"tokens in {c.input_tokens:,} out {c.output_tokens:,}; {cost}",
    ]
    served = ", ".join(f"{name} ({n:,})" for name, n in sorted(c.models.items()))
    if served:
        lines.append(f"served models: {served}")
    if c.refusals:
        lines.append(
            "refusals: the model declined questions in "
            f"{c.refusals:,} answered requests; the decoders that asked them are failed "
            "(error refusal), for good: resume does not ask again"
        )
    if result.oracle:
        lines.append(
            "model: ORACLE (exact labels: a check of the decoding mechanics, not a measurement "
            "of any model)"
        )
    elif result.simulated:
        lines.append("model: SIMULATED (results describe the built-in simulator, not a real model)")
    if result.stopped:
        lines.append(f"stopped early: {result.stopped}; continue with: make resume RUN={folder}")
    elif c.jobs_failed or result.pending > 0:
        lines.append(f"some jobs are unfinished; retry them with: make resume RUN={folder}")
    lines.append(f"analyse it: make analyze RUN={folder}   (figures: make report RUN={folder})")
    return lines


def report(command: str, result: RunResult) -> int:
    """Print the summary (and a fatal error on stderr); the exit status."""
    for line in summary_lines(result):
        print(line, file=sys.stdout)
    if result.fatal:
        print(f"numericjev {command}: error: {result.fatal}", file=sys.stderr)
        return 2
    return 0 if result.complete else 1
