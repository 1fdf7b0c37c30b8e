"""How every cell of a comparison is started: the options kept in ``compare.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.backends import ModelSpec
from harness.backends.base import DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S

__all__ = ["CompareOptions"]


@dataclass(frozen=True)
class CompareOptions:
    """How every cell is started (kept in ``compare.json``: resume starts a cell the same way).

    ``summary`` holds the summary's settings (metric, replicates) for analysis, which
    reads them from ``compare.json`` so that a resumed comparison is summarised alike.
    """

    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = 6
    price_per_million: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    rps: float | None = None
    skip_check: bool = False
    summary: Mapping[str, Any] | None = None
    compress: bool = False  # every cell's logs as zstd frames, those a resume starts included
    # ``compare --sequential``: seed, looks, margin and each suite's family order
    # (``harness.comparing.sequential``); None: every family at once.
    sequential: Mapping[str, Any] | None = None

    def base(self) -> ModelSpec:
        """The settings each model spec's own options add to."""
        return ModelSpec(
            base_url=self.base_url,
            timeout_s=self.timeout_s,
            max_attempts=self.max_attempts,
            price_per_million=self.price_per_million,
        )
