"""The ``openai-chat`` wire format: any chat LLM as a choice model, through ``top_logprobs``.

Each question of a batched System One request becomes one chat-completions request
(``POST /v1/chat/completions``) for ONE token with ``logprobs: true`` and ``top_logprobs:
N``; what it can and cannot ask, and the fields each answer records: docs/models.md ("A chat
LLM"). The prompt names every option with one token (``chat_prompt.label_tokens``); the
answer is read from the first token's alternatives (``from_chat_completion``):

- Alternatives match options by their token with surrounding spaces stripped (``"A"`` and
  ``" A"`` both name option A; their probabilities add).
- The distribution is the softmax of the matched options' logprobs, renormalised over the
  options returned; ``coverage`` is their summed probability. Options not returned are
  unknown, not zero: left out of ``probabilities`` and listed in ``missing``; the choice is
  the most probable returned option (ties: the server's own order).
- A ``refusal`` message, or alternatives that name no option, give a refusal answer
  (reason ``refusal`` or ``no_label``); a completion without logprobs raises WireError.

noul questions are asked as true (``A``) or false (``B``), answered with ``noul`` =
P(true); score questions as a choice between their levels, answered with the expected
level (``score``) and the chosen level's probability (``confidence``).

A client sends ``to_chat_requests`` and reads ``from_chat_completions``; serve-sim reads
``from_chat_request`` and answers ``to_chat_completion``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.wire.chat_prompt import SYSTEM_PROMPT, label_tokens, parse_prompt, render_prompt
from harness.wire.common import WireError, list_at, mapping_at, refusal_answer

TOP_LOGPROBS = 20  # OpenAI returns at most 20 alternatives per token
NEVER = -9999.0  # the logprob OpenAI reports for a token with (numerically) no probability
CHAT_QID = "q1"  # the id serve-sim gives the one question of a chat request


@dataclass(frozen=True)
class ChatQuestion:
    """One question of a batched request, rendered as a chat-completions request."""

    qid: str
    kind: str  # choice | noul | score
    labels: tuple[str, ...]  # the options' labels (noul: true, false; score: "0", "1", ...)
    tokens: tuple[str, ...]  # the token naming each label, in the same order
    scheme: str  # how the tokens were chosen: labels | letters | numbers
    legend: tuple[Any, ...]  # a score question's levels (empty otherwise)
    body: dict[str, Any]  # the request body to POST


def _options(question: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = question.get("type")
    if kind == "choice":
        return kind, dict(mapping_at(question, "criteria"))
    if kind == "noul":
        criteria = question.get("criteria")
        described = criteria if isinstance(criteria, Mapping) else {}
        return kind, {"true": described.get("true"), "false": described.get("false")}
    if kind == "score":
        return kind, {str(i): level for i, level in enumerate(list_at(question, "criteria"))}
    raise WireError(f"a chat model cannot answer a {kind!r} question")


def _question(
    qid: str, kind: str, state: Any, instructions: Any, options: dict[str, Any], model: Any, n: int
) -> ChatQuestion:
    if not options:
        raise WireError(f"questions.{qid} has no options")
    tokens, scheme = label_tokens(list(options))
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_prompt(kind, state, instructions, options)},
        ],
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": n,
    }
    legend = tuple(options.values()) if kind == "score" else ()
    return ChatQuestion(qid, kind, tuple(options), tokens, scheme, legend, body)


def to_chat_request(
    body: Mapping[str, Any], qid: str, *, model: str | None = None, top_logprobs: int = TOP_LOGPROBS
) -> ChatQuestion:
    """Question ``qid`` of a System One request as one chat-completions request (``model``:
    the server's name for it); WireError for a question a chat model cannot answer."""
    if top_logprobs < 1:
        raise WireError(f"top_logprobs must be 1 or more; got {top_logprobs}")
    question = mapping_at(mapping_at(body, "questions"), qid)
    kind, options = _options(question)
    name = body.get("model") if model is None else model
    instructions = question.get("instructions")
    return _question(qid, kind, body.get("state"), instructions, options, name, top_logprobs)


def to_chat_requests(
    body: Mapping[str, Any], *, model: str | None = None, top_logprobs: int = TOP_LOGPROBS
) -> dict[str, ChatQuestion]:
    """Every question of a System One request as a chat-completions request, by qid."""
    return {
        qid: to_chat_request(body, qid, model=model, top_logprobs=top_logprobs)
        for qid in mapping_at(body, "questions")
    }


def from_chat_request(body: Mapping[str, Any]) -> tuple[dict[str, Any], ChatQuestion]:
    """The System One request a chat request asks, its one question as ``CHAT_QID``
    (serve-sim's half); WireError for messages this module did not write (a 400, not a guess)."""
    messages = list_at(body, "messages")
    if len(messages) != 2 or not all(isinstance(m, Mapping) for m in messages):
        raise WireError("messages must be the system and user message this harness writes")
    system, user = messages
    if system.get("role") != "system" or system.get("content") != SYSTEM_PROMPT:
        raise WireError("messages[0] must be the harness's system prompt")
    content = user.get("content")
    if user.get("role") != "user" or not isinstance(content, str):
        raise WireError("messages[1] must be a user message with text content")
    kind, state, instructions, options = parse_prompt(content)
    question: dict[str, Any] = {"type": kind, "instructions": instructions}
    if kind == "choice":
        question["criteria"] = options
    elif kind == "score":
        question["criteria"] = list(options.values())
    elif any(text is not None for text in options.values()):
        question["criteria"] = options
    request = {"model": body.get("model"), "state": state, "questions": {CHAT_QID: question}}
    n = body.get("top_logprobs")
    top = n if isinstance(n, int) and n > 0 else TOP_LOGPROBS
    asked = _question(CHAT_QID, kind, state, instructions, options, body.get("model"), top)
    return request, asked


def _distribution(
    question: ChatQuestion, answer: Mapping[str, Any]
) -> tuple[dict[str, float], str]:
    """A System One answer's probability per label, and the label it chose."""
    if question.kind == "noul":
        p = float(answer["noul"])
        return {"true": p, "false": 1.0 - p}, "true" if p >= 0.5 else "false"
    given = answer["probabilities"]
    probabilities = {label: float(given.get(label, 0.0)) for label in question.labels}
    chosen = answer.get("choice")
    if chosen not in probabilities:
        chosen = max(question.labels, key=lambda label: probabilities[label])
    return probabilities, chosen


def _entry(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def to_chat_completion(
    question: ChatQuestion,
    answer: Mapping[str, Any],
    *,
    model: str,
    usage: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A chat completion whose logprobs carry ``answer``'s distribution (serve-sim's half):
    normalised, the ``top_logprobs`` likeliest option tokens, the chosen one first (a zero
    probability is ``NEVER``), so ``from_chat_completion`` recovers the choice."""
    probabilities, chosen = _distribution(question, answer)
    total = sum(p for p in probabilities.values() if p > 0) or 1.0
    token_of = dict(zip(question.labels, question.tokens, strict=True))
    rank = {label: i for i, label in enumerate(question.labels)}
    ordered = sorted(
        question.labels, key=lambda lab: (lab != chosen, -probabilities[lab], rank[lab])
    )
    n = question.body.get("top_logprobs") or TOP_LOGPROBS

    def logprob(label: str) -> float:
        p = probabilities[label]
        return math.log(p / total) if p > 0 else NEVER

    top = [_entry(token_of[label], logprob(label)) for label in ordered[:n]]
    token = token_of[chosen]
    used = dict(usage or {})
    prompt = int(used.get("input_tokens", 0))
    return {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": token, "refusal": None},
                "logprobs": {"content": [{**top[0], "top_logprobs": top}], "refusal": None},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1},
    }


def _alternatives(completion: Any) -> list[tuple[str, float]] | str:
    """The first token's alternatives as (token, logprob), or the refusal text."""
    choices = list_at(completion, "choices")
    if not choices or not isinstance(choices[0], Mapping):
        raise WireError("choices must hold at least one choice")
    message = choices[0].get("message")
    refused = message.get("refusal") if isinstance(message, Mapping) else None
    if isinstance(refused, str) and refused:
        return refused
    logprobs = choices[0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], Mapping):
        raise WireError("choices[0].logprobs.content is missing: the server ignored logprobs")
    first = content[0]
    out: list[tuple[str, float]] = []
    seen = set()
    candidates = first.get("top_logprobs")
    for entry in [*(candidates if isinstance(candidates, list) else []), first]:
        if not isinstance(entry, Mapping):
            continue
        token, logprob = entry.get("token"), entry.get("logprob")
        if isinstance(token, str) and isinstance(logprob, int | float) and token not in seen:
            seen.add(token)
            out.append((token, float(logprob)))
    return out


def from_chat_completion(question: ChatQuestion, completion: Any) -> dict[str, Any]:
    """A chat completion's first token as the System One answer to ``question`` (the rule
    and the extra fields: module docstring); WireError for a completion without logprobs."""
    got = _alternatives(completion)
    if isinstance(got, str):
        return refusal_answer(got)
    label_of = dict(zip(question.tokens, question.labels, strict=True))
    mass: dict[str, float] = {}  # label -> probability, in the server's order
    for token, logprob in got:
        label = label_of.get(token.strip())
        if label is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    if not mass or sum(mass.values()) <= 0.0:
        top = max(got, key=lambda item: item[1])[0] if got else None
        return refusal_answer(
            f"none of the {len(got)} likeliest tokens names an option (likeliest: {top!r})",
            reason="no_label",
        )
    coverage = sum(mass.values())
    chosen = max(mass, key=lambda label: mass[label])  # first of equals: the server's order
    probabilities = {label: mass[label] / coverage for label in question.labels if label in mass}
    extra = {
        "coverage": min(coverage, 1.0),
        "missing": [label for label in question.labels if label not in mass],
        "alternatives": len(got),
        "scheme": question.scheme,
    }
    if question.kind == "noul":
        return {"type": "noul", "noul": probabilities.get("true", 0.0), **extra}
    if question.kind == "score":
        expected = sum(int(label) * p for label, p in probabilities.items())
        legend = {str(i): level for i, level in enumerate(question.legend)}
        return {"type": "score", "score": expected, "confidence": probabilities[chosen],
                "legend": legend, "probabilities": probabilities, **extra}  # fmt: skip
    return {"type": "choice", "choice": chosen, "confidence": probabilities[chosen],
            "probabilities": probabilities, **extra}  # fmt: skip


def chat_usage(completion: Any) -> dict[str, int]:
    """A completion's token counts in System One's names (zeros when it reports none)."""
    usage = completion.get("usage") if isinstance(completion, Mapping) else None
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        "input_tokens": int(usage.get("prompt_tokens") or 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }


def from_chat_completions(
    request: Mapping[str, Any],
    asked: Mapping[str, ChatQuestion],
    completions: Mapping[str, Any],
) -> dict[str, Any]:
    """The System One response to ``request`` from one completion per question (one left
    out without its completion; usage summed; the first completion's model)."""
    answers = {}
    usage = {"input_tokens": 0, "output_tokens": 0}
    model = None
    for qid in mapping_at(request, "questions"):
        if qid not in completions or qid not in asked:
            continue
        completion = completions[qid]
        answers[qid] = from_chat_completion(asked[qid], completion)
        for key, count in chat_usage(completion).items():
            usage[key] += count
        if model is None and isinstance(completion, Mapping):
            model = completion.get("model")
    return {"model": model, "answers": answers, "usage": usage}
