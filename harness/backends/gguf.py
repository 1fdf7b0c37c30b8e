"""A local GGUF model with no server (``--model gguf:PATH``), read through llama-cpp-python.

Install, cost and the recorded fields: docs/models.md ("A local GGUF file"). Each question
is asked as on the ``openai-chat`` wire (``harness.wire.chat_prompt``), rendered with the
file's own chat template (a file without one is refused), then ONE forward pass whose last
logits are read straight from llama.cpp (``llama_get_logits_ith``); no token is generated.
Each option's token is scored with and without a leading space, each only when the tokenizer
keeps it as ONE token (a split label is unscored, in ``missing``), and the log-probabilities
over the whole vocabulary go through the chat wire's reader (``from_chat_completion``).

A wrongly read logits buffer gives uniform probabilities without any error, so an attempt
whose logits are all equal is refused (``unexpected``).

One forward pass runs at a time (one model, one context), in a worker thread, so the event
loop stays free. Each prompt is evaluated whole, never from a cached prefix, so an answer
depends on its prompt only (llama.cpp's kernels round differently by batch size).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from harness.backends.base import Reply
from harness.errors import BackendError, ConfigError
from harness.wire import WireError, from_chat_completions, to_chat_requests
from harness.wire.chat import ChatQuestion

N_CTX = 4096  # tokens: a 100-option direct question's prompt is about 1,600


class GgufBackend:
    """A GGUF file answering in process, one forward pass per question."""

    simulated = False
    price_per_million = 0.0  # runs in process: nothing is billed

    def __init__(self, path: str) -> None:
        """Load ``path``; refuses a missing file, a missing extra or a file with no chat
        template in one line (before any run folder exists)."""
        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError(f"--model gguf:{path}: no such file (give the path to a .gguf)")
        try:
            from llama_cpp import Llama, llama_chat_format
        except ImportError:
            raise ConfigError(
                "--model gguf: needs llama-cpp-python: pip install -e '.[gguf]' "
                "(builds llama.cpp from source, about 5-10 minutes)"
            ) from None
        self.path = file.resolve()
        self.name = "gguf:" + self.path.stem
        with self.path.open("rb") as handle:
            self.sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
        # llama-cpp-python's default is half the cores; one pass at a time can use them all.
        threads = os.cpu_count() or 1
        self._llama = Llama(
            model_path=str(self.path), n_ctx=N_CTX, n_threads=threads, verbose=False
        )
        template = self._llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigError(f"{self.path} has no chat template (tokenizer.chat_template)")
        model = self._llama._model
        eos, bos = self._llama.token_eos(), self._llama.token_bos()
        self._format = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
        )
        self._lock = anyio.Lock()
        self._token_ids: dict[str, int | None] = {}

    def __repr__(self) -> str:
        return f"GgufBackend({str(self.path)!r})"

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec: the file, its hash and the context size."""
        return {
            "name": self.name,
            "backend": "gguf",
            "simulated": False,
            "base_url": None,
            "params": {
                "path": str(self.path),
                "sha256": self.sha256,
                "n_ctx": self._llama.n_ctx(),
                "price": {"input_usd_per_million": 0.0, "source": "in process"},
            },
        }

    def _token_id(self, text: str) -> int | None:
        """The id of ``text`` when the tokenizer keeps it as one token, else None."""
        if text not in self._token_ids:
            ids = self._llama.tokenize(text.encode(), add_bos=False, special=False)
            self._token_ids[text] = ids[0] if len(ids) == 1 else None
        return self._token_ids[text]

    def _forward(self, prompt: str) -> tuple[Any, int, int]:
        """The last position's log-probabilities over the vocabulary (an array), the most
        probable token, and the prompt's length in tokens."""
        import numpy as np
        from llama_cpp import llama_get_logits_ith

        llm = self._llama
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        if len(tokens) >= llm.n_ctx():
            raise BackendError(
                "bad_request",
                f"the prompt has {len(tokens)} tokens; the context holds {llm.n_ctx()}",
            )
        # The whole prompt every time, in one pass: reusing a cached prefix would evaluate
        # the rest in smaller batches, whose quantized kernels round differently (measured:
        # logprobs moved by up to 0.13), so an answer would depend on the question before.
        llm.reset()
        llm.eval(tokens)
        pointer = llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).astype(np.float64)
        if not np.isfinite(logits).all() or float(logits.max()) == float(logits.min()):
            raise BackendError("unexpected", "the model's logits are not usable (all equal)")
        shifted = logits - logits.max()
        logprobs = shifted - math.log(float(np.exp(shifted).sum()))
        return logprobs, int(logprobs.argmax()), len(tokens)

    def _complete(self, question: ChatQuestion, prompt: str) -> dict[str, Any]:
        """A chat completion carrying every scored option token's log-probability."""
        logprobs, best, n_prompt = self._forward(prompt)
        entries: list[dict[str, Any]] = []
        for token in question.tokens:
            for text in (token, " " + token):
                token_id = self._token_id(text)
                if token_id is not None:
                    entries.append({"token": text, "logprob": float(logprobs[token_id])})
        entries.sort(key=lambda entry: -entry["logprob"])
        top = {
            "token": self._llama.detokenize([best]).decode("utf-8", errors="replace"),
            "logprob": float(logprobs[best]),
        }
        return {
            "model": self.name,
            "choices": [
                {
                    "message": {"role": "assistant", "content": top["token"], "refusal": None},
                    "logprobs": {"content": [{**top, "top_logprobs": entries}]},
                }
            ],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": 0},
        }

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Ask every question of ``body``, one forward pass each."""
        try:
            asked = to_chat_requests(body)
        except WireError as exc:
            raise BackendError("bad_request", f"cannot ask a GGUF model: {exc}") from exc
        prompts = {
            qid: self._format(messages=question.body["messages"]).prompt
            for qid, question in asked.items()
        }
        completions = {}
        async with self._lock:
            for qid, question in asked.items():
                completions[qid] = await anyio.to_thread.run_sync(
                    self._complete, question, prompts[qid]
                )
        reply = from_chat_completions(body, asked, completions)
        usage = reply["usage"]
        sent = {qid: {"prompt": prompt} for qid, prompt in prompts.items()}
        return Reply(reply, 200, self.name, usage, 0.0, None, sent)

    async def aclose(self) -> None:
        """Free the model, once no forward pass is running (freeing it under one crashes)."""
        async with self._lock:
            self._llama.close()
