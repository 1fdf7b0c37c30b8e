"""What bounds a run: requests in flight, pace, and caps that stop it resumably."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import cast

from harness.backends.base import DEFAULT_CONCURRENCY
from harness.errors import ConfigError
from runfolder import LimitsRecord

DEFAULT_MAX_WAIT_S = 600.0  # ten minutes of Retry-After: a server that keeps asking is down


@dataclass(frozen=True)
class Limits:
    """Requests in flight, requests per second, and the two caps (see ``Budget``)."""

    concurrency: int = DEFAULT_CONCURRENCY
    rps: float | None = None
    max_requests: int | None = None  # requests sent by this invocation
    max_cost_usd: float | None = None  # the run's total recorded cost, all sessions included
    # 429s pause the whole run as long as the server asks; past this many seconds of such
    # pauses in one invocation the run stops (resumably) rather than wait on. None: no limit.
    max_wait_s: float | None = DEFAULT_MAX_WAIT_S

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1; got {self.concurrency}")
        # NaN and huge values pass here: the manifest's writer refuses them by field name.
        if self.rps is not None and self.rps <= 0:
            raise ConfigError(f"--rps must be positive; got {self.rps}")
        if self.max_requests is not None and self.max_requests < 0:
            raise ConfigError(f"--max-requests must be >= 0; got {self.max_requests}")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ConfigError(f"--max-cost-usd must be >= 0; got {self.max_cost_usd}")
        if self.max_wait_s is not None and self.max_wait_s < 0:
            raise ConfigError(f"--max-wait-seconds must be >= 0; got {self.max_wait_s}")

    def as_record(self) -> LimitsRecord:
        """The limits as the manifest and sessions.jsonl record them (every field, in order)."""
        return cast(LimitsRecord, asdict(self))
