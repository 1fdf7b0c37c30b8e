"""``numericjev serve-sim``: the built-in sim (or oracle) model on loopback HTTP.

It answers on one wire format at a time (``--wire``): System One at ``/v1/systemone``,
OpenAI's Decisions at ``/v1/decisions``, or chat completions with logprobs at
``/v1/chat/completions``; ``GET /v1/models`` lists the model and ``GET /healthz`` reports
liveness.

May import ``harness.backends``, ``harness.wire`` and errors: the server answers with the
harness's own models and formats, and knows nothing of runs.
"""

from __future__ import annotations

from harness.serve.app import Outcome, ServerConfig, SimApp
from harness.serve.faults import FaultPlan, FaultSpec
from harness.serve.server import (
    SimServer,
    base_url,
    check_host,
    serve_forever,
    serve_sim_in_background,
    serve_sim_in_thread,
)
from harness.serve.validation import validation_errors

__all__ = [
    "FaultPlan",
    "FaultSpec",
    "Outcome",
    "ServerConfig",
    "SimApp",
    "SimServer",
    "base_url",
    "check_host",
    "serve_forever",
    "serve_sim_in_background",
    "serve_sim_in_thread",
    "validation_errors",
]
