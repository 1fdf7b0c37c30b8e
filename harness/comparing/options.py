"""How every cell of a comparison is started: ``CompareOptions``, kept in ``compare.json``,
and ``compare --sequential``'s plan in it: its settings checked, and each suite's families in
a seeded random order (see ``sequential``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from harness.backends import GGUF_PREFIX, IN_PROCESS, ModelSpec
from harness.backends.base import DEFAULT_CONCURRENCY
from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.running.settings import RunSettings
from runfolder import MIN_LOOK

_SPEC_FIELDS = frozenset(ModelSpec.__dataclass_fields__)


@dataclass(frozen=True)
class CompareOptions:
    """How every cell is started (kept in ``compare.json``: resume starts a cell the same way).

    ``model``: the options every model's spec adds its own to (``base``; its name unused).
    ``summary``: analysis's settings (metric, replicates), so a resume is summarised alike.
    """

    model: ModelSpec = field(default_factory=lambda: ModelSpec(name=""))
    concurrency: int = DEFAULT_CONCURRENCY
    rps: float | None = None
    skip_check: bool = False
    summary: Mapping[str, Any] | None = None
    compress: bool = False  # every cell's logs as zstd frames, those a resume starts included
    # By model (as --models names it): a profile's run settings (concurrency, rps, timeout,
    # max_attempts, cache) that replace the ones above for that model's cells.
    per_model: Mapping[str, Mapping[str, Any]] | None = None
    # ``compare --sequential``: seed, looks, margin and each suite's family order
    # (``harness.comparing.sequential``); None: every family at once.
    sequential: Mapping[str, Any] | None = None

    def own(self, model: str) -> Mapping[str, Any]:
        """The run settings of ``model``'s profile that the command line left unset."""
        return (self.per_model or {}).get(model, {})

    def base(self, model: str) -> ModelSpec:
        """The settings each model spec's own options add to (``model``'s profile's first)."""
        own = self.own(model)
        settings: dict[str, Any] = {
            "timeout_s": own.get("timeout", self.model.timeout_s),
            "max_attempts": own.get("max_attempts", self.model.max_attempts),
        }
        if model.partition(":")[0] in IN_PROCESS or model.startswith(GGUF_PREFIX):
            plain = ModelSpec()  # no wire: --wire and --top-logprobs are the served models'
            settings |= {"wire": plain.wire, "top_logprobs": plain.top_logprobs}
        # parse_model reads the name from the spec's text
        return replace(self.model, name=model, **settings)

    def settings(self, model: str, cache: str | None, default: str | None = None) -> RunSettings:
        """A cell's ``RunSettings``: ``cache`` (a resume's --cache), else the profile's, else
        ``default`` (the command line's), else RunSettings's; the comparison's log form."""
        mode = cache or self.own(model).get("cache") or default
        return RunSettings(compress=self.compress, **({} if mode is None else {"cache": mode}))

    def to_record(self) -> dict[str, Any]:
        """``compare.json``'s ``options``: plain JSON values."""
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_record(cls, options: Mapping[str, Any]) -> CompareOptions:
        """The options ``to_record`` wrote (fields it does not know are ignored). A
        ``compare.json`` written before ``model`` existed holds its fields side by side
        with the others (None: ModelSpec's default)."""
        known = {k: v for k, v in options.items() if k in cls.__dataclass_fields__}
        spec = known.get("model")
        if not isinstance(spec, Mapping):
            spec = {k: v for k, v in options.items() if k in _SPEC_FIELDS and v is not None}
            spec = {**spec, "name": ""}
        known["model"] = ModelSpec(**{k: v for k, v in spec.items() if k in _SPEC_FIELDS})
        return cls(**known)


def sequential_plan(looks: int, seed: int, margin: float) -> dict[str, Any]:
    """The plan's settings, checked (each suite's order is added by ``with_orders``)."""
    if looks < 2:
        raise ConfigError(f"--looks must be at least 2 for --sequential; got {looks}")
    if margin < 0:
        raise ConfigError(f"--margin must be 0 or more; got {margin}")
    return {"looks": looks, "seed": seed, "margin": margin}


def with_orders(plan: Mapping[str, Any], suites: Mapping[str, Suite]) -> dict[str, Any]:
    """The plan with each suite's families in a random order seeded by the plan's seed."""
    if len(suites) != 1:
        raise ConfigError(
            f"--sequential compares one suite at a time; got {len(suites)} "
            f"({', '.join(suites)}): run one comparison per suite"
        )
    order: dict[str, list[int]] = {}
    for i, (name, suite) in enumerate(suites.items()):
        families = sorted({c.family for c in suite.cases})
        if len(families) < MIN_LOOK:
            raise ConfigError(
                f"--sequential needs a suite of at least {MIN_LOOK} families; "
                f"{name} has {len(families)}"
            )
        rng = np.random.default_rng([int(plan["seed"]), i])
        order[name] = [int(f) for f in rng.permutation(families)]
    return {**plan, "order": order}
