"""serve-sim: routes, FastAPI-style refusals, keep-alive, concurrency, loopback-only, the CLI."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
import orjson
import pytest
from typesafe_sdk._schemas.models import HTTPValidationError, SystemOneResponse

from harness.backends.base import Transport
from harness.backends.sim import SimModel
from harness.backends.systemone import SystemOneBackend
from harness.commands import serve_sim
from harness.errors import ConfigError
from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.serve import (
    ServerConfig,
    check_host,
    serve_sim_in_background,
    serve_sim_in_thread,
    validation_errors,
)
from harness.serve.faults import KINDS, FaultSpec

BODY = Job(load_suite("affine").jobs()[5], ("direct", "tree10")).next_request("sim")[0]


async def test_routes() -> None:
    async with serve_sim_in_background() as url, httpx.AsyncClient(base_url=url) as client:
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert health.headers["x-typesafe-request-id"]
        missing = await client.post("/v1/other", json=BODY)
        assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
        assert missing.headers["x-typesafe-request-id"]
        wrong = await client.get("/v1/systemone")
        assert wrong.status_code == 405
        head = await client.head("/healthz")
        assert (head.status_code, head.content) == (200, b"")
        answered = await client.post("/v1/systemone", json=BODY)
        assert answered.status_code == 200
        SystemOneResponse.model_validate(answered.json())
        assert answered.json() == SimModel().respond(BODY)


INVALID = [
    b"{not json",
    b"[1, 2]",
    b"{}",
    orjson.dumps({"model": 3, "state": None, "questions": []}),
    orjson.dumps({"model": "sim", "state": "x", "questions": {}}),
    orjson.dumps({"model": "sim", "state": "x", "questions": {"q": {"type": "essay"}}}),
    orjson.dumps({"model": "sim", "state": "x", "questions": {"q": {"type": "choice"}}}),
    orjson.dumps({"model": "sim", "state": "x", "questions": {"q": "choice"}}),
]


@pytest.mark.parametrize("raw", INVALID)
async def test_invalid_bodies_get_a_fastapi_style_422(raw: bytes) -> None:
    async with serve_sim_in_background() as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/v1/systemone", content=raw, headers={"content-type": "application/json"}
        )
    assert response.status_code == 422
    detail = HTTPValidationError.model_validate(response.json()).detail
    assert detail and detail[0].loc[0] == "body"


def test_validation_accepts_what_the_sdk_accepts() -> None:
    assert validation_errors(BODY) == []
    noul = {"model": "m", "state": ["a"], "questions": {"q": {"type": "noul"}}}
    assert validation_errors(noul) == []


async def test_unreadable_questions_get_a_400_detail() -> None:
    body = {
        "model": "sim",
        "state": {"expression": "1 + 1"},
        "questions": {"q1": {"type": "choice", "instructions": "?", "criteria": {"a": None}}},
    }
    async with serve_sim_in_background() as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/v1/systemone", json=body)
    assert response.status_code == 400
    assert response.json()["detail"]["error_type"] == "bad_request"


async def exchange(stream: anyio.abc.SocketStream, body: bytes) -> tuple[int, Any]:
    """One request and its reply on an open connection (HTTP/1.1 by hand, Content-Length)."""
    head = b"POST /v1/systemone HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: %d\r\n\r\n"
    await stream.send(head % len(body) + body)
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    header, data = data.split(b"\r\n\r\n", 1)
    lines = header.decode().split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert fields.get("connection") != "close"
    while len(data) < int(fields["content-length"]):
        data += await stream.receive()
    return int(lines[0].split()[1]), orjson.loads(data)


async def test_keep_alive_serves_many_requests_on_one_connection() -> None:
    raw = orjson.dumps(BODY)
    async with serve_sim_in_background() as url:
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            for _ in range(5):
                status, body = await exchange(stream, raw)
                assert status == 200 and body == SimModel().respond(BODY)


async def test_the_reset_fault_is_a_tcp_reset_not_a_close() -> None:
    config = ServerConfig(port=0, faults=FaultSpec.parse("reset=1"))
    raw = orjson.dumps(BODY)
    head = b"POST /v1/systemone HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % len(raw)
    async with serve_sim_in_background(config) as url:
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(head + raw)
            # A FIN would end the stream (EndOfStream); an RST breaks it.
            with anyio.fail_after(5), pytest.raises(anyio.BrokenResourceError) as caught:
                await stream.receive()
    assert isinstance(caught.value.__cause__, ConnectionResetError)


async def test_expect_100_continue_is_honoured() -> None:
    raw = orjson.dumps(BODY)
    head = (
        b"POST /v1/systemone HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n"
        b"content-length: %d\r\n\r\n" % len(raw)
    )
    async with serve_sim_in_background() as url:
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(head)
            with anyio.fail_after(5):
                interim = await stream.receive()
            assert interim.startswith(b"HTTP/1.1 100 ")
            await stream.send(raw)
            with anyio.fail_after(5):
                final = await stream.receive()
            assert final.startswith(b"HTTP/1.1 200 OK")


async def test_oversized_and_garbled_requests_are_refused() -> None:
    config = ServerConfig(port=0, max_body_bytes=1000)
    async with serve_sim_in_background(config) as url, httpx.AsyncClient(base_url=url) as client:
        big = await client.post("/v1/systemone", json=BODY)
        assert big.status_code == 413
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(b"NONSENSE\r\n\r\n")
            reply = await stream.receive()
        # aiohttp cannot tell the version of an unparseable request line, so it answers 1.0.
        assert reply.split(b"\r\n", 1)[0] in (
            b"HTTP/1.1 400 Bad Request",
            b"HTTP/1.0 400 Bad Request",
        )


async def test_latency_is_slept_on_the_loop_for_hundreds_of_connections() -> None:
    config = ServerConfig(port=0, latency_ms=200)
    bodies = [Job(s, ("tree10",)).next_request("sim")[0] for s in load_suite("affine").jobs()[:256]]
    async with (
        serve_sim_in_background(config) as url,
        SystemOneBackend("sim", base_url=url, api_key="", transport=Transport(256)) as backend,
    ):
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for body in bodies:
                tg.start_soon(backend.answer, body)
        elapsed = time.perf_counter() - started
    # One at a time would take 256 x 0.2 s = 51 s; the latencies must overlap.
    assert 0.2 <= elapsed < 10


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_are_allowed(host: str) -> None:
    check_host(host, allow_remote=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_other_hosts_need_allow_remote(host: str) -> None:
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_host(host, allow_remote=False)
    check_host(host, allow_remote=True)


def test_serve_sim_in_a_thread_for_sync_callers() -> None:
    with serve_sim_in_thread(ServerConfig(port=0, model="oracle")) as url:
        response = httpx.post(f"{url}/v1/systemone", json=BODY)
    assert response.status_code == 200 and response.json()["model"] == "oracle"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="numericjev")
    serve_sim.register(top.add_subparsers(dest="command"))
    return top


def test_help_explains_every_option_and_the_fault_syntax(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve-sim", "--help"])
    text = capsys.readouterr().out
    for option in ("--host", "--port", "--allow-remote", "--model", "--latency-ms",
                   "sim:seed=4", "--faults", "--fault-seed", "--slow-seconds", "--retry-after",
                   "--max-faults-per-request", "mixed=P", "--wire", "--key"):  # fmt: skip
        assert option in text
    for kind in KINDS:
        assert f"\n    {kind} " in text
    # The epilog is printed as written (raw): every line must fit a terminal.
    assert max(len(line) for line in text.splitlines()) <= 100


def test_options_become_a_config() -> None:
    args = parser().parse_args(
        ["serve-sim", "--port", "0", "--model", "sim:seed=4,slip_bit=0.5", "--latency-ms", "50",
         "--faults", "mixed=0.1", "--fault-seed", "9"]
    )  # fmt: skip
    config = serve_sim.config_from(args)
    assert (config.port, config.model, config.latency_ms) == (0, "sim", 50.0)
    assert (config.sim.seed, config.sim.slip_bit, config.fault_seed) == (4, 0.5, 9)
    oracle = serve_sim.config_from(parser().parse_args(["serve-sim", "--model", "oracle"]))
    assert oracle.model == "oracle"
    for bad in ("oracle:seed=1", "sim:seed=x", "jev-sim"):
        with pytest.raises(ConfigError):
            serve_sim.config_from(parser().parse_args(["serve-sim", "--model", bad]))
    assert sum(p for _, p in config.faults.rates) == pytest.approx(0.1)
    assert (config.wire, config.key, config.route) == ("systemone", None, "/v1/systemone")
    assert args.func is serve_sim.run
    keyed = parser().parse_args(["serve-sim", "--wire", "openai-chat", "--key", "nj-secret-1"])
    config = serve_sim.config_from(keyed)
    assert (config.wire, config.key, config.route) == (
        "openai-chat",
        "nj-secret-1",
        "/v1/chat/completions",
    )
    assert "nj-secret-1" not in repr(config)
    with pytest.raises(ConfigError, match="must not be empty"):
        serve_sim.config_from(parser().parse_args(["serve-sim", "--key", " "]))
    bad = parser().parse_args(["serve-sim", "--faults", "nope=1"])
    with pytest.raises(ConfigError, match="unknown kind"):
        serve_sim.config_from(bad)
    remote = parser().parse_args(["serve-sim", "--host", "0.0.0.0", "--port", "0"])
    with pytest.raises(ConfigError, match="loopback only"):
        serve_sim.run(remote)


def test_the_command_serves_until_sigterm() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "harness.commands.serve_sim", "--port", "0", "--faults", "500=1",
         "--max-faults-per-request", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert "serve-sim: sim model (simulated) on http://127.0.0.1:" in line
        url = line.split(" on ", 1)[1].split("/v1/systemone", 1)[0]
        with httpx.Client(base_url=url) as client:
            first = client.post("/v1/systemone", json=BODY)
            second = client.post("/v1/systemone", json=BODY)
        assert (first.status_code, second.status_code) == (500, 200)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=10)
        assert child.returncode == 0 and "stopped" in err
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


def test_a_port_in_use_is_a_clear_error() -> None:
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        port = url.rsplit(":", 1)[1]
        args = parser().parse_args(["serve-sim", "--port", port])
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve_sim.run(args)
