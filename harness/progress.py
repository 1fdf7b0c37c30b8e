"""Progress display behind a tiny protocol: tqdm for people, a recorder or nothing for tests."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol


@dataclass
class Counters:
    """Running totals of one invocation (plus what earlier sessions already recorded)."""

    jobs_total: int = 0
    jobs_done: int = 0
    jobs_failed: int = 0
    requests: int = 0  # answered exchanges (those with refused questions included)
    errors: int = 0  # failed attempts
    refusals: int = 0  # answered exchanges in which the model declined some questions
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    rounds: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    models: dict[str, int] = field(default_factory=dict)  # served model -> answered requests

    def count(
        self,
        answered: bool,
        kind: str | None,
        model: str | None,
        usage: Mapping[str, Any] | None,
        cost: float | None,
    ) -> None:
        """Count one attempt as its log line says (the recorder as it writes the line, resume
        as it reads it back): answered (``kind`` ``refusal``: some questions declined, counted
        by kind, not as a failed attempt) or failed (by ``kind``); its tokens and cost, a
        failed attempt's too when its response was billed (a rejected 200)."""
        if answered:
            self.requests += 1
            if model:
                self.models[model] = self.models.get(model, 0) + 1
            if cost is None:
                self.cost_known = False
            if kind is not None:
                self.refusals += 1
        else:
            self.errors += 1
            kind = kind or "error"
        if kind is not None:
            self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
        if usage:
            self.input_tokens += int(usage.get("input_tokens") or 0)
            self.output_tokens += int(usage.get("output_tokens") or 0)
        if cost is not None:
            self.cost_usd += cost


_ADDED = (
    "jobs_done", "jobs_failed", "requests", "errors", "refusals", "input_tokens",
    "output_tokens", "cost_usd",
)  # fmt: skip


def summed(base: Counters, parts: Sequence[Counters]) -> Counters:
    """``base`` plus every part's totals (a run's processes, or its shards); ``base`` itself
    is left as it was. ``jobs_total`` is ``base``'s: add it yourself where parts split it."""
    total = replace(base, error_kinds=dict(base.error_kinds), models=dict(base.models))
    for part in parts:
        for name in _ADDED:
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.cost_known = total.cost_known and part.cost_known
        total.rounds = max(total.rounds, part.rounds)
        for kind, n in part.error_kinds.items():
            total.error_kinds[kind] = total.error_kinds.get(kind, 0) + n
        for model, n in part.models.items():
            total.models[model] = total.models.get(model, 0) + n
    return total


class Progress(Protocol):
    """What the scheduler tells a display."""

    def update(self, counters: Counters) -> None:
        """Show the latest totals (called often; implementations throttle)."""

    def close(self) -> None:
        """Finish the display."""


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
        self.show(counters.jobs_done, counters)

    def show(self, done: int, counters: Counters) -> None:
        """Show ``done`` jobs, with ``counters``' requests, errors, tokens and cost."""
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
        self._bar.update(done - self._shown)
        self._shown = done

    def close(self) -> None:
        """Close the bar."""
        self._bar.close()


class CellProgress:
    """One run of a comparison shown on the comparison's single bar, after ``offset`` jobs of
    the runs before it; closing it leaves the bar to the comparison."""

    def __init__(self, bar: TqdmProgress, offset: int, label: str) -> None:
        self._bar = bar
        self._offset = offset
        bar._bar.set_description_str(label, refresh=False)  # the comparison's bar, relabelled

    def update(self, counters: Counters) -> None:
        """Advance the comparison's bar by this run's jobs (its requests and cost beside)."""
        self._bar.show(self._offset + counters.jobs_done, counters)

    def close(self) -> None:
        """The comparison closes the bar when its last run ends."""
