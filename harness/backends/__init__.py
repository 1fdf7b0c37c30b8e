"""Model backends behind one async ``answer(body)``: ONE attempt, failures classified.

``sim`` and ``oracle`` run in process with no network; any other model name is a System One
model sent over HTTP to ``--base-url`` (default ``TYPESAFE_BASE_URL``, else the hosted API),
through the HTTP layer every HTTP backend shares (``harness.backends.http``). Each is looked
up by name and imported on first use. Retries, pacing and validation are the caller's
(``harness.calling``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from harness.backends.base import Backend, Reply
from harness.errors import ConfigError

__all__ = ["Backend", "ModelSpec", "Reply", "make_backend"]


@dataclass(frozen=True)
class ModelSpec:
    """What the user asked for: a model name and how to reach it (never a key)."""

    name: str = "sim"
    base_url: str | None = None
    sim: Mapping[str, str] = field(default_factory=dict)
    concurrency: int = 64
    timeout_s: float = 30.0
    max_attempts: int = 6  # per request, first attempt included (the caller's retry policy)
    price_per_million: float | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max attempts must be at least 1; got {self.max_attempts}")
        if not self.timeout_s > 0:
            raise ConfigError(f"the timeout must be positive; got {self.timeout_s}")


def make_backend(spec: ModelSpec, known: Mapping[str, Fraction] | None = None) -> Backend:
    """Build the backend ``spec`` names; refuses bad settings before anything is sent.

    ``known`` gives the oracle targets that no state reveals (``harness.check.oracle_for``).
    """
    if spec.name == "sim":
        from harness.backends.sim import SimModel, SimParams

        return SimModel(SimParams.parse(spec.sim))
    if spec.sim:
        raise ConfigError("--sim knobs apply only to --model sim")
    if spec.name == "oracle":
        from harness.backends.oracle import Oracle

        return Oracle(known)
    import os

    from harness.backends.systemone import DEFAULT_BASE_URL, SystemOneBackend, normalise_base_url

    base = spec.base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
    hosted = normalise_base_url(base) == normalise_base_url(DEFAULT_BASE_URL)
    if hosted and not os.environ.get("TYPESAFE_API_KEY", "").strip():
        # Fail before a run folder exists: every request to the hosted API would be a 401.
        raise ConfigError(
            f"model {spec.name!r} is served by the hosted TypeSafe API, which needs a key: "
            "set TYPESAFE_API_KEY, or pass --base-url for another server, or use --model sim"
        )

    return SystemOneBackend(
        spec.name,
        base_url=spec.base_url,
        concurrency=spec.concurrency,
        timeout_s=spec.timeout_s,
        price_per_million=spec.price_per_million,
    )
