"""A System One request body with its JSON bytes, made once (issue 29, item 3).

The request cache keys an exchange by the body's bytes in the order built, and the
``systemone`` backend sends exactly those bytes: ``EncodedBody`` carries them from the one
to the other, so a body asked through the cache is serialised once, not twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


class EncodedBody(dict[str, Any]):
    """A request body (a ``dict``, as orjson and every backend read it) and ``json``, its
    bytes as ``orjson.dumps`` makes them."""

    __slots__ = ("json",)

    def __init__(self, body: Mapping[str, Any], json: bytes) -> None:
        super().__init__(body)
        self.json = json


def encoded(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with its bytes (``EncodedBody``), or ``body`` itself where it is not plain
    JSON (whoever serialises it next reports that, as without this)."""
    if type(body) is EncodedBody:
        return body
    try:
        return EncodedBody(body, orjson.dumps(body))
    except TypeError:
        return body
