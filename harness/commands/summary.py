"""What ``run`` and ``resume`` print when they end, and their exit status (``common.RUNNING``):
a run's result in a few lines; an interrupt, or a cap that let nothing through, in one."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

from harness.running.session import RunResult

if TYPE_CHECKING:
    from harness.comparing.comparison import ComparisonResult


def summary_lines(result: RunResult) -> list[str]:
    """What a person needs to read after a run or resume."""
    folder, c = result.folder, result.counters
    if c.cost_known:
        cost = f"USD {c.cost_usd:.6f}"
    elif c.cost_usd:
        cost = f"USD {c.cost_usd:.6f} + requests of unknown cost"
    else:  # no price at all: say how to give one
        cost = "cost unknown (no price for this model here; --price-per-million sets one)"
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
    if c.requests:  # nothing answered: nothing to analyse
        lines.append(f"analyse it: make analyze RUN={folder}   (figures: make report RUN={folder})")
    return lines


def interrupted(command: str, result: RunResult | ComparisonResult, where: str) -> int:
    """Print the one line an interrupted session (or comparison) ends with, on stderr;
    ``where`` names what ``result.folder`` is (``run folder``, ``comparison folder``). The
    exit status: 130 for SIGINT, 143 for SIGTERM."""
    signum, drained, abandoned = result.interrupted, result.drained, result.abandoned
    folder = result.folder
    received = signal.Signals(signum or signal.SIGINT)  # SIGINT or SIGTERM (``Interrupts``)
    said = f"the {drained:,} requests in flight were answered and recorded"
    if not drained:
        said = "no request was in flight"
    if abandoned:
        said = (
            f"{abandoned:,} requests still in flight after --drain-seconds were cut off "
            "(a resume may pay for them again)"
        )
    print(
        f"numericjev {command}: interrupted by {received.name}; stopped sending, {said}; {where} "
        f"{folder}; continue with: numericjev resume {folder}",
        file=sys.stderr,
    )
    return 128 + received  # as a shell reports a process a signal ended


def report(command: str, result: RunResult) -> int:
    """Print the summary (and a fatal error on stderr); the exit status."""
    if result.interrupted is not None:
        return interrupted(command, result, "run folder")
    if result.stopped and not result.fatal and result.attempts == 0:
        # A cap that let nothing through: one line, and nothing else happened.
        option = "--max-cost-usd" if "spend cap" in result.stopped else "--max-requests"
        print(
            f"numericjev {command}: {result.stopped}; nothing was sent (to continue: "
            f"numericjev resume {result.folder} {option} with a higher cap)",
            file=sys.stderr,
        )
        return 1
    for line in summary_lines(result):
        print(line, file=sys.stdout)
    if result.fatal:
        print(f"numericjev {command}: error: {result.fatal}", file=sys.stderr)
        return 2
    return 0 if result.complete else 1
