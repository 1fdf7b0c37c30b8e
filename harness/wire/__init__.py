"""Wire formats as pure translations: System One bodies to other APIs' shapes and back.

No I/O here: each function takes and returns JSON-ready values, so a client backend and
serve-sim share one definition of every format (the client sends ``to_*`` and reads
``from_*_response``; serve-sim reads ``from_*_request`` and answers ``to_*_response``).
Modules: ``answers`` (a reply validated against its request, refusals included),
``decisions`` and ``chat`` (with ``chat_prompt``) for ``--wire openai-decisions`` and
``openai-chat``, ``encoded`` (a body with its JSON bytes, made once) and ``usage`` (the
tokens a request bills as its wire sends it).

May import ``harness.protocol`` (the decoders' answer types) and errors, nothing that sends.
"""

from __future__ import annotations

from harness.wire.answers import parse_answers
from harness.wire.chat import (
    ChatQuestion,
    chat_usage,
    from_chat_completion,
    from_chat_completions,
    from_chat_request,
    to_chat_completion,
    to_chat_request,
    to_chat_requests,
)
from harness.wire.chat_prompt import label_tokens, parse_prompt, render_prompt
from harness.wire.common import WireError, is_refusal, refusal_answer, state_from_text, state_text
from harness.wire.decisions import (
    from_decisions_request,
    from_decisions_response,
    to_decisions_request,
    to_decisions_response,
)
from harness.wire.usage import wire_usage

WIRES = ("systemone", "openai-decisions", "openai-chat")
ROUTES = {
    "systemone": "/v1/systemone",
    "openai-decisions": "/v1/decisions",
    "openai-chat": "/v1/chat/completions",
}

__all__ = [
    "ROUTES",
    "ChatQuestion",
    "WireError",
    "chat_usage",
    "from_chat_completion",
    "from_chat_completions",
    "from_chat_request",
    "from_decisions_request",
    "from_decisions_response",
    "is_refusal",
    "label_tokens",
    "parse_answers",
    "parse_prompt",
    "refusal_answer",
    "render_prompt",
    "state_from_text",
    "state_text",
    "to_chat_completion",
    "to_chat_request",
    "to_chat_requests",
    "to_decisions_request",
    "to_decisions_response",
    "wire_usage",
]
