"""Model backends behind one async ``answer(body)``; looked up by name, imported on first use.

``sim`` and ``oracle`` run in process with no network; any other model name is a System One
model sent over HTTP to ``--base-url`` (default ``TYPESAFE_BASE_URL``, else the hosted API).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from harness.backends.base import Backend, Reply

__all__ = ["Backend", "ModelSpec", "Reply", "make_backend"]


@dataclass(frozen=True)
class ModelSpec:
    """What the user asked for: a model name and how to reach it (never a key)."""

    name: str = "sim"
    base_url: str | None = None
    sim: Mapping[str, str] = field(default_factory=dict)
    concurrency: int = 64
    timeout_s: float = 30.0
    max_attempts: int = 6
    price_per_million: float | None = None


def make_backend(spec: ModelSpec, known: Mapping[str, Fraction] | None = None) -> Backend:
    """Build the backend ``spec`` names; refuses bad settings before anything is sent."""
    from harness.errors import ConfigError

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

    kwargs: dict[str, Any] = {
        "model": spec.name,
        "base_url": spec.base_url,
        "concurrency": spec.concurrency,
        "timeout_s": spec.timeout_s,
        "max_attempts": spec.max_attempts,
        "price_per_million": spec.price_per_million,
    }
    return SystemOneBackend(**kwargs)
