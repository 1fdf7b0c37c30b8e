"""The HTTP path's shortcuts record what the slow way did.

- ``requests.jsonl`` holds the request and the response of a System One exchange as the
  bytes sent and received (``harness.running.recorder``): the same values as the objects, one line
  per exchange whatever the server's layout (pretty-printed JSON is serialised again).
- ``fewer_collections`` (``harness.collector``) puts the garbage collector back as it
  found it, nested or not, and leaves objects a caller froze alone.
"""

from __future__ import annotations

import gc
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.backends.sim import SimModel
from harness.backends.systemone import SystemOneBackend
from harness.calling import Caller, Pacer
from harness.collector import YOUNG_THRESHOLD, fewer_collections
from harness.progress import Counters, NoProgress
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.running.recorder import Recorder
from runfolder import REQUESTS
from tests.loopback import Reply, Seen, scripted_server
from tests.runhelpers import records

LAYOUTS = {
    "compact": lambda body: orjson.dumps(body),
    "spaced, newline after": lambda body: orjson.dumps(body).replace(b'":', b'": ') + b"\r\n",
    "pretty-printed": lambda body: orjson.dumps(body, option=orjson.OPT_INDENT_2),
}


async def exchange_once(folder: Path, backend: SystemOneBackend) -> tuple[dict[str, Any], Any]:
    """One job's first request through a Caller and a Recorder, as a run makes it."""
    suite = load_suite("affine")
    job = Job(suite.jobs()[0], suite.decoders)
    step = job.next_request("jev-sim")
    assert step is not None
    body, qmap = step
    recorder = Recorder(folder, "run-x", Counters(), NoProgress(), simulated=False)
    answered = await Caller(backend, Pacer(4)).call(
        body, partial(recorder.attempt, job, body, qmap)
    )
    recorder.close()
    await backend.aclose()
    return body, answered


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
async def test_the_log_holds_the_exchange_as_sent_and_received(tmp_path: Path, layout: str) -> None:
    sent: list[bytes] = []
    received: list[bytes] = []

    def server(request: Seen) -> Reply:
        sent.append(request.content)
        received.append(LAYOUTS[layout](SimModel().respond(orjson.loads(request.content))))
        return Reply(200, received[-1])

    async with scripted_server(server) as url:
        backend = SystemOneBackend("jev-sim", base_url=url, api_key="")
        body, answered = await exchange_once(tmp_path, backend)
    log = (tmp_path / REQUESTS).read_bytes()
    assert log.count(b"\n") == 1 and b"\r" not in log  # one exchange, one line
    [line] = records(tmp_path / REQUESTS)
    assert line["request"] == body and orjson.dumps(body) == sent[0]
    assert line["response"] == orjson.loads(received[0]) == answered.response
    assert list(line)[-1] == "seq"
    if layout != "pretty-printed":  # kept as received (one line already)
        assert b'"response":' + received[0].strip() + b',"error"' in log


def test_fewer_collections_restores_the_collector() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with fewer_collections():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        frozen = gc.get_freeze_count()
        assert frozen > 0
        made_since = [[] for _ in range(1000)]  # a second freeze would add these
        with fewer_collections():  # a second run in the same loop (a comparison)
            pass
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        # Neither frozen again nor unfrozen. Frozen objects can still be freed (another
        # thread's, e.g. pytest-xdist's), so the count may only have fallen a little.
        assert frozen - len(made_since) < gc.get_freeze_count() <= frozen
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_fewer_collections_leaves_a_callers_freeze_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        made_before = [[] for _ in range(1000)]  # a freeze as it enters would add these
        with fewer_collections():
            made_inside = [[] for _ in range(1000)]  # and one as it leaves, these too
        # Neither frozen again nor unfrozen. Frozen objects can still be freed (another
        # thread's, e.g. pytest-xdist's), so the count may only have fallen a little.
        assert frozen - len(made_before) < gc.get_freeze_count() <= frozen
        del made_before, made_inside
    finally:
        gc.unfreeze()
