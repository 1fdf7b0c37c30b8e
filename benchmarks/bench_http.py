"""The affine suite through serve-sim on loopback with 50 ms latency, against the ideal and
against bare clients, in one run with one server.

For each concurrency (32 and 256) against ONE serve-sim process (its own process, so its CPU
is its own and is read from ``/proc``), ``REPEATS`` rounds of three runs in turn:

- ``harness``: ``run`` as users run it (its one sender: aiohttp);
- ``bare``: a bare aiohttp client replaying the harness run's own request bodies (from its
  ``requests.jsonl``, pre-encoded) at the same concurrency: the library's own cost, so that
  harness - bare is what the harness's own work (jobs, decoders, validation, log lines)
  costs beside the library (the issue's goal: at most the library's, harness/bare <= 2);
- ``bare_httpx``: the same replay through httpx over the ``httpx-aiohttp`` transport
  (``HttpxAiohttpClient``, which keeps the environment's proxies): the other candidate for
  the sender, measured beside aiohttp in the same round;

then once each:

- ``harness_httpx_aiohttp``: the harness with its sender swapped for that httpx client;
- ``harness_2_workers``: the harness in two worker processes (``Shards(2)``), each with
  half the concurrency: on two cores a client that is CPU-bound can use the second.

Client CPU per request is the client process's CPU time over the requests it sent; the
ratio harness/bare is the figure the target is about (<= 1.5). Each ratio printed is the
median of the rounds' ratios with its range, and the figures beside it are those of the
round whose harness/bare ratio is the median. The share of ideal is ideal / wall,
where ideal = max(requests x latency / concurrency, rounds x latency): what a client with no
overhead would need. The server's CPU share (its CPU seconds over the
client's wall seconds, as a fraction of one core) says whether the server was the
bottleneck: on a 2-core machine, client and server together cannot use more than 2.

``python -m benchmarks.bench_http --against REV`` compares two revisions of the harness
instead: this tree's and revision REV's (extracted to a temporary folder) run the affine suite
AT THE SAME TIME against one server, ``--repeats`` pairs per concurrency, and it prints each
pair's CPU per request and the median ratio this/REV with its range. Run one after the other,
one revision's figure moved by up to +-20% within minutes on the shared VM; side by side, the
machine's drift hits both alike (this tree against itself: 0.97-1.02). Each is the other's
load, so the absolute figures run higher than alone: read the ratio.

Every client here runs with glibc's malloc thresholds fixed (``MALLOC_MMAP_THRESHOLD_`` 1 MiB,
``MALLOC_TRIM_THRESHOLD_`` 2 MiB): the state glibc reaches by itself once a process frees a
large mapped block. asyncio reads each socket into a 256 KiB buffer; short of that state,
glibc maps and unmaps it on every read. The harness's run was in that state already; the
bare client was not, and paid an mmap, mremap and munmap per reply: 14-15% of its CPU
(medians of 4 pairs run side by side, 2026-11-23), which flattered the ratio by as much.
With the thresholds fixed the harness's figure is unchanged (side by side: 0.99 at 32, 1.00
at 256) and the floor carries no handicap.

Wires: System One here (the bare client replays its bodies as logged); the same suite on
the OpenAI Decisions and chat wires, with each wire's client CPU as a ratio to System One's,
is ``bench_wires``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from benchmarks.processes import ROOT, extract, last_json, process_cpu_s, serve_sim

LATENCY_S = 0.05
# The same malloc policy for every client (see the module docstring): no 256 KiB read buffer
# mapped and unmapped per reply in one client and not the other.
CLIENT_ENV = {
    **os.environ,
    "MALLOC_MMAP_THRESHOLD_": str(1 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(2 << 20),
}
# Rounds per concurrency: on a shared 2-core VM one round's ratio moved by up to
# +-20% between runs minutes apart; the median of pairs run back to back is steadier.
REPEATS = 3
WIRES = ("systemone",)  # the other wires: benchmarks.bench_wires

_HARNESS = """
import time, orjson
from pathlib import Path
# SystemOneBackend is imported (with aiohttp) before the clock starts, as the bare client's.
from harness import Limits, ModelSpec, RunSettings, Shards, SystemOneBackend, load_suite, run
suite = load_suite("affine", params={params!r})
concurrency, url, sender = {concurrency}, {url!r}, {sender!r}
import resource
if sender == "httpx-aiohttp":  # the other candidate, swapped in for the sender
    import httpx
    from httpx_aiohttp import HttpxAiohttpClient
    from harness.backends.http.sender import RawResponse
    from harness.backends.base import Transport

    class HttpxSender:
        def __init__(self):
            self.client = None

        async def post(self, url, content):
            if self.client is None:  # made in the running loop, as the harness's own
                limits = httpx.Limits(max_connections=concurrency)
                self.client = HttpxAiohttpClient(
                    headers={{"Content-Type": "application/json"}}, limits=limits,
                    timeout=httpx.Timeout(300, connect=30))
            r = await self.client.post(url, content=content)
            return RawResponse(r.status_code, r.headers, r.content)

        async def aclose(self):
            if self.client is not None:
                await self.client.aclose()

    model = SystemOneBackend("jev-sim", base_url=url, api_key="", transport=Transport(concurrency))
    model.http._sender = HttpxSender()
else:
    model = ModelSpec("jev-sim", base_url=url)

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

t0, c0 = time.perf_counter(), cpu()
if sender == "2-workers":
    result = run(suite, model, Limits(concurrency=concurrency), folder=Path({folder!r}),
                 placement=Shards(2), settings=RunSettings(cache="off"))
else:
    result = run(suite, model, Limits(concurrency=concurrency), folder=Path({folder!r}),
                 settings=RunSettings(cache="off"))
c = result.counters
print(orjson.dumps({{"wall_s": time.perf_counter() - t0, "cpu_s": cpu() - c0,
                    "requests": c.requests, "rounds": c.rounds, "jobs": c.jobs_done}}).decode())
"""

# Replays every request body of a run folder once, at a fixed concurrency, reading each reply.
_BARE = """
import sys, time, asyncio, aiohttp, orjson
url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
payloads = [orjson.dumps(orjson.loads(line)["request"]) for line in open(path, "rb")]
headers = {"content-type": "application/json"}

async def main():
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        queue = iter(payloads)
        ok = 0

        async def worker():
            nonlocal ok
            for payload in queue:
                async with session.post(url, data=payload) as reply:
                    await reply.read()
                    ok += reply.status == 200

        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))  # noqa: TID251
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(orjson.dumps({"wall_s": wall, "cpu_s": cpu, "requests": len(payloads), "ok": ok}).decode())

asyncio.run(main())
"""

# The same replay through httpx over the httpx-aiohttp transport: the other candidate.
_BARE_HTTPX = """
import sys, time, asyncio, httpx, orjson
from httpx_aiohttp import HttpxAiohttpClient
url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
payloads = [orjson.dumps(orjson.loads(line)["request"]) for line in open(path, "rb")]
headers = {"content-type": "application/json"}

async def main():
    limits = httpx.Limits(max_connections=concurrency)
    async with HttpxAiohttpClient(headers=headers, limits=limits, timeout=300) as client:
        queue = iter(payloads)
        ok = 0

        async def worker():
            nonlocal ok
            for payload in queue:
                reply = await client.post(url, content=payload)
                ok += reply.status_code == 200

        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))  # noqa: TID251
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(orjson.dumps({"wall_s": wall, "cpu_s": cpu, "requests": len(payloads), "ok": ok}).decode())

asyncio.run(main())
"""


def _measure(pid: int, args: list[str]) -> dict[str, Any]:
    """Run one client process; add the server's CPU seconds spent meanwhile."""
    before = process_cpu_s(pid)
    result = last_json(args, CLIENT_ENV)
    result["server_cpu_s"] = process_cpu_s(pid) - before
    return result


def _figures(name: str, result: dict[str, Any]) -> dict[str, Any]:
    n = result["requests"]
    return {
        f"{name}_wall_s": round(result["wall_s"], 2),
        f"{name}_client_cpu_us_per_request": round(result["cpu_s"] / n * 1e6, 1),
        f"{name}_server_cpu_us_per_request": round(result["server_cpu_s"] / n * 1e6, 1),
        # CPU the server used per second of the client's wall time (1.0 = one core busy).
        f"{name}_server_cpu_share": round(result["server_cpu_s"] / result["wall_s"], 2),
    }


def _per_request(result: dict[str, Any]) -> float:
    return float(result["cpu_s"]) / result["requests"]


def compare_clients(
    tmp: Path,
    url: str,
    pid: int,
    concurrency: int,
    repeats: int = REPEATS,
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The harness, the bare aiohttp client and the bare httpx client in turn ``repeats``
    times, then the harness over httpx-aiohttp and in two workers once each, all against one
    server.

    Each ratio is the median of the rounds' ratios (a round's clients run back to back, so
    that the machine's drift moves them alike), with the lowest and highest beside it.
    """
    py = sys.executable
    out: dict[str, Any] = {}
    folder = tmp / f"http-c{concurrency}"
    rounds: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    for i in range(repeats):
        run_folder = folder.with_name(f"{folder.name}-{i}")
        code = _HARNESS.format(
            concurrency=concurrency,
            url=url,
            sender="default",
            folder=str(run_folder),
            params=params or {},
        )
        harness = _measure(pid, [py, "-c", code])
        replay = [url + "/v1/systemone", str(run_folder / "requests.jsonl"), str(concurrency)]
        bare = _measure(pid, [py, "-c", _BARE, *replay])
        bare_httpx = _measure(pid, [py, "-c", _BARE_HTTPX, *replay])
        for name, result in (("bare aiohttp", bare), ("bare httpx", bare_httpx)):
            if result["ok"] != result["requests"]:
                failed = result["requests"] - result["ok"]
                raise RuntimeError(f"the {name} client got {failed} failures")
        rounds.append((harness, bare, bare_httpx))
    others: dict[str, dict[str, Any]] = {}
    for sender in ("httpx-aiohttp", "2-workers"):
        code = _HARNESS.format(
            concurrency=concurrency,
            url=url,
            sender=sender,
            folder=f"{folder}-{sender}",
            params=params or {},
        )
        try:
            others[sender] = _measure(pid, [py, "-c", code])
        except subprocess.CalledProcessError as exc:  # httpx-aiohttp missing: say so, go on
            last = (exc.stderr.strip().splitlines() or ["no output"])[-1]
            out[f"http_c{concurrency}_{sender.replace('-', '_')}_skipped"] = last
    c = f"http_c{concurrency}"
    # The figures of the round whose harness/bare ratio is the median, so that they agree.
    ratios = sorted((_per_request(h) / _per_request(b), i) for i, (h, b, _) in enumerate(rounds))
    harness, bare, bare_httpx = rounds[ratios[len(ratios) // 2][1]]
    ideal = max(harness["requests"] * LATENCY_S / concurrency, harness["rounds"] * LATENCY_S)
    out[f"{c}_requests"] = harness["requests"]
    out[f"{c}_ideal_s"] = round(ideal, 2)
    out[f"{c}_pairs"] = repeats
    out.update(_figures(f"{c}_harness", harness))
    shares = sorted(ideal / h["wall_s"] for h, _, _ in rounds)
    out[f"{c}_harness_share_of_ideal"] = round(statistics.median(shares), 3)
    out[f"{c}_harness_share_of_ideal_range"] = [round(shares[0], 3), round(shares[-1], 3)]
    out.update(_figures(f"{c}_bare", bare))
    # What a client with nothing around its requests reaches against this server: a share of
    # ideal well under 1 for both bare clients means the server (or the machine) is the limit.
    out[f"{c}_bare_share_of_ideal"] = round(ideal / bare["wall_s"], 3)
    out[f"{c}_harness_over_bare_cpu"] = round(ratios[len(ratios) // 2][0], 2)
    out[f"{c}_harness_over_bare_cpu_range"] = [round(ratios[0][0], 2), round(ratios[-1][0], 2)]
    # The harness's own CPU beyond the library's, as a share of the library's (goal <= 1).
    own = sorted(_per_request(h) / _per_request(b) - 1 for h, b, _ in rounds)
    out[f"{c}_harness_own_over_library_cpu"] = round(statistics.median(own), 2)
    out[f"{c}_harness_own_over_library_cpu_range"] = [round(own[0], 2), round(own[-1], 2)]
    # The two candidates for the sender, replaying the same bodies in the same round.
    out.update(_figures(f"{c}_bare_httpx", bare_httpx))
    out[f"{c}_bare_httpx_share_of_ideal"] = round(ideal / bare_httpx["wall_s"], 3)
    both = sorted(_per_request(x) / _per_request(b) for _, b, x in rounds)
    out[f"{c}_bare_httpx_over_bare_aiohttp_cpu"] = round(statistics.median(both), 2)
    out[f"{c}_bare_httpx_over_bare_aiohttp_cpu_range"] = [round(both[0], 2), round(both[-1], 2)]
    for sender, result in others.items():
        name = f"{c}_harness_{sender.replace('-', '_')}"
        out.update(_figures(name, result))
        out[f"{name}_share_of_ideal"] = round(ideal / result["wall_s"], 3)
        out[f"{name}_over_bare_cpu"] = round(_per_request(result) / _per_request(bare), 2)
    return out


def run(
    tmp: Path,
    concurrencies: tuple[int, ...] = (32, 256),
    repeats: int = REPEATS,
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``make bench``: each concurrency against one serve-sim process with 50 ms latency
    (``params``: the affine suite's parameters, for a smaller suite)."""
    out: dict[str, Any] = {"http_machine_load_1min": round(os.getloadavg()[0], 2)}
    for wire in WIRES:
        options = ["--latency-ms", str(LATENCY_S * 1000), "--wire", wire]
        with serve_sim(options) as (url, pid):
            for concurrency in concurrencies:
                out.update(compare_clients(tmp, url, pid, concurrency, repeats, params))
    return out


def _side_by_side(
    trees: dict[str, Path], url: str, concurrency: int, tmp: Path
) -> dict[str, float]:
    """One run of the harness of each source tree, all at once; CPU us per request of each."""
    children = {}
    for side, tree in trees.items():
        code = _HARNESS.format(
            concurrency=concurrency, url=url, sender="default", folder=str(tmp / side), params={}
        )
        # cwd too: ``python -c`` puts the working directory first on sys.path.
        env = {**CLIENT_ENV, "PYTHONPATH": str(tree)}
        children[side] = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    per_request = {}
    for side, child in children.items():
        out, err = child.communicate()
        if child.returncode:  # e.g. a revision older than the API the run uses
            last = (err.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the {side} tree's harness failed: {last}")
        per_request[side] = _per_request(orjson.loads(out.strip().splitlines()[-1])) * 1e6
    return per_request


def against(
    rev: str, tmp: Path, concurrencies: tuple[int, ...] = (32, 256), pairs: int = 4
) -> dict[str, Any]:
    """This tree's harness beside revision ``rev``'s, ``pairs`` times per concurrency, each
    pair at the same time against one server: CPU per request of each, and their ratio."""
    trees = {"this": ROOT, "rev": extract(rev, tmp / "rev")}
    out: dict[str, Any] = {"http_against": rev}
    with serve_sim(["--latency-ms", str(LATENCY_S * 1000), "--wire", "systemone"]) as (url, _):
        for concurrency in concurrencies:
            ratios = []
            for i in range(pairs):
                cpu = _side_by_side(trees, url, concurrency, tmp / f"c{concurrency}-{i}")
                ratios.append(cpu["this"] / cpu["rev"])
                print(
                    f"c={concurrency} pair {i + 1}: this {cpu['this']:.0f} us/request, "
                    f"{rev} {cpu['rev']:.0f}, ratio {ratios[-1]:.3f}",
                    file=sys.stderr,
                )
            c = f"http_c{concurrency}_this_over_rev_cpu"
            out[c] = round(statistics.median(ratios), 3)
            out[f"{c}_range"] = [round(min(ratios), 3), round(max(ratios), 3)]
    return out


if __name__ == "__main__":  # this section alone: python -m benchmarks.bench_http [-c 32]
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_http",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-c", "--concurrency", type=int, action="append", help="only these (default: 32 and 256)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help=f"rounds (--against: pairs) per concurrency (default {REPEATS}; --against: 4)",
    )
    parser.add_argument(
        "--against", metavar="REV", help="compare this tree's harness with revision REV's"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nj-bench-http-") as name:
        concurrencies = tuple(args.concurrency or (32, 256))
        if args.against:
            try:
                figures = against(args.against, Path(name), concurrencies, args.repeats or 4)
            except subprocess.CalledProcessError:  # git archive: no such revision
                sys.exit(f"bench_http: git cannot extract revision {args.against!r}")
            except RuntimeError as exc:
                sys.exit(f"bench_http: {exc}")
        else:
            figures = run(Path(name), concurrencies, args.repeats or REPEATS)
        for key, value in figures.items():
            print(f"{key}: {value}")
