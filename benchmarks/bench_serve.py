"""serve-sim's requests per second on each wire, and against another revision's server.

The server runs in its own process (no added latency) and one client process drives it:
an aiohttp session with ``concurrency`` connections posting the same pre-encoded bodies
(first requests of the affine suite's jobs over every decoder) as fast as it is answered.
Figures are requests per second over a fixed number of requests after a warm-up.

``python -m benchmarks.bench_serve --against REV`` also runs the server of git revision REV
(extracted to a temporary folder, System One wire only) alternately with this tree's, with
the same client and bodies, and prints the ratio: on a shared 2-core machine only ratios
measured in one run mean anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import ROOT, extract, last_json, process_cpu_s, serve_sim

REQUESTS = 4000

_DRIVER = """
import sys, time, anyio, aiohttp, orjson
url, path, concurrency, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
payloads = [orjson.dumps(b) for b in orjson.loads(open(path, "rb").read())]
headers = {"content-type": "application/json"}

async def main():
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        state = {"next": 0, "ok": 0}

        async def worker(stop):
            while state["next"] < stop:
                payload = payloads[state["next"] % len(payloads)]
                state["next"] += 1
                async with session.post(url, data=payload, headers=headers) as reply:
                    await reply.read()
                    state["ok"] += reply.status == 200

        async def burst(count):
            stop = state["next"] + count
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker, stop)

        await burst(max(concurrency * 4, 400))  # warm-up: connections opened, caches filled
        state["ok"] = 0
        t0, c0 = time.perf_counter(), time.process_time()
        await burst(total)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        done = state["next"] - (max(concurrency * 4, 400))
        print(orjson.dumps({"rps": done / wall, "ok": state["ok"], "requests": done,
                            "sent": state["next"], "client_cpu_ms": cpu / done * 1000}).decode())

anyio.run(main)
"""


def _cpu_s(pid: int) -> float | None:
    """``process_cpu_s(pid)``, or None where there is no ``/proc``."""
    try:
        return process_cpu_s(pid)
    except OSError:
        return None


def bodies(wire: str, count: int = 600) -> list[Any]:
    """Request bodies for ``wire``: first requests of affine jobs over every decoder."""
    from harness import Job, load_suite
    from harness.wire import to_chat_requests, to_decisions_request

    suite = load_suite("affine")
    specs = suite.jobs()
    out: list[Any] = []
    for spec in specs[: count // len(suite.decoders) + 1]:
        for decoder in suite.decoders:
            body = Job(spec, (decoder,)).next_request("sim")[0]
            if wire == "openai-decisions":
                out.append(to_decisions_request(body))
            elif wire == "openai-chat":
                out.extend(q.body for q in to_chat_requests(body).values())
            else:
                out.append(body)
        if len(out) >= count:
            break
    return out[:count]


def measure(
    tmp: Path, wire: str, concurrency: int, *, tree: Path = ROOT, requests: int = REQUESTS
) -> dict[str, Any]:
    """Requests per second of the serve-sim in ``tree`` on ``wire`` at ``concurrency``."""
    from harness.wire import ROUTES

    path = tmp / f"bodies-{wire}.json"
    if not path.exists():
        path.write_bytes(orjson.dumps(bodies(wire)))
    options = [] if wire == "systemone" else ["--wire", wire]
    with serve_sim(options, tree=tree) as (url, pid):
        args = [url + ROUTES[wire], str(path), str(concurrency), str(requests)]
        before = _cpu_s(pid)
        result = last_json([sys.executable, "-c", _DRIVER, *args])
        after = _cpu_s(pid)
        if before is not None and after is not None:
            # CPU time is less sensitive than wall time to what else the machine is doing.
            result["server_cpu_us"] = (after - before) / result["sent"] * 1e6
    if result["ok"] != result["requests"]:
        raise RuntimeError(f"{result['requests'] - result['ok']} requests failed on {wire}")
    return result


def run(tmp: Path, requests: int = REQUESTS) -> dict[str, Any]:
    """``make bench``: serve-sim's rps on every wire at concurrency 64 and 256 (``requests``
    per measurement)."""
    out: dict[str, Any] = {}
    for wire in ("systemone", "openai-decisions", "openai-chat"):
        for concurrency in (64, 256):
            result = measure(tmp, wire, concurrency, requests=requests)
            out[f"serve_{wire}_c{concurrency}_rps"] = round(result["rps"])
            if "server_cpu_us" in result:
                out[f"serve_{wire}_c{concurrency}_server_cpu_us"] = round(result["server_cpu_us"])
    return out


def compare(rev: str, reps: int, requests: int = REQUESTS) -> dict[str, Any]:
    """This tree's server against revision ``rev``'s, alternating, same client and bodies."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nj-serve-bench-") as name:
        tmp = Path(name)
        old = extract(rev, tmp / "old")
        for concurrency in (64, 256):
            runs: dict[str, list[float]] = {"old": [], "new": []}
            cpu: dict[str, list[float]] = {"old": [], "new": []}
            for _ in range(reps):
                for side, tree in (("old", old), ("new", ROOT)):
                    result = measure(tmp, "systemone", concurrency, tree=tree, requests=requests)
                    runs[side].append(result["rps"])
                    cpu[side].append(result.get("server_cpu_us", float("nan")))
            old_rps, new_rps = statistics.median(runs["old"]), statistics.median(runs["new"])
            out[f"c{concurrency}_old_rps"] = [round(r) for r in runs["old"]]
            out[f"c{concurrency}_new_rps"] = [round(r) for r in runs["new"]]
            out[f"c{concurrency}_new_over_old"] = round(new_rps / old_rps, 2)
            for side in ("old", "new"):
                out[f"c{concurrency}_{side}_server_cpu_us"] = round(statistics.median(cpu[side]))
    return out


def main() -> None:
    """Print serve-sim's figures (and the comparison with ``--against REV``) as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_serve", description=__doc__)
    parser.add_argument("--against", metavar="REV", help="also run revision REV's server")
    parser.add_argument("--reps", type=int, default=3, help="alternating runs per server")
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests per run")
    args = parser.parse_args()
    if args.against:
        print(orjson.dumps(compare(args.against, args.reps, args.requests)).decode())
    else:
        with tempfile.TemporaryDirectory(prefix="nj-serve-bench-") as name:
            print(orjson.dumps(run(Path(name))).decode())


if __name__ == "__main__":
    main()
