"""The affine suite through serve-sim on loopback with added latency, against the ideal.

Ideal wall time = max(requests x latency / concurrency, rounds x latency): what a client
with no overhead of its own would need. The server runs in its own process so that the
figure is the harness's, not a shared interpreter's.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

LATENCY_S = 0.05

_CLIENT = """
import time, orjson
from pathlib import Path
from harness import Limits, ModelSpec, load_suite, start_run
suite = load_suite("affine")
model = ModelSpec("jev-sim", base_url={url!r})
t0, c0 = time.perf_counter(), time.process_time()
result = start_run(suite, model, Limits(concurrency={concurrency}), folder=Path({folder!r}))
c = result.counters
print(orjson.dumps({{"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                    "requests": c.requests, "rounds": c.rounds, "jobs": c.jobs_done}}).decode())
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # noqa: TID251 - waiting for a child process to listen
    raise RuntimeError(f"serve-sim did not come up at {url}")


def _one(tmp: Path, concurrency: int) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "serve-sim",
            "--port",
            str(port),
            "--latency-ms",
            "50",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_healthy(url)
        code = _CLIENT.format(
            url=url, concurrency=concurrency, folder=str(tmp / f"http{concurrency}")
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        result = orjson.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(timeout=10)
    ideal = max(result["requests"] * LATENCY_S / concurrency, result["rounds"] * LATENCY_S)
    return {
        f"http_c{concurrency}_requests": result["requests"],
        f"http_c{concurrency}_wall_s": round(result["wall_s"], 2),
        f"http_c{concurrency}_ideal_s": round(ideal, 2),
        f"http_c{concurrency}_share_of_ideal": round(ideal / result["wall_s"], 3),
        f"http_c{concurrency}_client_cpu_ms_per_request": round(
            result["cpu_s"] / result["requests"] * 1000, 3
        ),
    }


def run(tmp: Path) -> dict[str, Any]:
    """The 256-concurrency figure the issue asks for, and 32 for context."""
    out: dict[str, Any] = {}
    for concurrency in (256, 32):
        out.update(_one(tmp, concurrency))
    return out
