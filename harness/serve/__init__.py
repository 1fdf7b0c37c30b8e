"""``numericjev serve-sim``: the built-in sim (or oracle) model on loopback ``/v1/systemone``."""

from __future__ import annotations

from harness.serve.app import Outcome, ServerConfig, SimApp, validation_errors
from harness.serve.faults import FaultPlan, FaultSpec
from harness.serve.server import (
    SimServer,
    base_url,
    check_host,
    serve_forever,
    serve_sim_in_background,
    serve_sim_in_thread,
)

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
