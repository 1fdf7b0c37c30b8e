"""The child processes the benchmark sections run: measured code and serve-sim servers.

Each measurement runs in a fresh interpreter (its imports, memory and CPU time are its
own) and prints one JSON object as its last line; serve-sim runs in a process of its own
so that its CPU time can be read from ``/proc`` apart from the client's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent


def last_json(
    args: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """Run the command ``args`` (in ``env``, default this process's, and ``cwd``); the JSON
    object on the last line it prints."""
    done = subprocess.run(args, capture_output=True, check=True, text=True, env=env, cwd=cwd)
    return dict(orjson.loads(done.stdout.strip().splitlines()[-1]))


def child(code: str, tree: Path | None = None) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (importing the packages of source ``tree``, by
    default this one's); it prints one JSON object last."""
    if tree is None:
        return last_json([sys.executable, "-c", code])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return last_json([sys.executable, "-c", code], env=env, cwd=tree)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; OSError elsewhere)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def extract(
    rev: str, into: Path, packages: Sequence[str] = ("runfolder", "harness", "suites")
) -> Path:
    """The ``packages`` of git revision ``rev``, in ``into`` (run with ``cwd`` and
    ``PYTHONPATH`` there, a child imports them, not this tree's)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, *packages],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    # Generous: a child's imports on a loaded 2-core machine took over 20 s; a server that
    # exits is caught at once by the poll below, so only a hang waits this long.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"serve-sim exited with {server.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # noqa: TID251 - waiting for a child process to listen
    raise RuntimeError(f"serve-sim did not come up at {url}")


@contextmanager
def serve_sim(options: Sequence[str] = (), *, tree: Path = ROOT) -> Iterator[tuple[str, int]]:
    """serve-sim of the source ``tree`` on a free loopback port: yields its URL and pid.

    ``python -m harness.commands.serve_sim`` rather than the CLI: it also runs the server of
    an older revision extracted into ``tree`` (``bench_serve --against``), whose CLI may not
    list the command yet.
    """
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "harness.commands.serve_sim", "--port", str(port), *options]
    server = subprocess.Popen(
        command,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_healthy(url, server)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=10)
