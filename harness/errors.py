"""The harness's error tree; every message names the bad value and the fix.

NumericJevError
├── ConfigError          bad user input: suite, grid, decoder, model, CLI options
│   ├── GridError        a grid that cannot be built (N not whole, eps <= 0, ...)
│   └── ExpressionError  text that is not plain arithmetic, or that divides by zero
├── BackendError         one attempt failed, classified by the backend that made it
│   ├── TransientError   worth another attempt: the ONLY type the retry policy retries
│   └── AuthError        401/403: every request would fail, so the run stops
├── BudgetExhausted      a cap was reached: requests, spend, or time waited on 429s (the run
│   │                    stops resumably)
│   └── RequestCapReached  --max-requests refused an exchange before it was sent
├── WriteFailed          a record could not be written (disk full): the run stopped at once
└── Stopping             the run is stopping (a signal, a cap, a fatal error): this attempt
                         was not sent, and its job stays pending for resume

RunFolderError           (runfolder's own class, re-exported) a run folder that is missing,
│                        foreign, locked or inconsistent, or a log line that cannot be read
└── ManifestMismatch     the manifest's hashes no longer match the code or the cases

The run-folder errors come from ``runfolder``, which cannot import this tree; re-exporting
the one class (not a subclass) means an ``except RunFolderError`` here also catches what the
format code raises. The command line translates both trees.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from runfolder import RunFolderError


class NumericJevError(Exception):
    """Base of every error the harness raises on purpose."""


class ConfigError(NumericJevError, ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""


class GridError(ConfigError):
    """A numerical grid or question that cannot be built."""


class ExpressionError(ConfigError):
    """Text that is not plain arithmetic, or that divides by zero (``harness.protocol.arith``)."""


class ManifestMismatch(RunFolderError):
    """The run folder was written by other code or for other cases."""


class BackendError(NumericJevError):
    """One attempt at an exchange failed; the backend that made it says why.

    ``kind`` goes into the log (``runfolder.ErrorKind``); the other fields are what the failed
    attempt's log line records, each None when unknown (``Retry-After`` is ``wait_s``; a
    ``body`` is truncated, never a key; a malformed 200 is still billed: ``usage``, ``cost_usd``,
    ``model``; ``sent``: the body sent when the wire format is not System One).
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        wait_s: float | None = None,
        body: Any = None,
        request_id: str | None = None,
        usage: Mapping[str, Any] | None = None,
        cost_usd: float | None = None,
        model: str | None = None,
        sent: Any = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.wait_s = wait_s
        self.body = body
        self.request_id = request_id
        self.usage = usage
        self.cost_usd = cost_usd
        self.model = model
        self.sent = sent


class TransientError(BackendError):
    """A failed attempt that another attempt may fix (429, 5xx, timeout, malformed 200)."""


class AuthError(BackendError):
    """The server refused the credentials: stop the whole run."""


class BudgetExhausted(NumericJevError):
    """A cap was reached (requests, spend, or time waited on 429s); the run can be resumed."""


class RequestCapReached(BudgetExhausted):
    """The request cap refused an exchange before it was sent: the run starts nothing new,
    but exchanges already admitted still go out (nothing in flight is dropped)."""


class WriteFailed(NumericJevError):
    """A record could not be written (a full disk, a file size limit): the run stopped at
    once, nothing sent after it; ``resume`` continues once the cause is fixed."""

    exit_status = 4  # not 2: the input was fine, and what was recorded is kept


class Stopping(NumericJevError):
    """The run is stopping, so an attempt that was about to start (or to wait) was not sent:
    not a failure of the job, which stays pending for ``resume``."""


@contextmanager
def first_error() -> Iterator[None]:
    """A task group's errors as the one the user can act on: the harness's own error (a
    ``NumericJevError`` or ``RunFolderError``, which the command line puts in one line)
    rather than the group anyio wraps it in; a group holding anything else stays as it is."""
    try:
        yield
    except BaseExceptionGroup as group:
        ours, rest = group.split((NumericJevError, RunFolderError))
        if ours is None or rest is not None:
            raise
        first: BaseException = ours
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from group
