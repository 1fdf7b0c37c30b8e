"""Suites by name: found through entry points or registered in code, built on first use.

The harness never imports a suite: a distribution declares its suites as entry points in the
``numericjev.suites`` group (docs/extending.md, "A new suite"), each naming a
``SuiteBuilder`` or a bare function that builds a ``Suite``. Names are listed from the
installed metadata when first needed and a suite's module is imported only when that suite
is loaded. ``register_suite`` adds one from code (a notebook, a test).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.protocol.decoders import make_decoder

GROUP = "numericjev.suites"

Parser = Callable[[str], object]


@dataclass(frozen=True)
class SuiteBuilder:
    """How to build one suite.

    ``build`` takes keyword arguments: ``seed``, ``decoders`` and each parameter named in
    ``params``, which maps a parameter to the function that reads it from text (``int``).
    Each argument is passed only when the user set it, so ``build``'s defaults apply.
    """

    build: Callable[..., Suite]
    params: Mapping[str, Parser] = field(default_factory=dict)


_registered: dict[str, SuiteBuilder] = {}
_found: dict[str, EntryPoint] | None = None


def _entry_points() -> dict[str, EntryPoint]:
    """The installed ``numericjev.suites`` entry points by name, read once."""
    global _found
    if _found is None:
        found: dict[str, EntryPoint] = {}
        for point in entry_points(group=GROUP):
            # Two distributions naming one suite would make runs ambiguous: keep the first
            # and let register_suite be the way to replace one on purpose.
            found.setdefault(point.name, point)
        _found = found
    return _found


def register_suite(
    name: str,
    build: SuiteBuilder | Callable[..., Suite],
    *,
    replace: bool = False,
) -> None:
    """Make ``name`` loadable by ``load_suite`` (``build``: a ``SuiteBuilder`` or a function
    of ``seed`` and ``decoders``); an existing name is refused unless ``replace``."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"suite name {name!r}: use letters, digits, '_' and '-'")
    if not replace and (name in _registered or name in _entry_points()):
        raise ConfigError(f"suite {name!r} already exists; pass replace=True to replace it")
    _registered[name] = build if isinstance(build, SuiteBuilder) else SuiteBuilder(build)


def suite_names() -> list[str]:
    """Every suite that ``load_suite`` knows, sorted."""
    return sorted(set(_registered) | set(_entry_points()))


def _builder(name: str) -> SuiteBuilder:
    if name in _registered:
        return _registered[name]
    point = _entry_points().get(name)
    if point is None:
        raise ConfigError(f"unknown suite {name!r}; known suites: {', '.join(suite_names())}")
    loaded = point.load()
    if isinstance(loaded, SuiteBuilder):
        builder = loaded
    elif callable(loaded):
        builder = SuiteBuilder(loaded)
    else:
        raise ConfigError(
            f"entry point {point.value!r} for suite {name!r} is not a SuiteBuilder or a "
            "function; fix the distribution that declares it"
        )
    _registered[name] = builder
    return builder


def load_suite(
    name: str,
    *,
    seed: int | None = None,
    params: Mapping[str, str] | None = None,
    decoders: tuple[str, ...] | None = None,
) -> Suite:
    """Build a suite by name; refuses unknown names, parameters and decoders with the fix."""
    builder = _builder(name)
    parsers = builder.params
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
    suite = builder.build(**kwargs)
    if suite.name != name:
        # Job ids and the manifest carry suite.name, and resume looks the suite up by it.
        raise ConfigError(f"suite {name!r} was built as {suite.name!r}; the two names must agree")
    # Build every decoder once on every distinct grid so bad names or grids fail before a run.
    for grid, subject in {(c.grid, c.subject) for c in suite.cases}:
        for decoder in suite.decoders:
            make_decoder(decoder, grid, subject).ready()
    return suite
