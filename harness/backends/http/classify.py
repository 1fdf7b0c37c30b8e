"""HTTP outcomes classified: pure functions, no I/O, no clock unless asked.

``classify`` follows the table in ``docs/wire.md``; ``parse_retry_after`` and
``error_excerpt`` read a failed reply's wait and message. The retry policy itself is the
caller's (``harness.calling``): a backend only classifies.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from harness.errors import AuthError, BackendError, TransientError

# Log kinds, one per row of docs/wire.md's table (plus the two that come from the body).
RETRYABLE_KINDS = frozenset(
    {"rate_limited", "server_error", "overloaded", "timeout", "connection", "malformed"}
)


@dataclass(frozen=True)
class Decision:
    """What to do about one failed attempt."""

    retry: bool
    kind: str
    wait_s: float | None = None  # the server's own wait (Retry-After), if it gave one
    fatal: bool = False  # 401/403: every request would fail, so the run stops

    def error(self, message: str, **fields: Any) -> BackendError:
        """The typed failure for this decision; ``fields`` as ``BackendError`` takes them."""
        if self.fatal:
            return AuthError(self.kind, message, wait_s=self.wait_s, **fields)
        if self.retry:
            return TransientError(self.kind, message, wait_s=self.wait_s, **fields)
        return BackendError(self.kind, message, wait_s=self.wait_s, **fields)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (wins, as in the official SDK) or
    ``Retry-After`` (seconds or HTTP-date; past: 0); None if unreadable (back off instead)."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    text = lower.get("retry-after")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value):
        return max(0.0, value)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive parse means "-0000"
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _status_decision(status: int, headers: Mapping[str, str] | None) -> Decision:
    if 200 <= status < 300:
        return Decision(retry=False, kind="ok")
    if status in (401, 403):
        return Decision(retry=False, kind="auth", fatal=True)
    if status == 408:
        return Decision(retry=True, kind="timeout", wait_s=parse_retry_after(headers))
    if status == 429:
        return Decision(retry=True, kind="rate_limited", wait_s=parse_retry_after(headers))
    if status in (503, 529):
        return Decision(retry=True, kind="overloaded", wait_s=parse_retry_after(headers))
    if 500 <= status < 600:
        return Decision(retry=True, kind="server_error", wait_s=parse_retry_after(headers))
    if 300 <= status < 400:
        # Redirects are not followed for a POST: the base URL is wrong, not the request.
        return Decision(retry=False, kind="redirect")
    if 400 <= status < 500:
        return Decision(retry=False, kind="http_4xx")
    return Decision(retry=False, kind="malformed")


def classify(
    status: int | None,
    exc: BaseException | None,
    headers: Mapping[str, str] | None = None,
) -> Decision:
    """Classify one attempt's outcome: an HTTP ``status`` (with its headers) or an exception.

    Exceptions are matched by explicit type only: ``TimeoutError`` (aiohttp's timeouts,
    ``anyio.fail_after``) is "timeout"; a URL the library cannot use is a "connection" error
    not retried; other aiohttp client errors and ``ConnectionError`` are "connection"; a body
    that is not JSON "malformed"; a ``BackendError`` keeps its own kind and wait. Anything
    else, cancellation included, is not retried.
    """
    if exc is not None:
        if isinstance(exc, BackendError):
            fatal = isinstance(exc, AuthError) or exc.kind == "auth"
            retry = not fatal and (isinstance(exc, TransientError) or exc.kind in RETRYABLE_KINDS)
            return Decision(retry=retry, kind=exc.kind, wait_s=exc.wait_s, fatal=fatal)
        if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError is one too
            return Decision(retry=True, kind="timeout")
        if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
            return Decision(retry=False, kind="connection")  # e.g. a base URL without http://
        if isinstance(exc, aiohttp.ClientError | ConnectionError):
            return Decision(retry=True, kind="connection")
        if isinstance(exc, orjson.JSONDecodeError):
            return Decision(retry=True, kind="malformed")
        if isinstance(exc, orjson.JSONEncodeError | TypeError):
            return Decision(retry=False, kind="bad_body")
        return Decision(retry=False, kind="unexpected")
    if status is None:
        return Decision(retry=False, kind="unexpected")
    return _status_decision(status, headers)


# What a failed response says, in one line for the log and the exception message.

EXCERPT_CHARS = 300  # docs/wire.md: keep the first few hundred characters of an error body


def _html_title(text: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    return " ".join(match.group(1).split())[:100] if match else None


def _detail_text(detail: Any) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, Mapping):  # TypeSafe: {"error_type": ..., "message": ...}
        kind = detail.get("error_type") or detail.get("type") or detail.get("code")
        message = detail.get("message") or detail.get("msg")
        if message is not None:
            return f"{kind}: {message}" if kind else str(message)
    if isinstance(detail, list):  # FastAPI validation list
        parts = []
        for item in detail[:5]:
            if isinstance(item, Mapping):
                loc = ".".join(str(p) for p in item.get("loc") or ())
                parts.append(f"{loc}: {item.get('msg')}" if loc else str(item.get("msg")))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return orjson.dumps(detail).decode()


def error_excerpt(status: int, content_type: str, text: str) -> str:
    """A one-line summary of an error body: FastAPI, OpenAI-style, HTML or plain text."""
    stripped = text.strip()
    head = stripped[:200].lower()
    if "html" in content_type.lower() or head.startswith(("<!doctype html", "<html")):
        title = _html_title(stripped)
        return f"HTML error page (status {status})" + (f": {title}" if title else "")
    summary: str | None = None
    try:
        parsed = orjson.loads(stripped) if stripped else None
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, Mapping):
        if "detail" in parsed:
            summary = _detail_text(parsed["detail"])
        elif "error" in parsed:
            error = parsed["error"]
            summary = _detail_text(error if not isinstance(error, Mapping) else dict(error))
    if summary is None:
        summary = stripped or "(empty body)"
    summary = " ".join(summary.split())
    return summary if len(summary) <= EXCERPT_CHARS else summary[: EXCERPT_CHARS - 3] + "..."
