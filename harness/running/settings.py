"""A run's own settings beside its model and limits: the request cache's mode and the logs'
form, each with its default here and nowhere else.

The command line, a profile and ``[defaults]`` meet in one ``RunSettings`` (made by the
command), which travels inside the ``RunPlan`` to every process that runs part of the run
(forked ``--workers``, ``--shard`` processes, Ray actors) as an argument: no process learns
it from its environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cache.lookup import MODES
from harness.errors import ConfigError


@dataclass(frozen=True)
class RunSettings:
    """How a run's processes treat the request cache and write the logs."""

    # auto: off for the in-process sim and oracle, read-write for every other model.
    cache: str = "auto"
    compress: bool = False  # a new run folder's logs as zstd frames (resume keeps its form)

    def __post_init__(self) -> None:
        if self.cache not in MODES:
            raise ConfigError(f"--cache must be one of {', '.join(MODES)}; got {self.cache!r}")
