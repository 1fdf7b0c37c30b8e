"""``compare --sequential``'s plan: its settings checked, and each suite's families in a
seeded random order (kept in ``compare.json`` before any request; see ``sequential``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.errors import ConfigError
from harness.protocol.cases import Suite
from runfolder import MIN_LOOK


def sequential_plan(looks: int, seed: int, margin: float) -> dict[str, Any]:
    """The plan's settings, checked (each suite's order is added by ``with_orders``)."""
    if looks < 2:
        raise ConfigError(f"--looks must be at least 2 for --sequential; got {looks}")
    if margin < 0:
        raise ConfigError(f"--margin must be 0 or more; got {margin}")
    return {"looks": looks, "seed": seed, "margin": margin}


def with_orders(plan: Mapping[str, Any], suites: Mapping[str, Suite]) -> dict[str, Any]:
    """The plan with each suite's families in a random order seeded by the plan's seed."""
    if len(suites) != 1:
        raise ConfigError(
            f"--sequential compares one suite at a time; got {len(suites)} "
            f"({', '.join(suites)}): run one comparison per suite"
        )
    order: dict[str, list[int]] = {}
    for i, (name, suite) in enumerate(suites.items()):
        families = sorted({c.family for c in suite.cases})
        if len(families) < MIN_LOOK:
            raise ConfigError(
                f"--sequential needs a suite of at least {MIN_LOOK} families; "
                f"{name} has {len(families)}"
            )
        rng = np.random.default_rng([int(plan["seed"]), i])
        order[name] = [int(f) for f in rng.permutation(families)]
    return {**plan, "order": order}
