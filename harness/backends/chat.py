"""The ``openai-chat`` backend: any chat LLM as a choice model, through ``top_logprobs``.

One ``answer`` turns each question of the batched System One body into one single-token
completion request, sends them concurrently, and reads each back by ``harness.wire.chat``'s
rule (a refusal for a question is kind ``refusal``, never retried); what a user sees:
docs/models.md ("A chat LLM").

**Concurrency.** One capacity limiter of ``concurrency`` places, shared by every exchange,
admits each question's completion (the connection pool has as many connections), so a run
never has more than ``concurrency`` completions in flight however many questions a round
batches. An attempt's latency is the wall time of all its completions, waits included.

**One attempt is all its completions.** If any completion fails, the attempt fails with
the most telling failure (a refused key, then a non-retryable error, then a 429 with the
longest wait, then any other) and the usage of the completions that did come back (billed);
a retry sends every question again. Usage of an answered attempt is the sum over its
completions; its ``request_id`` lists theirs, comma-separated.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Unpack

import anyio

from harness.backends.base import Reply, ServerOptions
from harness.backends.remote import RemoteBackend, dumps, openai_settings
from harness.errors import AuthError, BackendError, TransientError
from harness.wire import WireError, chat_usage, from_chat_completions, to_chat_requests
from harness.wire.chat import TOP_LOGPROBS, ChatQuestion

WIRE = "openai-chat"


def worst(failures: Mapping[str, BackendError]) -> tuple[str, BackendError]:
    """The failure that decides what the caller does: auth, final, 429 (longest wait), any."""

    def rank(item: tuple[str, BackendError]) -> tuple[int, float]:
        error = item[1]
        if isinstance(error, AuthError):
            return 0, 0.0
        if not isinstance(error, TransientError):
            return 1, 0.0
        if error.kind == "rate_limited":
            return 2, -(error.wait_s or 0.0)
        return 3, 0.0

    return min(failures.items(), key=rank)


class OpenAIChatBackend(RemoteBackend):
    """A chat-completions server asked one single-token question per completion."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        top_logprobs: int = TOP_LOGPROBS,
        env: Mapping[str, str] | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        """The server is ``base_url``, else ``OPENAI_BASE_URL``, else OpenAI's API; the key
        is ``OPENAI_API_KEY`` from ``env`` (default ``os.environ``). ``top_logprobs``:
        alternatives asked per completion (OpenAI accepts at most 20)."""
        base, key = openai_settings(base_url, os.environ if env is None else env)
        self.top_logprobs = top_logprobs
        super().__init__(model, WIRE, base, api_key=key, **options)
        self._places = anyio.CapacityLimiter(self.http.transport.concurrency)

    def describe(self) -> dict[str, Any]:
        """The manifest's model spec (never the key), with the alternatives asked."""
        spec = super().describe()
        spec["params"]["top_logprobs"] = self.top_logprobs
        return spec

    async def _complete(
        self,
        question: ChatQuestion,
        done: dict[str, tuple[dict[str, Any], Mapping[str, str], str | None]],
        failures: dict[str, BackendError],
    ) -> None:
        """One question's completion into ``done`` (body, headers, id), or its failure."""
        try:
            async with self._places:
                response = await self.http.post(dumps(question.body))
            done[question.qid] = (
                self.parse(response, None),
                response.headers,
                response.request_id,
            )
        except BackendError as error:
            failures[question.qid] = error

    def _cost(
        self, completion: Mapping[str, Any], counts: Mapping[str, int], headers: Mapping[str, str]
    ) -> float | None:
        """One completion's cost: its own report (``usage.cost``, a cost header), else its
        tokens at the price here; None when it reports no usage at all."""
        raw = completion.get("usage")
        if not isinstance(raw, Mapping):
            return self.cost(None, headers)
        usage: dict[str, Any] = dict(counts)
        if "cost" in raw:
            usage["cost"] = raw["cost"]
        return self.cost(usage, headers)

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        """Ask every question of ``body`` at once and read the answers back."""
        try:
            asked = to_chat_requests(body, top_logprobs=self.top_logprobs)
        except WireError as exc:
            raise BackendError("bad_request", f"cannot ask on {WIRE}: {exc}") from exc
        sent = {qid: question.body for qid, question in asked.items()}
        done: dict[str, tuple[dict[str, Any], Mapping[str, str], str | None]] = {}
        failures: dict[str, BackendError] = {}
        async with anyio.create_task_group() as tg:
            for question in asked.values():
                tg.start_soon(self._complete, question, done, failures)
        completions = {qid: done[qid][0] for qid in asked if qid in done}
        usage = {"input_tokens": 0, "output_tokens": 0}
        cost: float | None = 0.0
        for completion, headers, _ in done.values():
            counts = chat_usage(completion)
            for key in usage:
                usage[key] += counts[key]
            one = self._cost(completion, counts, headers)
            cost = None if cost is None or one is None else cost + one
        if failures:
            qid, error = worst(failures)
            raise type(error)(
                error.kind,
                f"question {qid} ({len(failures)} of {len(asked)} completions failed): {error}",
                status=error.status,
                wait_s=error.wait_s,
                body=error.body,
                request_id=error.request_id,
                usage=usage if done else None,
                cost_usd=cost if done else None,
                sent=sent,
            )
        ids = [rid for _, _, rid in (done[qid] for qid in asked) if rid]
        request_id = ",".join(ids) or None
        try:
            reply = from_chat_completions(body, asked, completions)
        except WireError as exc:
            raise TransientError(
                "malformed",
                f"malformed chat completion from {self.http.url}: {exc}",
                status=200,
                body=completions,
                request_id=request_id,
                usage=usage,
                cost_usd=cost,
                sent=sent,
            ) from exc
        served = reply.get("model") if isinstance(reply.get("model"), str) else None
        return Reply(reply, 200, served, usage, cost, request_id, sent)
