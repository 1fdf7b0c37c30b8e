"""A small run's outputs are pinned: refactors of the harness must not change what a run records.

The expected file ``tests/data/run_pin_affine_small.json`` was generated before the run-folder
format moved into ``runfolder/`` (issue 15), and again when the sim was rebuilt on the paper's
mechanics (issue 21, which changed every answer), and for the sim's ``off_range`` (issue 31:
some reported probabilities moved, every output the same); it is checked in. It holds a hash
of the canonical, sorted records (values, cells, rounds, traces, statuses of every
(job, decoder); request bodies, responses, usage and errors of every exchange), a few rows
spelled out so that a failure shows what moved, and the order of the fields in each record.

Only time-dependent fields (``t``, ``latency_ms``) and the run id are left out. A field added
later does not break the pin (the hash covers the named fields); a changed value does.
Regenerate deliberately, after checking the change is intended:
``.venv/bin/python -m tests.running.test_run_pin``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import orjson

from tests.runhelpers import SMALL, cli, records

EXPECTED = Path(__file__).parents[1] / "data" / "run_pin_affine_small.json"

OUTPUT_FIELDS = (
    "job",
    "suite",
    "case",
    "family",
    "domain",
    "condition",
    "order",
    "repeat",
    "decoder",
    "target",
    "L",
    "eps",
    "N",
    "value",
    "cell",
    "rounds",
    "trace",
    "status",
    "simulated",
)
REQUEST_FIELDS = (
    "job",
    "round",
    "qmap",
    "request",
    "attempt",
    "status",
    "response",
    "error",
    "usage",
    "cost_usd",
    "model",
    "request_id",
)
SPELLED = 4  # rows shown in full, from the start of the sorted outputs


def _canonical(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> list[bytes]:
    picked = [{f: row.get(f) for f in fields} for row in rows]
    return sorted(orjson.dumps(p, option=orjson.OPT_SORT_KEYS) for p in picked)


def _digest(lines: list[bytes]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line)
        digest.update(b"\n")
    return digest.hexdigest()


def _field_order(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> list[str]:
    orders = {tuple(k for k in row if k in fields) for row in rows}
    assert len(orders) == 1, f"records disagree on field order: {orders}"
    return list(orders.pop())


def pin(folder: Path) -> dict[str, Any]:
    """What the expected file holds, computed from one run folder."""
    outputs = records(folder / "outputs.jsonl")
    requests = records(folder / "requests.jsonl")
    out_lines = _canonical(outputs, OUTPUT_FIELDS)
    return {
        "command": ["run", "--suite", "affine", *SMALL, "--no-progress"],
        "n_outputs": len(outputs),
        "n_requests": len(requests),
        "outputs_sha256": _digest(out_lines),
        "requests_sha256": _digest(_canonical(requests, REQUEST_FIELDS)),
        "output_field_order": _field_order(outputs, OUTPUT_FIELDS),
        "request_field_order": _field_order(requests, REQUEST_FIELDS),
        "outputs_first_rows": [orjson.loads(line) for line in out_lines[:SPELLED]],
    }


def _run(folder: Path) -> None:
    assert cli("run", "--suite", "affine", *SMALL, "--run", str(folder), "--no-progress") == 0


def test_small_affine_run_matches_the_pinned_outputs(tmp_path: Path) -> None:
    _run(tmp_path / "run")
    got = pin(tmp_path / "run")
    expected = orjson.loads(EXPECTED.read_bytes())
    # Spelled-out rows and counts first: their failure messages say what moved.
    assert got["n_outputs"] == expected["n_outputs"]
    assert got["n_requests"] == expected["n_requests"]
    assert got["outputs_first_rows"] == expected["outputs_first_rows"]
    assert got["output_field_order"] == expected["output_field_order"]
    assert got["request_field_order"] == expected["request_field_order"]
    assert got["outputs_sha256"] == expected["outputs_sha256"]
    assert got["requests_sha256"] == expected["requests_sha256"]


if __name__ == "__main__":  # regenerate the expected file (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp) / "run")
        EXPECTED.parent.mkdir(exist_ok=True)
        EXPECTED.write_bytes(orjson.dumps(pin(Path(tmp) / "run"), option=orjson.OPT_INDENT_2))
        print(f"wrote {EXPECTED}", file=sys.stderr)
