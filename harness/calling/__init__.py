"""Calling a model: the Caller, the run's Pacer and Budget, the retry policy, Limits.

``Caller.call(body, on_attempt)`` turns one request body into its validated answers, one
backend attempt at a time, under the ONE retry policy (``RetrySettings``); the ``Pacer``
admits every attempt (AIMD window, ``--rps``, ``Retry-After``); the ``Budget`` admits every
exchange (request and spend caps, reservations, the early-failure breaker).
"""

from harness.calling.attempt import Attempt
from harness.calling.budget import Budget, Reservation
from harness.calling.caller import Caller
from harness.calling.limits import Limits
from harness.calling.pacing import Pacer
from harness.calling.policy import RetrySettings, build_retrying

__all__ = [
    "Attempt",
    "Budget",
    "Caller",
    "Limits",
    "Pacer",
    "Reservation",
    "RetrySettings",
    "build_retrying",
]
