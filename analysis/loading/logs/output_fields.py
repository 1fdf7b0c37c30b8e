"""The fields of an outputs.jsonl line as the Outputs pass reads them, and its exact numbers."""

from __future__ import annotations

import math
import operator
from pathlib import Path
from typing import Any

from analysis.loading.columns.exact import output_errors, parse_decimal
from runfolder import OutputLine, job_records

__all__ = ["KEYS", "REQUIRED", "fields_of", "find_output", "line_fields", "numbers_of"]

REQUIRED = ("job", "decoder", "status", "condition", "order", "target", "L", "eps", "N")

_NO_VALUE = (math.nan, math.nan, math.nan, math.nan, math.nan)


def numbers_of(target: Any, value: Any, lower: Any, eps: Any, n_cells: Any) -> tuple[float, ...]:
    """(y, ŷ, APE, NAE, index, within5) as floats from the raw JSON fields, computed exactly."""
    if isinstance(n_cells, bool) or not isinstance(n_cells, int) or n_cells <= 0:
        raise ValueError(f"N must be a positive whole number; got {n_cells!r}")
    step = parse_decimal(eps)
    if step <= 0:
        raise ValueError(f"eps must be positive; got {eps!r}")
    y = parse_decimal(target)
    bottom = parse_decimal(lower)
    if value is None:
        return (float(y), *_NO_VALUE)
    v = parse_decimal(value)
    return (float(y), float(v), *output_errors(y, v, bottom, step, n_cells))


KEYS: tuple[str, ...] = ("job", "status", "value", "target", "L", "eps", "N", "decoder")
KEYS += ("condition", "order", "domain", "case", "family", "repeat", "rounds", "simulated")
# The sixteen in one call (KeyError when one is absent: then ``fields_of``).
line_fields = operator.itemgetter(*KEYS)


def fields_of(record: OutputLine) -> tuple[Any, ...]:
    """The fields of ``KEYS`` as ``OutputsReader._row`` reads them: None where absent, and the defaults
    of domain ("all"), case (the job) and family (the case)."""
    get = record.get
    job = get("job")
    case = get("case", job)
    found = tuple(get(key) for key in KEYS[:10])
    return (*found, get("domain", "all"), case, get("family", case), *map(get, KEYS[13:]))


def find_output(path: Path, job: str, decoder: str) -> dict[str, Any] | None:
    """Return the last outputs.jsonl record for (job, decoder), trace included, or None.

    Parses only the lines that mention the job (``job_records``): one output of a 100× run
    costs a scan, not 614,400 parses.
    """
    found = None
    for record in job_records(path, job):
        if record.get("decoder") == decoder:
            found = record
    return found
