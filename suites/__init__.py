"""Suite definitions: seeded case generation, exact reference arithmetic, the prompts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.decoders import make_decoder
from harness.errors import ConfigError
from suites import affine, exploratory, historical
from suites.base import Case, JobSpec, Suite

__all__ = ["SUITES", "Case", "JobSpec", "Suite", "load_suite"]

# name -> (builder, parameter parsers); builders take seed, the parsed params and decoders.
SUITES: dict[str, tuple[Callable[..., Suite], Mapping[str, Callable[[str], object]]]] = {
    "affine": (affine.build, affine.PARAMS),
    "exploratory": (exploratory.build, exploratory.PARAMS),
    "historical": (historical.build, historical.PARAMS),
    "historical_binary": (historical.build_binary, historical.PARAMS),
}


def load_suite(
    name: str,
    *,
    seed: int | None = None,
    params: Mapping[str, str] | None = None,
    decoders: tuple[str, ...] | None = None,
) -> Suite:
    """Build a suite by name; refuses unknown names, parameters and decoders with the fix."""
    if name not in SUITES:
        raise ConfigError(f"unknown suite {name!r}; known suites: {', '.join(sorted(SUITES))}")
    builder, parsers = SUITES[name]
    kwargs: dict[str, Any] = {}
    for key, text in (params or {}).items():
        if key not in parsers:
            known = ", ".join(sorted(parsers)) or "none"
            raise ConfigError(f"suite {name!r} has no parameter {key!r}; its parameters: {known}")
        try:
            kwargs[key] = parsers[key](text)
        except ValueError as exc:
            raise ConfigError(f"suite parameter {key}={text!r} is not valid: {exc}") from exc
    if seed is not None:
        kwargs["seed"] = seed
    if decoders is not None:
        if not decoders:
            raise ConfigError("--decoders needs at least one decoder name")
        kwargs["decoders"] = tuple(decoders)
    suite = builder(**kwargs)
    # Build every decoder once on every distinct grid so bad names or grids fail before a run.
    for grid, subject in {(c.grid, c.subject) for c in suite.cases}:
        for decoder in suite.decoders:
            make_decoder(decoder, grid, subject).ready()
    return suite
