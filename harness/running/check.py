"""The oracle check: every decoder must recover every target exactly before any model runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from harness.backends.oracle import Oracle
from harness.backends.reading import state_key
from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.running.jobs import Job
from harness.wire.answers import parse_answers


@dataclass
class CheckReport:
    """What the oracle check counted."""

    jobs: int = 0
    outputs: int = 0
    recovered: int = 0
    requests: int = 0
    rounds: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every output was recovered exactly."""
        return self.outputs > 0 and self.recovered == self.outputs


def oracle_for(suite: Suite) -> Oracle:
    """An oracle that also knows targets no state can reveal (e.g. historical recall)."""
    return Oracle({state_key(dict(case.state)): case.target for case in suite.cases})


def run_check(suite: Suite) -> CheckReport:
    """Decode every job with the exact oracle, one request per job per round."""
    oracle = oracle_for(suite)
    report = CheckReport()
    for spec in suite.jobs():
        job = Job(spec, suite.decoders)
        while (step := job.next_request("oracle")) is not None:
            body, qmap = step
            answers = parse_answers(body["questions"], oracle.respond(body))
            job.apply(qmap, answers)
            report.requests += 1
        report.rounds = max(report.rounds, job.round)
        report.jobs += 1
        target = spec.case.target
        for record in job.outputs(simulated=True):
            report.outputs += 1
            if record["value"] is not None and Fraction(record["value"]) == target:
                report.recovered += 1
            elif len(report.failures) < 20:
                report.failures.append(
                    f"{record['job']} {record['decoder']}: "
                    f"got {record['value']}, want {record['target']}"
                )
    return report


def preflight(suite: Suite) -> None:
    """The paper's check before any paid request: refuse (``ConfigError``) unless the exact
    oracle recovers every target of ``suite`` with its decoders (in process, seconds).
    A suite without exact targets has nothing to check."""
    if not suite.exact:
        return
    report = run_check(suite)
    if not report.ok:
        first = report.failures[0] if report.failures else "no outputs"
        raise ConfigError(
            f"oracle check failed on suite {suite.name}: {report.recovered:,} of "
            f"{report.outputs:,} outputs recovered (first failure: {first}); the decoders or "
            "prompts are broken, so no request was sent — fix them (make check), or pass "
            "--skip-check to send requests anyway"
        )
