"""How every cell of a comparison is started: ``CompareOptions``, kept in ``compare.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.backends import GGUF_PREFIX, IN_PROCESS, ModelSpec
from harness.backends.base import DEFAULT_CONCURRENCY, DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT_S
from harness.running.settings import RunSettings

__all__ = ["CompareOptions"]


@dataclass(frozen=True)
class CompareOptions:
    """How every cell is started (kept in ``compare.json``: resume starts a cell the same way).

    ``summary`` holds the summary's settings (metric, replicates) for analysis, which
    reads them from ``compare.json`` so that a resumed comparison is summarised alike.
    """

    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    price_per_million: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    rps: float | None = None
    skip_check: bool = False
    summary: Mapping[str, Any] | None = None
    price_per_million_output: float | None = None
    wire: str | None = None  # every served model's unless its spec says (None: ModelSpec's)
    top_logprobs: int | None = None
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
        spec = ModelSpec(
            name=model,  # parse_model reads the name from the spec's text
            base_url=self.base_url,
            timeout_s=own.get("timeout", self.timeout_s),
            max_attempts=own.get("max_attempts", self.max_attempts),
            price_per_million=self.price_per_million,
            price_per_million_output=self.price_per_million_output,
        )
        if model.partition(":")[0] in IN_PROCESS or model.startswith(GGUF_PREFIX):
            return spec  # no wire: --wire and --top-logprobs are the served models'
        if self.wire is not None:
            spec = replace(spec, wire=self.wire)
        if self.top_logprobs is not None:
            spec = replace(spec, top_logprobs=self.top_logprobs)
        return spec

    def settings(self, model: str, cache: str | None, default: str | None = None) -> RunSettings:
        """A cell's ``RunSettings``: ``cache`` (a resume's --cache), else the profile's, else
        ``default`` (the command line's), else RunSettings's; the comparison's log form."""
        mode = cache or self.own(model).get("cache") or default
        return RunSettings(compress=self.compress, **({} if mode is None else {"cache": mode}))
