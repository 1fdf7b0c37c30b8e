"""A requests.jsonl line decoded into only the parts analysis reads (msgspec), not a dict.

A line is ~2.4 KB, most of it questions' criteria and answers that the join needs only
for interval questions, and fields no table reads (state, confidences, the response's
copy of the usage). ``decode_parts`` keeps the scalar fields the exchange columns and the
run-id check read (as plain values, exactly as a dict decode gives them), each answer as
its raw JSON bytes, and the request's questions as one raw JSON value (the same few
question sets recur across requests, so the join knows them by these bytes and decodes
each set once).

A line whose shape differs from the writer's (``request`` not an object, say) is not
decoded here (None): the reader then decodes it whole, and every check it was always
given still runs on it (``JsonlReader``'s run id check, the torn tail, ``seq``).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["RequestParts", "decode_parts"]


_NULL = msgspec.Raw(b"null")


class _Questions(msgspec.Struct):
    questions: msgspec.Raw = _NULL  # absent: as null (the join checks for an object)


class _Answers(msgspec.Struct):
    answers: dict[str, msgspec.Raw] | None = None


class RequestParts(msgspec.Struct):
    """The fields of one requests.jsonl line that analysis reads (absent ones: None;
    ``seq`` absent: UNSET, as a legacy line has none)."""

    job: Any = None
    run: Any = None
    seq: Any = msgspec.UNSET
    qmap: msgspec.Raw = _NULL  # raw: the join keeps a plan per distinct qmap (``asked``)
    request: _Questions | None = None
    response: _Answers | None = None
    error: Any = None
    usage: Any = None
    latency_ms: Any = None
    cost_usd: Any = None
    attempt: Any = None
    status: Any = None
    model: Any = None
    cache: Any = None

    def fields(self) -> dict[str, Any]:
        """The scalar fields as the line's dict would hold them (for ``RequestsReader.add``
        and the run id check): absent ones left out."""
        found = {
            "job": self.job,
            "run": self.run,
            "error": self.error,
            "usage": self.usage,
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "attempt": self.attempt,
            "status": self.status,
            "model": self.model,
            "cache": self.cache,
        }
        if self.seq is not msgspec.UNSET:
            found["seq"] = self.seq
        return found


_DECODER = msgspec.json.Decoder(RequestParts)


def decode_parts(line: bytes) -> RequestParts | None:
    """``line`` as RequestParts, or None when it is not a JSON object of the writer's shape
    (the caller decodes it whole, and refuses it if it is not JSON)."""
    try:
        return _DECODER.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
