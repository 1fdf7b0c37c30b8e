"""``numericjev run --ray [ADDRESS] --workers N``: N shards as Ray actors, ONE rate limit.

When many machines share one API key, only a coordinator sees the key's real limit. Here
the coordinator is one Ray actor holding the run's ``Pacer`` (AIMD window, ``--rps`` and
the server's ``Retry-After`` pause, all run-wide); every shard's caller asks it before each
attempt through a ``RemotePacer`` and reports each success and each 429 back. The shards
themselves are ordinary shards (``harness.running.sharding``): one actor each, writing
``RUN/shards/K`` on the machine it runs on (on a cluster, a filesystem every node shares),
merged when all are done.

Ray is an optional extra (``pip install 'numericjev[ray]'``), imported only here. Without
ADDRESS, ``ray.init()`` starts a local Ray; with one, it joins that cluster (whose nodes
need this package installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends import ModelSpec
from harness.calling import Limits, Pacer
from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.running.session import RunResult
from harness.running.sharding import Shard
from runfolder import MANIFEST, RunFolderError

# One limiter serves every shard's attempts at once; each waiting acquire holds a slot.
LIMITER_CONCURRENCY = 100_000


class RateLimiter:
    """The run-wide pacer, as a Ray async actor (its methods run on the actor's event loop)."""

    def __init__(self, max_limit: int, rps: float | None) -> None:
        self.max_limit = max_limit
        self.rps = rps
        self._pacer: Pacer | None = None
        self.acquired = 0  # attempts admitted (for the launcher's report and the tests)
        self.rate_limited = 0

    def _get(self) -> Pacer:
        if self._pacer is None:  # made on the actor's loop, where its events will wait
            self._pacer = Pacer(self.max_limit, rps=self.rps)
        return self._pacer

    async def acquire(self) -> int:
        """A place in the run-wide window, after any pause and the pace; its generation."""
        generation = await self._get().acquire()
        self.acquired += 1
        return generation

    async def release(self, after: object = None) -> None:
        """Give a place back. ``after``: an acquire's reference, which Ray resolves first
        (a shard that stopped waiting gives back the place its acquire will still get)."""
        self._get().release()

    async def on_success(self) -> None:
        """Additive increase."""
        self._get().on_success()

    async def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Halve the run-wide window and pause every shard."""
        self.rate_limited += 1
        self._get().on_rate_limited(generation, wait_s)

    async def state(self) -> dict[str, Any]:
        """The window, pause and counts now."""
        pacer = self._get()
        return {
            "limit": pacer.limit,
            "generation": pacer.generation,
            "in_flight": pacer.in_flight,
            "pause_s": pacer.pause_remaining(),
            "acquired": self.acquired,
            "rate_limited": self.rate_limited,
        }


class RemotePacer(Pacer):
    """A shard's pacer that asks the run's ``RateLimiter`` actor instead of deciding itself.

    ``limiter`` is the actor handle (anything whose methods have ``.remote(...)`` returning
    an awaitable). Releases and reports are sent without waiting: they need no answer.
    """

    def __init__(self, limiter: Any, max_limit: int) -> None:
        super().__init__(max_limit)
        self._limiter = limiter

    def try_acquire(self) -> int | None:
        """Never at once: every attempt asks the coordinator."""
        return None

    async def acquire(self) -> int:
        """A place from the coordinator (waits for the run-wide window, pause and pace)."""
        ref = self._limiter.acquire.remote()
        try:
            generation = int(await ref)
        except BaseException:
            # Cancelled while waiting: the coordinator will still grant the place; give it
            # back once it has (Ray runs the release after ``ref`` resolves).
            self._limiter.release.remote(ref)
            raise
        self._in_flight += 1
        return generation

    def release(self) -> None:
        """Give the place back to the coordinator."""
        self._in_flight -= 1
        self._limiter.release.remote()

    def on_success(self) -> None:
        """Tell the coordinator."""
        self._limiter.on_success.remote()

    def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Tell the coordinator: it halves the run-wide window and pauses every shard."""
        self._limiter.on_rate_limited.remote(generation, wait_s)


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


class ShardActor:
    """Runs one shard (a Ray actor: one process, anywhere in the cluster)."""

    def run(
        self,
        suite: SuiteRef,
        model: ModelSpec,
        limits: Limits,
        parent: str,
        shard: Shard,
        limiter: Any,
    ) -> RunResult:
        """The shard's run, every attempt paced by ``limiter``."""
        from harness.spreading.spread import start_shard

        pacer = RemotePacer(limiter, limits.concurrency)
        return start_shard(
            suite.load(), model, limits, parent=Path(parent), shard=shard, pacer=pacer
        )


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--ray needs Ray: pip install 'numericjev[ray]' (or run without --ray)"
        ) from None
    return ray


@dataclass(frozen=True)
class RayRun:
    """The merged run's result and what the coordinator saw (window, admitted, 429s)."""

    result: RunResult
    limiter: dict[str, Any]


def run_on_ray(
    suite: Suite,
    model: ModelSpec,
    limits: Limits,
    *,
    folder: Path,
    shards: int,
    address: str = "",
) -> RayRun:
    """Run ``shards`` shards of the run in ``folder`` as Ray actors sharing one rate limit.

    ``limits.concurrency`` and ``limits.rps`` bound the whole run (the coordinator's);
    each shard takes its share of the spend cap. ``address`` "" starts a local Ray.
    """
    from harness.spreading.spread import gather

    if shards < 1:
        raise ConfigError(f"--workers must be at least 1; got {shards}")
    if (folder / MANIFEST).exists():
        raise RunFolderError(f"{folder} already holds a run; choose another --run folder")
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    try:
        limiter_class = ray.remote(RateLimiter).options(max_concurrency=LIMITER_CONCURRENCY)
        limiter = limiter_class.remote(limits.concurrency, limits.rps)
        actor_class = ray.remote(ShardActor)
        actors = [actor_class.remote() for _ in range(shards)]
        ref = SuiteRef.of(suite)
        parent = str(folder.resolve())
        pending = [
            actor.run.remote(ref, model, limits, parent, Shard(k, shards), limiter)
            for k, actor in enumerate(actors)
        ]
        results = ray.get(pending)
        state = ray.get(limiter.state.remote())
    finally:
        if started:
            ray.shutdown()
    return RayRun(gather(folder, shards, list(results), suite=suite), state)
