"""The driver of a Ray run: the run folder's one writer (the pool parent's ``Writer``), and
the shards' keeper. A shard whose actor is lost (its node died) is started again on another
node from what the folder holds of it, so it costs at most the exchanges it had in flight or
had not yet sent back; past ``MAX_RESTARTS`` the run stops and ``numericjev resume``
finishes it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.backends import IN_PROCESS, ModelSpec
from harness.calling import Limits, RetrySettings
from harness.errors import ConfigError
from harness.progress import Counters
from harness.running.folder import RunPlan, check_price
from harness.running.replay import LogState, read_logs
from harness.running.session import Resume, RunResult, Start, new_session
from harness.running.sharding import Shard
from harness.running.wiring import display_for
from harness.spreading.pool.parent import Gathered, Writer, share
from harness.spreading.pool.worker import BLOCK_BYTES
from harness.spreading.raylaunch.actor import ShardActor, ShardTask, SuiteRef
from harness.spreading.raylaunch.limiter import LIMITER_CONCURRENCY, RateLimiter
from runfolder import MANIFEST, RunFolderError

MAX_RESTARTS = 3  # per shard: a shard lost more often than this is left to resume
POLL_S = 0.5  # the driver wakes this often (Ctrl-C is seen between waits)


@dataclass
class _Live:
    """One actor running one attempt at a shard."""

    shard: Shard
    actor: Any
    limits: Limits
    said: bool = False  # sent its last word (done, error or crash)


class Driver:
    """Starts the shards, writes what they send, starts a lost shard again."""

    def __init__(
        self,
        ray: Any,
        folder: Path,
        run_id: str,
        plan: RunPlan,
        model: ModelSpec,
        retry: RetrySettings | None,
        shards: int,
    ) -> None:
        self.ray, self.folder, self.run_id, self.plan = ray, folder, run_id, plan
        self.model, self.retry, self.count = model, retry, shards
        self.suite = SuiteRef.of(plan.suite)
        free = plan.backend.simulated or plan.backend.name in IN_PROCESS
        # A served model's lines go back at every flush of the recorder: a lost node then
        # loses only what it had in flight. Answers made in process are free to make again.
        self.block_bytes = BLOCK_BYTES if free else 0
        here = ray.get_runtime_context().get_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(here, soft=True)
        limits = plan.limits
        # Lost with its node, the limiter starts again elsewhere with a fresh window (a place
        # granted before is ignored when given back), and the calls it missed are asked again.
        self.limiter = (
            ray.remote(RateLimiter)
            .options(
                max_concurrency=LIMITER_CONCURRENCY, num_cpus=0, scheduling_strategy=strategy,
                max_restarts=-1, max_task_retries=-1,
            )
            .remote(limits.concurrency, limits.rps)
        )  # fmt: skip
        self.inbox: queue.SimpleQueue[tuple[str, tuple[Any, ...]]] = queue.SimpleQueue()
        self.live: dict[str, _Live] = {}
        self.node_of: dict[str, str] = {}  # the node each live actor was placed on
        self.attempts: dict[int, int] = {}
        self.lost: list[str] = []  # shards lost with their node (started again or left)
        self.stopping = False

    def limits_of(self, k: int) -> Limits:
        """Shard ``k``'s part of the request and spend caps (the window and pace are the
        limiter's, run-wide)."""
        limits = self.plan.limits
        cap, spend = limits.max_requests, limits.max_cost_usd
        return replace(
            limits,
            max_requests=None if cap is None else share(cap, self.count, k),
            max_cost_usd=None if spend is None else spend / self.count,
        )

    def launch(
        self, shard: Shard, limits: Limits, state: LogState, pin: Mapping[str, float] | None
    ) -> None:
        """Start an actor for ``shard`` (on a node with ``pin``'s resources, else anywhere)."""
        attempt = self.attempts.get(shard.index, 0)
        self.attempts[shard.index] = attempt + 1
        owner = f"{shard.index}.{attempt}"
        task = ShardTask(
            self.suite, self.model, self.retry, limits, self.run_id, shard, state, owner,
            self.plan.settings, self.block_bytes,
        )  # fmt: skip
        options: dict[str, Any] = {"num_cpus": 0, "max_restarts": 0}
        if pin:
            options["resources"] = dict(pin)
        else:
            options["scheduling_strategy"] = self.place(owner)
        actor = self.ray.remote(ShardActor).options(**options).remote()
        stream = actor.run.remote(task, self.limiter)
        self.live[owner] = _Live(shard, actor, limits)
        threading.Thread(target=self._pull, args=(owner, stream), daemon=True).start()

    def place(self, owner: str) -> Any:
        """One shard per node while the cluster has the nodes: ``owner`` goes to the living
        node holding the fewest live shards (Ray's ``SPREAD`` may put two on one node)."""
        alive = sorted(n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
        if not alive:
            return "SPREAD"
        held = {node: 0 for node in alive}
        for other in self.live:
            node = self.node_of.get(other)
            if node in held:
                held[node] += 1
        node = min(alive, key=lambda n: held[n])
        self.node_of[owner] = node
        strategies = self.ray.util.scheduling_strategies
        return strategies.NodeAffinitySchedulingStrategy(node, soft=True)  # gone: elsewhere

    def _pull(self, owner: str, stream: Any) -> None:
        """In a thread per actor: its messages into the driver's inbox, then how it ended."""
        try:
            for ref in stream:
                self.inbox.put((owner, self.ray.get(ref)))
        except Exception as exc:  # the actor or its node is gone (RayActorError and kin)
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.inbox.put((owner, ("lost", f"{type(exc).__name__}: {reason}")))
        else:
            self.inbox.put((owner, ("ended",)))

    def drive(self, run: Gathered) -> None:
        """Write what the shards send until every one has ended."""
        while self.live:
            try:
                owner, message = self.inbox.get(timeout=POLL_S)
            except queue.Empty:
                continue
            kind = message[0]
            live = self.live[owner]
            if kind in ("ended", "lost"):  # the stream is over
                del self.live[owner]
                if not live.said and not self.stopping:
                    self.restart(owner, live, run, message[1] if kind == "lost" else "")
                continue
            run.take(owner, f"shard {live.shard.index}", message)
            if kind != "lines":  # its last word: done, an error or a crash
                live.said = True
            if kind in ("error", "crash"):
                self.stop()

    def restart(self, owner: str, live: _Live, run: Gathered, reason: str) -> None:
        """``owner``'s actor was lost: its places go back to the limiter, and its shard
        starts again from what the folder holds (or, past ``MAX_RESTARTS``, is left)."""
        shard = live.shard
        self.ray.get(self.limiter.forget.remote(owner))
        self.ray.kill(live.actor, no_restart=True)
        lost = f"shard {shard.index} lost ({reason or 'its stream ended early'})"
        if self.attempts[shard.index] > MAX_RESTARTS:
            self.lost.append(lost)
            run.errors.append(
                f"shard {shard.index} lost {self.attempts[shard.index]} times; "
                f"numericjev resume {self.folder} finishes it"
            )
            return
        self.lost.append(f"{lost}; started again")
        run.writer.flush()  # the folder is read as resume reads it: what it holds of this shard
        state = read_logs(self.folder, self.plan.suite.decoders, self.run_id)
        mine = shard.holds_id
        done = {j for j in state.finished | state.failed if mine(j)}  # failed: final here
        own = LogState(
            finished=done,
            answered={j: r for j, r in state.answered.items() if mine(j) and j not in done},
            recorded_ok={j: ok for j, ok in state.recorded_ok.items() if mine(j)},
        )
        used = run.latest.get(owner, Counters()).requests
        cap = live.limits.max_requests
        limits = (
            live.limits if cap is None else replace(live.limits, max_requests=max(cap - used, 0))
        )
        self.launch(shard, limits, own, None)

    def stop(self) -> None:
        """A shard failed (or this process is going): every actor is stopped."""
        self.stopping = True
        for live in self.live.values():
            self.ray.kill(live.actor, no_restart=True)


def _ray() -> Any:
    try:
        import ray
        import ray.util.scheduling_strategies
    except ImportError:
        raise ConfigError(
            "--ray needs Ray: pip install 'numericjev[ray]' (or run without --ray)"
        ) from None
    return ray


@dataclass(frozen=True)
class Ray:
    """A placement (``harness.running.session.Placement``): ``run`` as ``shards`` Ray actors
    sharing one rate limit, this process writing the folder (docs/scaling.md, "A Ray cluster").

    ``resources``: each shard's first actor's Ray resources (without it, and for a shard
    started again: ``Driver.place``); ``ray``: the Ray module (tests pass a fake); ``address``
    "" starts a local Ray. The result names the shards lost and what the limiter saw.
    """

    shards: int
    address: str = ""
    resources: Sequence[Mapping[str, float]] | None = None
    ray: Any = None

    def start(self, order: Start) -> RunResult:
        """``run`` on Ray (the class docstring)."""
        shards, placement, folder = self.shards, self.resources, order.folder
        if shards < 1:
            raise ConfigError(f"--workers must be at least 1; got {shards}")
        if placement is not None and len(placement) != shards:
            raise ConfigError(f"placement names {len(placement)} shards, not {shards}")
        if not isinstance(order.model, ModelSpec):
            raise ConfigError("a Ray run rebuilds its model on every node: pass a ModelSpec")
        if folder is not None and (folder / MANIFEST).exists():
            raise RunFolderError(f"{folder} already holds a run; choose another --run folder")
        plan = order.plan()
        check_price(plan)
        ray = self.ray or _ray()
        started = not ray.is_initialized()
        if started:  # before any folder exists: a cluster that cannot be reached leaves none
            ray.init(address=self.address or None, include_dashboard=False, log_to_driver=False)
        try:
            with new_session(order, plan) as (folder, run_id):
                driver = Driver(ray, folder, run_id, plan, order.model, order.retry, shards)
                base = Counters(jobs_total=plan.jobs_total())
                where = f"{shards} Ray shard{'s' if shards > 1 else ''}"
                display = display_for(order.progress, plan, base, base.jobs_total > 0, where)
                run = Gathered(Writer(folder, LogState()), display, base)
                try:
                    for k in range(shards):
                        pin = None if placement is None else placement[k]
                        driver.launch(Shard(k, shards), driver.limits_of(k), LogState(), pin)
                    driver.drive(run)
                except BaseException:
                    driver.stop()  # what is written is a prefix of the records: resume continues
                    raise
                finally:
                    counters = run.close(run_id)
                state = ray.get(driver.limiter.state.remote())
        finally:
            if started:
                ray.shutdown()
        result = run.result(folder, plan, counters, None, "Ray shard")
        return replace(result, lost=tuple(driver.lost), limiter=state)

    def resume(self, order: Resume) -> RunResult:
        """Refused: a Ray run's folder is continued here or in a ``Pool``."""
        raise ConfigError(
            f"resume continues a Ray run's folder in this machine's processes: "
            f"numericjev resume {order.folder} (without --ray)"
        )
