"""The harness's own CPU per exchange, with the network replaced by a replay of recorded replies.

Against a real server (``bench_http``) the harness's CPU per request is aiohttp's, the
kernel's and its own together, and the machine's noise moves all three. Here one serve-sim
run records every request body and reply; then the same suite runs again with the backend's
sender swapped for ``ReplaySender``, which answers each body with its recorded reply bytes
after ``delay`` (no socket, no server). What the run spends per exchange is then the
harness's own work: jobs and decoders, the caller, pacer and budget, reading the answers,
the log lines. A bare loop over the same sender (the floor) is measured beside it in the
same process, and subtracted.

``delay`` 0 measures the work hot (the loop never idles); ``delay`` 50 ms lets the loop
sleep between waves of replies as it does against a server with 50 ms latency, so caches go
cold between waves: what the work costs in ``bench_http``'s concurrency-32 run.

Run alone: ``python -m benchmarks.bench_overhead [-c 32] [--delay-ms 0] [--repeats 3]
[--blocks]`` (``--blocks`` also times the main steps of an exchange, each wrapped).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from multidict import CIMultiDict

from benchmarks.processes import serve_sim
from harness import (
    Limits,
    ModelSpec,
    RunSettings,
    Suite,
    SystemOneBackend,
    load_suite,
)
from harness import run as run_suite
from harness.backends.base import Transport
from harness.backends.http.sender import RawResponse

# Every exchange goes through the replay: the request cache would answer before it.
UNCACHED = RunSettings(cache="off")


class ReplaySender:
    """A ``Sender`` that answers each body with the reply recorded for it, after ``delay_s``."""

    def __init__(self, replies: Mapping[bytes, bytes], delay_s: float) -> None:
        self._replies = replies
        self._delay_s = delay_s
        self._headers = CIMultiDict({"content-type": "application/json"})

    async def post(self, url: str, content: bytes) -> RawResponse:
        """The recorded reply to ``content``."""
        await asyncio.sleep(self._delay_s)
        return RawResponse(200, self._headers, self._replies[content])

    async def aclose(self) -> None:
        """Nothing to close."""


def record_replies(suite: Suite, folder: Path, concurrency: int) -> dict[bytes, bytes]:
    """Run ``suite`` once through serve-sim; each request body's reply, as bytes."""
    with serve_sim(["--latency-ms", "0", "--wire", "systemone"]) as (url, _pid):
        run_suite(suite, ModelSpec("jev-sim", base_url=url), Limits(concurrency=concurrency),
                  folder=folder, settings=UNCACHED)  # fmt: skip
    replies = {}
    with (folder / "requests.jsonl").open("rb") as log:
        for line in log:
            record = orjson.loads(line)
            replies[orjson.dumps(record["request"])] = orjson.dumps(record["response"])
    return replies


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def harness_cpu(
    suite: Suite, replies: Mapping[bytes, bytes], folder: Path, concurrency: int, delay_s: float
) -> float:
    """CPU seconds per exchange of one whole run over ``ReplaySender``."""
    backend = SystemOneBackend("jev-sim", base_url="http://127.0.0.1:9", api_key="",
                               transport=Transport(concurrency))  # fmt: skip
    backend.http._sender = ReplaySender(replies, delay_s)  # the fake sender
    c0 = _cpu_s()
    result = run_suite(
        suite, backend, Limits(concurrency=concurrency), folder=folder, settings=UNCACHED
    )
    return (_cpu_s() - c0) / result.counters.requests


def floor_cpu(replies: Mapping[bytes, bytes], concurrency: int, delay_s: float) -> float:
    """CPU seconds per exchange of a bare loop over the same sender (the floor)."""
    sender = ReplaySender(replies, delay_s)
    bodies = list(replies)

    async def main() -> None:
        queue = iter(bodies)

        async def worker() -> None:
            for body in queue:
                reply = await sender.post("", body)
                assert reply.status == 200

        await asyncio.gather(*(worker() for _ in range(concurrency)))  # noqa: TID251

    c0 = _cpu_s()
    asyncio.run(main())
    return (_cpu_s() - c0) / len(bodies)


def timed_blocks() -> tuple[collections.Counter[str], Callable[[], None]]:
    """Wrap the main steps of an exchange in timers; their ns totals, and an undo."""
    import harness.backends.remote as remote
    import harness.calling.caller as caller
    import harness.running.jobs as jobs
    import harness.running.recorder as recorder

    spent: collections.Counter[str] = collections.Counter()
    undo: list[Callable[[], None]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter_ns() - t0

        setattr(owner, name, timed)
        undo.append(lambda: setattr(owner, name, original))

    wrap(jobs.Job, "next_request", "job.next_request")
    wrap(jobs.Job, "apply", "job.apply")
    wrap(recorder.Recorder, "attempt", "recorder.attempt")
    wrap(recorder.Recorder, "finished", "recorder.finished")
    wrap(recorder.Recorder, "flush", "recorder.flush")
    wrap(caller, "read_answers", "read_answers")
    wrap(remote.RemoteBackend, "parse", "parse")
    wrap(remote.RemoteBackend, "cost", "cost")

    def restore() -> None:
        for step in reversed(undo):
            step()

    return spent, restore


def run(
    tmp: Path,
    concurrencies: tuple[int, ...] = (32, 256),
    delays_ms: tuple[float, ...] = (0.0, 50.0),
    repeats: int = 3,
    blocks: bool = False,
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The median over ``repeats`` runs of the harness's CPU per exchange, the floor's, and
    their difference: the harness's own (``params``: the affine suite's parameters)."""
    suite = load_suite("affine", params=params)
    replies = record_replies(suite, tmp / "recorded", 64)
    out: dict[str, Any] = {"overhead_exchanges": len(replies)}
    for concurrency in concurrencies:
        for delay_ms in delays_ms:
            key = f"overhead_c{concurrency}_delay{delay_ms:g}ms"
            harness = [
                harness_cpu(suite, replies, tmp / f"{key}-{i}", concurrency, delay_ms / 1e3)
                for i in range(repeats)
            ]
            # The floor is a plain loop over the fake: steady, measured once.
            h, f = statistics.median(harness), floor_cpu(replies, concurrency, delay_ms / 1e3)
            out[f"{key}_harness_cpu_us"] = round(h * 1e6, 1)
            out[f"{key}_floor_cpu_us"] = round(f * 1e6, 1)
            out[f"{key}_own_cpu_us"] = round((h - f) * 1e6, 1)
            if blocks:
                spent, undo = timed_blocks()
                n = len(replies)
                harness_cpu(suite, replies, tmp / f"{key}-blocks", concurrency, delay_ms / 1e3)
                undo()
                for label, ns in spent.most_common():
                    out[f"{key}_block_{label}_us"] = round(ns / n / 1e3, 1)
    return out


if __name__ == "__main__":
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_overhead", description=__doc__
    )
    parser.add_argument("-c", "--concurrency", type=int, action="append",
                        help="only these (default: 32 and 256)")  # fmt: skip
    parser.add_argument("--delay-ms", type=float, action="append",
                        help="only these reply delays (default: 0 and 50)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--blocks", action="store_true", help="also time an exchange's steps")
    parser.add_argument("--json", action="store_true", help="one JSON object (make bench)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nj-bench-overhead-") as name:
        figures = run(
            Path(name),
            tuple(args.concurrency or (32, 256)),
            tuple(args.delay_ms or (0.0, 50.0)),
            args.repeats,
            args.blocks,
        )
        if args.json:
            print(orjson.dumps(figures).decode())
        else:
            for key, value in figures.items():
                print(f"{key}: {value}")
