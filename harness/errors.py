"""The harness's error tree; every message names the bad value and the fix.

NumericJevError
├── ConfigError          bad user input: suite, grid, decoder, model, CLI options
│   └── GridError        a grid that cannot be built (N not whole, eps <= 0, ...)
├── RunFolderError       a run folder that is missing, foreign, locked or inconsistent
│   └── ManifestMismatch the manifest's hashes no longer match the code or the cases
├── BackendError         one exchange failed; ``kind`` goes into the log
│   └── AuthError        401/403: every request would fail, so the run stops
└── BudgetExhausted      a request or spend cap was reached (the run stops resumably)
"""

from __future__ import annotations


class NumericJevError(Exception):
    """Base of every error the harness raises on purpose."""


class ConfigError(NumericJevError, ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""


class GridError(ConfigError):
    """A numerical grid or question that cannot be built."""


class RunFolderError(NumericJevError):
    """A run folder that cannot be used as asked."""


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
