"""``--ray`` on a real multi-node Ray (``ray.cluster_utils.Cluster``: a head and two worker
nodes on this machine, each its own raylet and object store), with a node removed mid-run.

The driver is the run folder's one writer: no shard folder, no merge, the files of a
one-process run. Shards are pinned one per worker node by a custom resource; removing a
node loses its shard's actor, which the driver starts again on another node from what the
folder holds. Soak only: the cluster alone takes ~15-30 s to start on 2 cores.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness import Limits, ModelSpec, load_suite, run
from harness.serve import ServerConfig
from runfolder import OUTPUTS, REQUESTS, scan_logs
from tests.counting import counting_server
from tests.runhelpers import answered, final_outputs

PARAMS = {"per_operator": "3"}  # 192 jobs, ~700 exchanges


def _remove_when(cluster: object, node: object, log: Path, lines: int, done: list[float]) -> None:
    """Remove ``node`` once ``log`` holds ``lines`` lines (the run is well under way)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b"\n") >= lines:
            cluster.remove_node(node)  # type: ignore[attr-defined]
            done.append(time.monotonic())
            return
        time.sleep(0.05)  # noqa: TID251 - watching another thread's run


@pytest.mark.soak
def test_a_node_lost_mid_run_costs_only_its_in_flight_work(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from harness.spreading.raylaunch import Ray

    suite = load_suite("affine", params=PARAMS)
    run(suite, ModelSpec("sim"), folder=tmp_path / "one")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes = [cluster.add_node(num_cpus=1, resources={f"node{k}": 1}) for k in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    folder = tmp_path / "ray"
    removed: list[float] = []
    try:
        config = ServerConfig(port=0, latency_ms=40)
        with counting_server(config) as (url, paid):
            watcher = threading.Thread(
                target=_remove_when, args=(cluster, nodes[1], folder / REQUESTS, 150, removed)
            )
            watcher.start()
            ray_run = run(
                suite,
                ModelSpec("jev-sim", base_url=url),
                Limits(concurrency=8),
                folder=folder,
                placement=Ray(2, resources=[{"node0": 1}, {"node1": 1}]),
            )
            watcher.join()
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert removed, "the run ended before a node could be removed"
    assert len(ray_run.lost) == 1 and "shard 1 lost" in ray_run.lost[0], ray_run.lost
    result = ray_run
    assert result.complete and result.fatal is None
    # One writer: the files of a one-process run, numbered 1..N, no shards, no merge.
    assert not (folder / "shards").exists()
    logs = scan_logs(folder)
    lines = sum((folder / name).read_bytes().count(b"\n") for name in (REQUESTS, OUTPUTS))
    assert logs.last_seq == lines
    assert final_outputs(folder) == final_outputs(tmp_path / "one")
    assert max(answered(folder).values()) == 1  # each (job, round) recorded once
    # What the lost node had in flight (and not yet streamed back) was paid again: no more.
    print(
        f"\nray cluster: 3 nodes, 2 shards, node lost: 1; exchanges answered {paid.total}, "
        f"paid twice {paid.twice}; limiter {ray_run.limiter}; {ray_run.lost[0]}"
    )
    assert paid.twice <= 8 + 8  # the window: at most what the lost shard held, plus a pass
    assert ray_run.limiter["in_flight"] == 0  # the lost shard's places came back
