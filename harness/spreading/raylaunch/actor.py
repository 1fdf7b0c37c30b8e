"""A shard of a Ray run as an actor (``ShardActor``): it answers, the driver writes.

The actor runs its shard's jobs through a forked pool worker's code
(``harness.spreading.pool.worker.work``), its serialised, unnumbered records handed not to a
pipe but to the actor method itself, a Ray generator: each block travels back to the driver
with the shard's counters as it is made, so nothing is written on the node.
"""

from __future__ import annotations

import copy
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends import ModelSpec
from harness.calling import Limits, RetrySettings
from harness.protocol.cases import Suite
from harness.running.replay import LogState, job_lists
from harness.running.session import Start
from harness.running.settings import RunSettings
from harness.running.sharding import Shard
from harness.spreading.pool.worker import Done, Part, Remote, last_word, work
from harness.spreading.raylaunch.limiter import RemotePacer


@dataclass(frozen=True)
class SuiteRef:
    """What rebuilds a suite in another process (suites are found by name, as plugins)."""

    name: str
    seed: int
    params: dict[str, str]
    decoders: tuple[str, ...]

    @classmethod
    def of(cls, suite: Suite) -> SuiteRef:
        """The reference to ``suite``."""
        params = {k: str(v) for k, v in suite.params.items()}
        return cls(suite.name, suite.seed, params, tuple(suite.decoders))

    def load(self) -> Suite:
        """The suite again."""
        from harness.protocol.registry import load_suite

        return load_suite(self.name, seed=self.seed, params=self.params, decoders=self.decoders)


@dataclass(frozen=True)
class ShardTask:
    """Everything one actor needs to run (or, after a lost node, continue) its shard:
    ``state``, what the folder holds of its jobs, replayed first; ``owner``, this attempt at
    the shard as the run-wide limiter knows it."""

    suite: SuiteRef
    model: ModelSpec
    retry: RetrySettings | None
    limits: Limits
    run_id: str
    shard: Shard
    state: LogState
    owner: str
    settings: RunSettings  # the driver's: the request cache's mode
    block_bytes: int


class _Stream:
    """The worker code's connection to its parent, as a queue the generator drains."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()

    def send(self, message: tuple[Any, ...]) -> None:
        """Queue one message (a block of lines, or the last word). A block's counters are
        copied now: Ray serialises the message only once the generator yields it, and by
        then the shard has counted on (the driver's totals are the blocks' it wrote)."""
        if message[0] == "lines":
            kind, block, counters = message
            message = (kind, block, copy.deepcopy(counters))
        self.queue.put(message)


def _run(task: ShardTask, limiter: Any, stream: _Stream) -> None:
    """In the actor's own thread: the shard's jobs, then one last word on ``stream``."""

    async def share() -> Done:
        suite = task.suite.load()
        start = Start(suite, task.model, task.limits, retry=task.retry, settings=task.settings)
        plan = start.plan()
        started, fresh = job_lists(suite, task.state, plan.backend.name, task.shard)
        # Nothing is written where the actor runs (the folder is the driver's), and no signal
        # reaches it (nothing drains: the driver stops the actor).
        part = Part(task.shard.index, plan, started, fresh, task.run_id, Path("."), 0.0)
        pacer = RemotePacer(limiter, task.limits.concurrency, task.owner)
        return await work(part, None, stream, Remote(pacer, task.block_bytes))

    last_word(stream.send, share)


class ShardActor:
    """Runs one shard (a Ray actor: one process, on any node of the cluster)."""

    def run(self, task: ShardTask, limiter: Any) -> Iterator[tuple[Any, ...]]:
        """The shard's messages as they are made: ``("lines", block, counters)`` while it
        runs, then ``("done", Done)``, ``("error", line)`` or ``("crash", traceback)``."""
        stream = _Stream()
        # The run goes on in a thread of its own (its event loop) while this generator hands
        # each message to Ray as soon as it is queued.
        thread = threading.Thread(target=_run, args=(task, limiter, stream), daemon=True)
        thread.start()
        while True:
            message = stream.queue.get()
            yield message
            if message[0] != "lines":
                break
        thread.join()
