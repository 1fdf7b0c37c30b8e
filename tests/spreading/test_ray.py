"""The Ray launcher: shards as actors asking one run-wide rate limiter.

The coordinator's pacing is tested here without Ray (a fake actor handle whose methods
answer ``.remote()`` at once); a real local Ray (``ray.init()`` with no address) runs in
``make soak`` only: it starts a dozen processes and takes seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.serve import ServerConfig, serve_sim_in_thread
from harness.serve.faults import FaultSpec
from harness.spreading.raylaunch import RateLimiter, RemotePacer
from tests.runhelpers import answered, final_outputs

SMALL = {"per_operator": "2"}  # 128 jobs


class _Ref:
    """A fake ObjectRef: the call runs as its own task; awaiting it waits for its value."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: Any = None

    def __await__(self) -> Any:
        return self._wait().__await__()

    async def _wait(self) -> Any:
        await self.done.wait()
        return self.value


class FakeHandle:
    """An actor handle for one in-process ``RateLimiter``, as Ray runs it: ``.remote()``
    starts the call at once as its own task (a caller that stops waiting does not stop
    it), and reference arguments are resolved before the method runs."""

    def __init__(self, limiter: RateLimiter, tg: anyio.abc.TaskGroup) -> None:
        self._limiter = limiter
        self._tg = tg

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._limiter, name)
        tg = self._tg

        class _Remote:
            @staticmethod
            def remote(*args: Any) -> _Ref:
                ref = _Ref()

                async def run() -> None:
                    resolved = [await a if isinstance(a, _Ref) else a for a in args]
                    ref.value = await method(*resolved)
                    ref.done.set()

                tg.start_soon(run)
                return ref

        return _Remote()


async def test_two_shard_pacers_share_one_window_and_pause() -> None:
    limiter = RateLimiter(max_limit=4, rps=None)
    async with anyio.create_task_group() as tg:
        handle = FakeHandle(limiter, tg)
        a, b = RemotePacer(handle, 4), RemotePacer(handle, 4)
        assert a.try_acquire() is None  # every attempt asks the coordinator
        generations = [await a.acquire(), await a.acquire(), await b.acquire(), await b.acquire()]
        assert generations == [0, 0, 0, 0]
        # The window is full run-wide: b's next attempt waits until a gives a place back;
        # b stops waiting, and the place its acquire still gets is given back.
        with anyio.move_on_after(0.05) as scope:
            await b.acquire()
        assert scope.cancelled_caught
        a.on_rate_limited(0, 0.2)  # a 429 seen by shard a ...
        a.release()
        await anyio.sleep(0.01)
        state = await limiter.state()
        assert state["limit"] == 2 and state["generation"] == 1 and state["pause_s"] > 0.1
        assert state["in_flight"] == 3  # the abandoned acquire got a's place, then gave it back
        started = anyio.current_time()
        b.release()
        b.release()
        a.release()
        await b.acquire()  # ... pauses shard b too
        assert anyio.current_time() - started >= 0.15
        b.release()
        await anyio.sleep(0.01)
        assert (await limiter.state())["in_flight"] == 0


@pytest.mark.soak
def test_ray_shards_share_one_limiter_through_429s(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from harness.spreading.raylaunch import Ray

    suite = load_suite("affine", params=SMALL)
    run(suite, ModelSpec("sim"), folder=tmp_path / "inproc")
    config = ServerConfig(port=0, faults=FaultSpec.parse("429=0.05"), fault_seed=3)
    with serve_sim_in_thread(config) as url:
        ray_run = run(
            suite,
            ModelSpec("jev-sim", base_url=url),
            Limits(concurrency=16),
            folder=tmp_path / "ray",
            placement=Ray(2),
        )
    assert ray_run.complete and ray_run.fatal is None
    assert final_outputs(tmp_path / "ray") == final_outputs(tmp_path / "inproc")
    counts = answered(tmp_path / "ray")
    assert max(counts.values()) == 1
    # Every attempt of both shards went through the one limiter, and the 429s reached it.
    attempts = (tmp_path / "ray" / "requests.jsonl").read_bytes().count(b"\n")
    assert ray_run.limiter["acquired"] == attempts
    assert ray_run.limiter["rate_limited"] > 0 and ray_run.limiter["generation"] > 0
    assert ray_run.limiter["in_flight"] == 0


async def test_a_lost_shard_gives_its_places_back() -> None:
    limiter = RateLimiter(max_limit=3, rps=None)
    async with anyio.create_task_group() as tg:
        handle = FakeHandle(limiter, tg)
        lost, alive = RemotePacer(handle, 3, "1.0"), RemotePacer(handle, 3, "0.0")
        await lost.acquire()
        await lost.acquire()
        await alive.acquire()
        # The lost shard's next attempt waits on a full window; then its node dies.
        waiting = lost._limiter.acquire.remote("1.0")
        assert await limiter.forget("1.0") == 2
        await waiting  # granted after the forget: handed back at once
        lost.release()  # a late release from the lost shard changes nothing
        await anyio.sleep(0.01)
        state = await limiter.state()
        assert state["in_flight"] == 1  # only the live shard's place
        await alive.acquire()
        await alive.acquire()
        assert (await limiter.state())["in_flight"] == 3
