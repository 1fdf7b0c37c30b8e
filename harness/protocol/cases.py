"""Cases, suites and jobs: what a run asks, independent of any model.

Suites (the ``suites`` package, or a user's own) build these types and the harness runs
them; the harness finds suites through ``harness.protocol.registry``, never by importing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from harness.protocol.arith import evaluate
from harness.protocol.grid import Grid, fmt, to_decimal
from runfolder import case_digest

SUBJECT = "Determine the numerical result x of the expression in state."
ORDERS = ("ascending", "reversed")


@dataclass(frozen=True)
class Case:
    """One target: its base state, exact value, grid and question subject."""

    id: str
    family: int
    domain: str
    state: Mapping[str, Any]
    target: Fraction
    grid: Grid
    subject: str = SUBJECT

    @cached_property  # every job of the case writes them in each output line
    def texts(self) -> tuple[str, str, str]:
        """The target, L and eps as the logs write them (``fmt``)."""
        return fmt(to_decimal(self.target)), fmt(self.grid.lo), fmt(self.grid.eps)

    def state_for(self, condition: str) -> dict[str, Any]:
        """The state sent in ``condition``; ``provided`` adds the exact result as a decimal."""
        state = dict(self.state)
        if condition == "provided":
            state["result"] = self.texts[0]
        return state

    def fingerprint(self) -> dict[str, Any]:
        """Everything that defines the case, for the case-set hash."""
        return {
            "id": self.id,
            "family": self.family,
            "domain": self.domain,
            "state": dict(self.state),
            "target": str(self.target),
            "L": fmt(self.grid.lo),
            "eps": fmt(self.grid.eps),
            "N": self.grid.n,
            "subject": self.subject,
        }


def expression_case(family: int, domain: str, text: str, expected: Fraction, grid: Grid) -> Case:
    """A case asking for the value of ``text``, verified with the exact evaluator."""
    target = evaluate(text)
    if target != expected:
        raise AssertionError(f"{text} evaluates to {target}, expected {expected}")
    return Case(f"f{family}/{domain}", family, domain, {"expression": text}, target, grid)


@dataclass(frozen=True)
class JobSpec:
    """One job: a case under one condition, option order and repeat."""

    suite: str
    case: Case
    condition: str
    order: str
    repeat: int

    @cached_property  # asked for every log line of the job
    def id(self) -> str:
        """Stable identity, e.g. ``affine/f17/x0.01/provided/reversed/r0``."""
        return f"{self.suite}/{self.case.id}/{self.condition}/{self.order}/r{self.repeat}"


@dataclass(frozen=True)
class Suite:
    """A named, seeded set of cases with the decoders, conditions, orders and repeats to run."""

    name: str
    seed: int
    cases: tuple[Case, ...]
    decoders: tuple[str, ...]
    conditions: tuple[str, ...] = ("arithmetic", "provided")
    orders: tuple[str, ...] = ORDERS
    repeats: int = 1
    params: Mapping[str, Any] = field(default_factory=dict)
    exact: bool = True

    def jobs(self) -> list[JobSpec]:
        """Every case × condition × order × repeat, in a fixed (unshuffled) order."""
        return [
            JobSpec(self.name, case, condition, order, repeat)
            for case in self.cases
            for condition in self.conditions
            for order in self.orders
            for repeat in range(self.repeats)
        ]

    def job_count(self) -> int:
        """``len(self.jobs())``, without building them."""
        return len(self.cases) * len(self.conditions) * len(self.orders) * self.repeats

    def case_payload(self) -> dict[str, Any]:
        """The canonical case set, conditions, orders and repeats (``cases.json``)."""
        return {
            "suite": self.name,
            "seed": self.seed,
            "cases": [c.fingerprint() for c in self.cases],
            "conditions": list(self.conditions),
            "orders": list(self.orders),
            "repeats": self.repeats,
        }

    def case_hash(self) -> str:
        """SHA-256 of ``case_payload`` (``runfolder.case_digest``)."""
        return case_digest(self.case_payload())
