"""Run a suite against the sim in process, with no run folder: seconds, for fits and power."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from harness.backends.sim import SimModel, SimParams
from harness.protocol.cases import Suite
from harness.running.jobs import Job
from harness.wire.answers import parse_answers


def simulate(suite: Suite, params: SimParams) -> list[Mapping[str, Any]]:
    """Every output record a run of ``suite`` against ``sim`` with ``params`` would write
    (one request per job per round, as the scheduler batches them)."""
    return answer_in_process(suite, SimModel(params, shared_questions=True))


class Responder(Protocol):
    """A model answering a body in process (the sim, the oracle)."""

    def respond(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for ``body``."""
        ...


def answer_in_process(suite: Suite, model: Responder) -> list[Mapping[str, Any]]:
    """Every output record of ``suite`` answered by ``model`` in process, no run folder."""
    records: list[Mapping[str, Any]] = []
    for spec in suite.jobs():
        job = Job(spec, suite.decoders)
        while (step := job.next_request("sim")) is not None:
            body, qmap = step
            job.apply(qmap, parse_answers(body["questions"], model.respond(body)))
        records += job.outputs(simulated=True)
    return records


def with_knobs(params: SimParams, knobs: Mapping[str, float | str]) -> SimParams:
    """``params`` with ``knobs`` replaced, read by the one knob reader (``SimParams.parse``,
    as a model spec's ``sim:KNOB=VALUE`` is): a malformed one is one line."""
    from dataclasses import asdict

    text = {k: str(v) for k, v in {**asdict(params), **knobs}.items()}
    return SimParams.parse(text)
