"""A worker node lost mid-run on a real local Ray cluster, ten times (soak only).

Each trial starts a head and one worker node (two CPUs each, ``ray.cluster_utils``), runs
two shards as the command line does (no placement given: one shard per node), and removes
the worker node once the run is under way. The run must end complete, its outputs those
of a plain local run, with no ``shards/`` folder and no job pending.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.serve import ServerConfig
from runfolder import REQUESTS
from tests.counting import counting_server
from tests.runhelpers import answered, final_outputs
from tests.spreading.test_ray_cluster import _remove_when

PARAMS = {"per_operator": "3"}  # 192 jobs


@pytest.fixture(scope="module")
def local_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[object, object]:
    """The outputs of a plain one-process run of the suite."""
    folder = tmp_path_factory.mktemp("local") / "one"
    run(load_suite("affine", params=PARAMS), ModelSpec("sim"), folder=folder)
    return dict(final_outputs(folder))


@pytest.mark.soak
@pytest.mark.parametrize("trial", range(10))
def test_a_lost_worker_node_ends_complete(
    trial: int, tmp_path: Path, local_outputs: dict[object, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from harness.spreading.raylaunch import Ray, driver

    suite = load_suite("affine", params=PARAMS)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    worker = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    folder = tmp_path / "ray"
    removed: list[float] = []
    placed: list[str] = []  # the node each actor was sent to, in order
    place = driver.Driver.place

    def noted(self: driver.Driver, owner: str) -> object:
        strategy = place(self, owner)
        placed.append(self.node_of.get(owner, "?"))
        return strategy

    monkeypatch.setattr(driver.Driver, "place", noted)
    try:
        with counting_server(ServerConfig(port=0, latency_ms=40)) as (url, _paid):
            watcher = threading.Thread(
                target=_remove_when, args=(cluster, worker, folder / REQUESTS, 150, removed)
            )
            watcher.start()
            ray_run = run(
                suite, ModelSpec("jev-sim", base_url=url), Limits(concurrency=8),
                folder=folder, placement=Ray(2),
            )  # fmt: skip
            watcher.join()
    finally:
        ray.shutdown()
        cluster.shutdown()
    result = ray_run
    lost = [line.split(" (")[0] for line in ray_run.lost]
    print(f"\ntrial {trial}: placed {placed}; lost {lost}; pending {result.pending}")
    assert removed, "the run ended before the node could be removed"
    assert len(set(placed[:2])) == 2  # one shard per node
    assert result.fatal is None and result.pending == 0 and result.complete
    assert not (folder / "shards").exists()
    assert final_outputs(folder) == local_outputs
    assert max(answered(folder).values()) == 1
    # Not asserted: that a shard was lost. On this machine a removed node's actor sometimes
    # lives on to the run's end (no shard lost in 5 of 30 trials), and where the driver
    # joined the removed node's raylet, the shard on the other node was lost too; the
    # printed line says which.
