"""The sim's choices are pinned: informative probabilities must not change any decision.

``fixtures/sim_outputs_pinned.json`` was regenerated when the sim was rebuilt on the paper's
mechanics (issue 21; ``python -m tests.backends.test_sim_pinned``). It holds
every existing decoder's value per job of a small affine run and of the exploratory suite,
and a SHA-256 of the complete output records (decision traces, threshold answers and CDF
read-outs included), so a changed choice, or a changed threshold probability, fails here.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.backends.sim import SimModel
from harness.protocol.registry import load_suite
from simstudy.simulate import answer_in_process

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sim_outputs_pinned.json"
# The decoders that existed when the fixture was made, per suite (small affine: 128 jobs).
RUNS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "affine": ({"per_operator": "2"}, ("direct", "tree2", "tree4", "tree10", "digits", "bits")),
    "exploratory": (
        {},
        (
            "direct",
            "tree4",
            "sets",
            "actual_digits",
            "adaptive_thresholds",
            "parallel_thresholds",
            "bits4",
            "threshold_cdf",
        ),
    ),
}


def sim_outputs(suite_name: str) -> list[dict[str, Any]]:
    """Every output record of a default-sim run of ``suite_name`` (in process, no log)."""
    params, decoders = RUNS[suite_name]
    suite = load_suite(suite_name, params=params, decoders=decoders)
    return [dict(r) for r in answer_in_process(suite, SimModel())]


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Values per ``job decoder`` and a hash of the complete records."""
    canonical = orjson.dumps(records, option=orjson.OPT_SORT_KEYS)
    return {
        "values": {f"{r['job']} {r['decoder']}": r["value"] for r in records},
        "sha256": hashlib.sha256(canonical).hexdigest(),
    }


@pytest.mark.parametrize("suite_name", sorted(RUNS))
def test_sim_outputs_match_the_pinned_run(suite_name: str) -> None:
    pinned = orjson.loads(FIXTURE.read_bytes())[suite_name]
    now = summary(sim_outputs(suite_name))
    changed = {
        k: (v, now["values"].get(k))
        for k, v in pinned["values"].items()
        if now["values"].get(k) != v
    }
    assert not changed, f"{len(changed)} outputs changed, e.g. {list(changed.items())[:5]}"
    assert now["values"].keys() == pinned["values"].keys()
    # Same values but a different hash: a trace, a threshold answer or a read-out changed.
    assert now["sha256"] == pinned["sha256"]


if __name__ == "__main__":  # regenerate (only when a change to the sim's choices is intended)
    FIXTURE.write_bytes(
        orjson.dumps(
            {name: summary(sim_outputs(name)) for name in sorted(RUNS)}, option=orjson.OPT_INDENT_2
        )
        + b"\n"
    )
    sys.exit(0)
