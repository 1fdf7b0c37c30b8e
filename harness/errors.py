"""The harness's error tree; every message names the bad value and the fix.

NumericJevError
├── ConfigError          bad user input: suite, grid, decoder, model, CLI options
│   ├── GridError        a grid that cannot be built (N not whole, eps <= 0, ...)
│   └── ExpressionError  text that is not plain arithmetic, or that divides by zero
├── BackendError         one exchange failed; ``kind`` goes into the log
│   └── AuthError        401/403: every request would fail, so the run stops
└── BudgetExhausted      a request or spend cap was reached (the run stops resumably)

RunFolderError           (runfolder's own class, re-exported) a run folder that is missing,
│                        foreign, locked or inconsistent, or a log line that cannot be read
└── ManifestMismatch     the manifest's hashes no longer match the code or the cases

The run-folder errors come from ``runfolder``, which cannot import this tree; re-exporting
the one class (not a subclass) means an ``except RunFolderError`` here also catches what the
format code raises. The command line translates both trees.
"""

from __future__ import annotations

from runfolder import RunFolderError

__all__ = [
    "AuthError",
    "BackendError",
    "BudgetExhausted",
    "ConfigError",
    "ExpressionError",
    "GridError",
    "ManifestMismatch",
    "NumericJevError",
    "RunFolderError",
]


class NumericJevError(Exception):
    """Base of every error the harness raises on purpose."""


class ConfigError(NumericJevError, ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""


class GridError(ConfigError):
    """A numerical grid or question that cannot be built."""


class ExpressionError(ConfigError):
    """Text that is not plain arithmetic, or that divides by zero (``harness.arith``)."""


class ManifestMismatch(RunFolderError):
    """The run folder was written by other code or for other cases."""


class BackendError(NumericJevError):
    """One exchange with a model failed; ``kind`` classifies it for the log."""

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class AuthError(BackendError):
    """The server refused the credentials: stop the whole run."""


class BudgetExhausted(NumericJevError):
    """A request or cost cap was reached; the run can be resumed with a higher cap."""
