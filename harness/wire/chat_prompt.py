"""The prompt of the ``openai-chat`` wire format: one question as a system and a user message.

The model is asked to reply with ONE token that names an option, so every option needs a
token a chat tokenizer keeps whole (``label_tokens``; which tokenizers keep what:
docs/models.md, "Option tokens"): the labels themselves when all are single ASCII letters or
digits; else ``A``-``Z`` for up to 26 options (noul: ``A`` true, ``B`` false); else ``0``,
``1``, ... ``n-1`` up to 1000 options, in criteria order.

The user message is built so that serve-sim can read the question back exactly
(``parse_prompt``): the state, the instructions and each option's text are JSON literals
(readable to a model, and unambiguous), one option per line::

    State: {"expression":"(7 + 8) * 1 + (0)"}

    Question: "Determine the numerical result x ... Select the interval containing x."

    Options:
    0) "0 <= x < 10"
    1) "10 <= x < 20"

    Reply with one of: 0, 1

An option named by a token other than its label also shows the label (``A) "yes": "x <=
7"``); a null description shows ``null``. Noul and score questions have their own headers
(``_HEADERS``), and a score question lists its levels under ``Levels:``.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from harness.wire.common import WireError

SYSTEM_PROMPT = (
    "You answer one question about a state. Reply with the identifier of exactly one "
    "option (the letter or number before its closing parenthesis) and nothing else."
)
MAX_OPTIONS = 1000
_SINGLE = frozenset(string.ascii_letters + string.digits)
_LETTERS = tuple(string.ascii_uppercase)
_HEADERS = {
    "choice": "Question",
    "noul": "Question (answer true or false)",
    "score": "Question (rate on the scale below)",
}
_KINDS = {header: kind for kind, header in _HEADERS.items()}
_DECODER = json.JSONDecoder()


def label_tokens(labels: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """``(tokens, scheme)``: the token naming each label, in order, by the module's rule
    (scheme ``labels``, ``letters`` or ``numbers``); WireError past 1000 options."""
    if labels and all(len(label) == 1 and label in _SINGLE for label in labels):
        return tuple(labels), "labels"
    if len(labels) <= len(_LETTERS):
        return _LETTERS[: len(labels)], "letters"
    if len(labels) <= MAX_OPTIONS:
        return tuple(str(i) for i in range(len(labels))), "numbers"
    raise WireError(f"a chat question can have at most {MAX_OPTIONS} options; got {len(labels)}")


def _dump(value: Any) -> str:
    return orjson.dumps(value).decode()


def render_prompt(kind: str, state: Any, instructions: Any, options: Mapping[str, Any]) -> str:
    """The user message asking a question of type ``kind`` about ``state``; ``options`` maps
    each label (noul: ``true``, ``false``; score: ``"0"``, ``"1"``, ...) to its text or None."""
    tokens, _ = label_tokens(list(options))
    lines = []
    for token, (label, text) in zip(tokens, options.items(), strict=True):
        if kind == "score" or (token == label and text is not None and kind == "choice"):
            lines.append(f"{token}) {_dump(text)}")
        elif kind == "noul" and text is None:
            lines.append(f"{token}) {_dump(label)}")
        else:
            lines.append(f"{token}) {_dump(label)}: {_dump(text)}")
    listed = "Levels" if kind == "score" else "Options"
    return (
        f"State: {_dump(state)}\n\n{_HEADERS[kind]}: {_dump(instructions)}\n\n"
        f"{listed}:\n" + "\n".join(lines) + f"\n\nReply with one of: {', '.join(tokens)}"
    )


def _value(text: str, at: int, what: str) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, at)
    except json.JSONDecodeError:
        raise WireError(f"the prompt's {what} is not a JSON value") from None


def _expect(text: str, at: int, literal: str, what: str) -> int:
    if not text.startswith(literal, at):
        raise WireError(f"the prompt lacks {what} (expected {literal!r} at character {at})")
    return at + len(literal)


def parse_prompt(text: str) -> tuple[str, Any, Any, dict[str, Any]]:
    """The inverse of ``render_prompt``: ``(kind, state, instructions, options)``; WireError
    unless re-rendering what it read gives ``text`` back (so what it accepts, it reads exactly)."""
    at = _expect(text, 0, "State: ", "its state")
    state, at = _value(text, at, "state")
    at = _expect(text, at, "\n\n", "a blank line after the state")
    header, colon, _ = text[at:].partition(": ")
    kind = _KINDS.get(header) if colon else None
    if kind is None:
        raise WireError("the prompt's question header is not one this harness writes")
    instructions, at = _value(text, at + len(header) + 2, "instructions")
    listed = "Levels" if kind == "score" else "Options"
    at = _expect(text, at, f"\n\n{listed}:\n", f"its {listed.lower()}")
    options: dict[str, Any] = {}
    while True:
        close = text.find(") ", at)
        if close < 0:
            raise WireError("the prompt's options end early")
        at = close + 2
        first, at = _value(text, at, "option")
        if text.startswith(": ", at):
            label, (description, at) = first, _value(text, at + 2, "option description")
        elif kind == "noul":
            label, description = first, None
        else:
            label, description = str(len(options)) if kind == "score" else None, first
        if label is None:  # a choice option named by its own label
            label = text[text.rfind("\n", 0, close) + 1 : close]
        if not isinstance(label, str) or label in options:
            raise WireError("the prompt's option labels are not distinct strings")
        options[label] = description
        if not text.startswith("\n", at) or text.startswith("\n\n", at):
            break
        at += 1
    if render_prompt(kind, state, instructions, options) != text:
        raise WireError("the prompt is not one this harness writes (it does not re-render)")
    return kind, state, instructions, options
