"""The Ray driver's bookkeeping without Ray: a fake Ray whose actors run in this process.

The driver writes what the shards stream back, and starts a shard whose stream breaks (a
lost node) again from what the folder holds; the run folder then equals a one-process run.
The real thing, a multi-node Ray with a node removed, is ``test_ray_cluster.py`` (soak).
"""

from __future__ import annotations

import errno
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.errors import WriteFailed
from harness.serve import ServerConfig
from harness.spreading.raylaunch import RateLimiter, Ray
from runfolder import OUTPUTS, REQUESTS, JsonlAppender, read_totals, scan_logs
from tests.counting import counting_server
from tests.runhelpers import answered, final_outputs

PARAMS = {"per_operator": "2"}  # 128 jobs


class Done:
    """A fake ObjectRef whose value is there at once (awaitable, and read by ``get``)."""

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __await__(self) -> Iterator[Any]:
        return self.value
        yield  # a generator: awaiting it returns at once


class Method:
    def __init__(self, call: Any) -> None:
        self.remote = call


class FakeLimiter:
    """Grants every place at once (the real limiter is tested in test_ray.py)."""

    def __init__(self) -> None:
        self.forgotten: list[str] = []
        self.acquire = Method(lambda owner="": Done(0))
        self.release = Method(lambda *args: None)
        self.on_success = Method(lambda: None)
        self.on_rate_limited = Method(lambda *args: None)
        self.forget = Method(lambda owner: Done(self.forgotten.append(owner)))
        self.state = Method(lambda: Done({"in_flight": 0}))


class FakeRay:
    """What the driver uses of Ray; ``lose``: shards whose first actor (or, with
    ``every_attempt``, every actor) dies after that many messages."""

    def __init__(
        self,
        lose: dict[int, int],
        every_attempt: bool = False,
        after_outputs: frozenset[int] = frozenset(),
        nodes: tuple[str, ...] = ("head",),
    ) -> None:
        self.lose = lose
        self.every_attempt = every_attempt
        self.after_outputs = after_outputs  # shards whose first actor dies right after the
        # first block that records a job's outputs (the node lost just after it was sent)
        self.alive = list(nodes)
        self.limiter = FakeLimiter()
        self.started: list[tuple[str, dict[str, Any]]] = []
        self.util = SimpleNamespace(
            scheduling_strategies=SimpleNamespace(NodeAffinitySchedulingStrategy=lambda *a, **k: a)
        )

    def nodes(self) -> list[dict[str, Any]]:
        return [{"NodeID": n, "Alive": True} for n in self.alive]

    def is_initialized(self) -> bool:
        return True

    def get_runtime_context(self) -> Any:
        return SimpleNamespace(get_node_id=lambda: "head")

    def get(self, ref: Done) -> Any:
        return ref.value

    def kill(self, actor: Any, no_restart: bool = True) -> None:
        pass

    def remote(self, cls: type) -> Any:
        fake = self

        class Options:
            def options(self, **options: Any) -> Any:
                self._options = options
                return self

            def remote(self, *args: Any) -> Any:
                if cls is RateLimiter:
                    return fake.limiter
                actor = cls(*args)
                options = self._options

                def run(task: Any, limiter: Any) -> Iterator[Done]:
                    fake.started.append((task.owner, options))
                    first = task.owner.endswith(".0") or fake.every_attempt
                    after = fake.lose.get(task.shard.index) if first else None
                    cut = first and task.shard.index in fake.after_outputs
                    for n, message in enumerate(actor.run(task, limiter)):
                        if n == after:
                            raise RuntimeError("ActorDiedError: the node was removed")
                        yield Done(pickle.loads(pickle.dumps(message)))  # as Ray sends it
                        if cut and message[0] == "lines" and any(o for o, _ in message[1]):
                            raise RuntimeError("ActorDiedError: the node was removed")

                return SimpleNamespace(run=Method(run))

        return Options()


def test_a_lost_shard_is_started_again_and_the_folder_is_a_one_process_runs(
    tmp_path: Path,
) -> None:
    suite = load_suite("affine", params=PARAMS)
    run(suite, ModelSpec("sim"), folder=tmp_path / "one")
    fake = FakeRay(lose={1: 2})  # shard 1's node dies after its second block
    folder = tmp_path / "ray"
    ray_run = run(
        suite, ModelSpec("sim"), Limits(concurrency=4), folder=folder,
        placement=Ray(2, resources=[{"node0": 1}, {"node1": 1}], ray=fake),
    )  # fmt: skip
    assert ray_run.lost == ("shard 1 lost (RuntimeError: ActorDiedError: the node was removed); "
                            "started again",)  # fmt: skip
    # Pinned first; started again anywhere, and its places given back to the limiter.
    assert [(o, sorted(opts)) for o, opts in fake.started] == [
        ("0.0", ["max_restarts", "num_cpus", "resources"]),
        ("1.0", ["max_restarts", "num_cpus", "resources"]),
        ("1.1", ["max_restarts", "num_cpus", "scheduling_strategy"]),
    ]
    assert fake.limiter.forgotten == ["1.0"]
    result = ray_run
    assert result.complete and result.fatal is None and result.simulated
    assert not (folder / "shards").exists()
    assert final_outputs(folder) == final_outputs(tmp_path / "one")
    assert max(answered(folder).values()) == 1
    lines = [
        orjson.loads(x) for n in (REQUESTS, OUTPUTS) for x in (folder / n).read_bytes().splitlines()
    ]
    assert sorted(r["seq"] for r in lines) == list(range(1, len(lines) + 1))
    assert scan_logs(folder).last_seq == len(lines)
    totals = read_totals(folder)
    assert totals is not None and totals["requests_end"] == (folder / REQUESTS).stat().st_size


def test_a_shard_lost_too_often_is_left_to_resume(tmp_path: Path) -> None:
    from harness.cli import main

    suite = load_suite("affine", params=PARAMS)
    fake = FakeRay(lose={0: 1}, every_attempt=True)  # shard 0's every node dies
    folder = tmp_path / "ray"
    ray_run = run(
        suite, ModelSpec("sim"), Limits(concurrency=4), folder=folder, placement=Ray(2, ray=fake)
    )
    assert len(ray_run.lost) == 4 and not ray_run.complete
    assert ray_run.fatal and "numericjev resume" in ray_run.fatal
    assert main(["resume", str(folder), "--no-progress"]) == 0
    one = tmp_path / "one"
    run(suite, ModelSpec("sim"), folder=one)
    assert final_outputs(folder) == final_outputs(one)


def test_a_node_lost_right_after_a_job_is_recorded_leaves_nothing_pending(
    tmp_path: Path,
) -> None:
    """A job's outputs and its count travel in one message: a shard lost just after sending
    them is counted with that job done, and its restart skips it (issue 43)."""
    suite = load_suite("affine", params=PARAMS)
    run(suite, ModelSpec("sim"), folder=tmp_path / "one")
    fake = FakeRay(lose={}, after_outputs=frozenset({0, 1}), nodes=("n1", "n0"))
    folder = tmp_path / "ray"
    # A served model: its lines go back at every flush (a job's outputs in a block of their own).
    with counting_server(ServerConfig(port=0)) as (url, _paid):
        ray_run = run(
            suite, ModelSpec("jev-sim", base_url=url), Limits(concurrency=4), folder=folder,
            placement=Ray(2, ray=fake),
        )  # fmt: skip
    assert len(ray_run.lost) == 2
    result = ray_run
    assert result.pending == 0 and result.complete and result.fatal is None
    assert result.counters.jobs_done == result.counters.jobs_total == 128
    assert final_outputs(folder) == final_outputs(tmp_path / "one")
    # No placement given: one shard per living node.
    nodes = [opts["scheduling_strategy"][0] for _, opts in fake.started]
    assert sorted(nodes[:2]) == ["n0", "n1"]


def test_a_refused_write_stops_the_ray_run_with_the_runs_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver writes through the one-process run's rule (``WriteGuard``): a full disk
    is the run's ``WriteFailed`` naming the file, no totals, the folder a prefix of the
    records, and resume finishes it as one process would (issue 43 item 3)."""
    suite = load_suite("affine", params=PARAMS)
    folder = tmp_path / "ray"
    written = JsonlAppender.write_line
    lines = {"left": 3}

    def full_disk(self: JsonlAppender, line: bytes) -> None:
        lines["left"] -= 1
        if lines["left"] < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written(self, line)

    monkeypatch.setattr(JsonlAppender, "write_line", full_disk)
    with pytest.raises(WriteFailed) as failed:
        run(suite, ModelSpec("sim"), Limits(concurrency=4), folder=folder,
            placement=Ray(2, ray=FakeRay(lose={})))  # fmt: skip
    monkeypatch.undo()
    assert str(failed.value).startswith(f"cannot write {folder}/")
    assert str(failed.value).endswith(
        f"No space left on device (errno 28); free space, then: numericjev resume {folder}"
    )
    assert read_totals(folder) is None
    on_disk = [
        orjson.loads(x) for n in (REQUESTS, OUTPUTS) for x in (folder / n).read_bytes().splitlines()
    ]
    assert sorted(r["seq"] for r in on_disk) == list(range(1, len(on_disk) + 1))
    from harness.cli import main

    assert main(["resume", str(folder), "--no-progress"]) == 0
    one = tmp_path / "one"
    run(suite, ModelSpec("sim"), folder=one)
    assert final_outputs(folder) == final_outputs(one)


def test_a_ray_placement_refuses_what_it_cannot_run_before_any_folder(tmp_path: Path) -> None:
    from harness import ConfigError, resume
    from harness.backends.oracle import Oracle

    suite = load_suite("affine", params=PARAMS)
    folder = tmp_path / "ray"
    # Every node rebuilds the model from its spec: an object of the caller's cannot travel.
    with pytest.raises(ConfigError, match="pass a ModelSpec"):
        run(suite, Oracle(), folder=folder, placement=Ray(2, ray=FakeRay(lose={})))
    with pytest.raises(ConfigError, match="--workers must be at least 1; got 0"):
        run(suite, ModelSpec("sim"), folder=folder, placement=Ray(0, ray=FakeRay(lose={})))
    assert not folder.exists()
    # A Ray run's folder is an ordinary one: resume continues it without Ray.
    with pytest.raises(ConfigError, match="without --ray"):
        resume(tmp_path, placement=Ray(2))
