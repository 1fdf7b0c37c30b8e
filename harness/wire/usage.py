"""The tokens one request bills, as its wire sends it: the one rule serve-sim reports and
the dry run estimates with.

A simulated model's usage is made up, so it is made up once, here, from what goes over the
wire, as a real server bills what it received in its own shape:

- input: about ``CHARS_PER_TOKEN`` characters a token of the body as sent; on the chat wire,
  of the prompt (each message's text and four characters for its role), not the JSON around it;
- output: ``OUTPUT_PER_ANSWER`` tokens an answer on System One and Decisions, one a chat
  completion (``max_tokens: 1``).

The in-process sim and oracle bill their System One body by the same rule
(``wire_usage`` of ``systemone``). A tokenizer that counts more characters a token
(hosted Jev's: ``harness.backends.pricing``) is a ``chars_per_token`` of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

CHARS_PER_TOKEN = 4
OUTPUT_PER_ANSWER = 3
ROLE_CHARS = 4  # a chat message's role and separators, in characters


def wire_usage(
    wire: str,
    sent: Mapping[str, Any],
    chars_per_token: float = CHARS_PER_TOKEN,
    size: int | None = None,
) -> dict[str, int]:
    """``input_tokens`` and ``output_tokens`` of one HTTP request's body ``sent`` on ``wire``
    (the module's rule); ``size`` is ``len(orjson.dumps(sent))`` where the caller knows it
    (the sim: ``reading.json_size``)."""
    if wire == "openai-chat":
        messages = sent.get("messages")
        chars = sum(
            len(str(m.get("content") or "")) + ROLE_CHARS
            for m in (messages if isinstance(messages, list) else [])
            if isinstance(m, Mapping)
        )
        output = 1
    else:
        chars = len(orjson.dumps(sent)) if size is None else size
        questions = sent.get("questions")
        output = OUTPUT_PER_ANSWER * (len(questions) if isinstance(questions, list | dict) else 0)
    return {"input_tokens": max(1, int(chars / chars_per_token)), "output_tokens": output}
