"""Calling a model: the Caller, the run's Pacer, Budget and StopSwitch, the retry policy, Limits.

``Caller.call(body, on_attempt)`` turns one request body into its validated answers, one
backend attempt at a time, under the ONE retry policy (``RetrySettings``); the ``Pacer``
admits every attempt (AIMD window, ``--rps``, ``Retry-After``, the ceiling on time paused by
429s); the ``Budget`` admits every exchange (request cap, the early-failure breaker) and
holds every attempt's cost under the spend cap; the ``StopSwitch`` stops them all.

May import ``harness.backends``, ``harness.wire``, ``harness.protocol``, errors and progress.
"""

from harness.calling.attempt import Attempt
from harness.calling.budget import Budget, Hold
from harness.calling.caller import Caller
from harness.calling.limits import Limits
from harness.calling.pacing import Pacer
from harness.calling.policy import RetrySettings, build_retrying
from harness.calling.stop import StopSwitch

__all__ = [
    "Attempt",
    "Budget",
    "Caller",
    "Hold",
    "Limits",
    "Pacer",
    "RetrySettings",
    "StopSwitch",
    "build_retrying",
]
