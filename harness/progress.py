"""Progress display behind a tiny protocol: tqdm for people, a recorder or nothing for tests."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class Counters:
    """Running totals of one invocation (plus what earlier sessions already recorded)."""

    jobs_total: int = 0
    jobs_done: int = 0
    jobs_failed: int = 0
    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    rounds: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    models: dict[str, int] = field(default_factory=dict)  # served model -> answered requests


class Progress(Protocol):
    """What the scheduler tells a display."""

    def update(self, counters: Counters) -> None:
        """Show the latest totals (called often; implementations throttle)."""
        ...

    def close(self) -> None:
        """Finish the display."""
        ...


class NoProgress:
    """Shows nothing."""

    def update(self, counters: Counters) -> None:
        """Ignore."""

    def close(self) -> None:
        """Ignore."""


class TqdmProgress:
    """A tqdm bar of jobs with requests, errors, tokens and cost; redrawn at most 5 times a second."""

    def __init__(self, total: int, initial: int, label: str) -> None:
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            initial=initial,
            unit="job",
            desc=label,
            dynamic_ncols=True,
            mininterval=0.2,
            file=sys.stderr,
        )
        self._shown = initial
        self._last = 0.0

    def update(self, counters: Counters) -> None:
        """Advance the bar; cheap enough to call per record (it returns early when throttled)."""
        now = time.monotonic()
        if now - self._last < 0.2 and counters.jobs_done != counters.jobs_total:
            return
        self._last = now
        cost = f"${counters.cost_usd:.4f}" if counters.cost_known else "$?"
        self._bar.set_postfix_str(
            f"req {counters.requests:,} err {counters.errors:,} "
            f"tok {counters.input_tokens + counters.output_tokens:,} {cost}",
            refresh=False,
        )
        self._bar.update(counters.jobs_done - self._shown)
        self._shown = counters.jobs_done

    def close(self) -> None:
        """Close the bar."""
        self._bar.close()
