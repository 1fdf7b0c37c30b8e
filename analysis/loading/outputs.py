"""outputs.jsonl, streamed into numpy arrays (one row per distinct (job, decoder))."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.errors import LogFormatError
from runfolder import JsonlReader, OutputLine, stored

from .exact import output_errors, parse_decimal
from .interning import Interner

__all__ = ["LogStats", "Outputs", "family_sort_key", "find_output", "load_outputs"]

_REQUIRED = ("job", "decoder", "status", "condition", "order", "target", "L", "eps", "N")


@dataclass(frozen=True)
class LogStats:
    """What reading one JSONL file found: records, torn last line, duplicate keys."""

    present: bool
    records: int
    torn_last_line: int
    duplicates: int = 0


@dataclass(frozen=True, eq=False)
class Outputs:
    """Column arrays of outputs.jsonl; categorical columns are int codes into ``*_names``.

    Rows keep the order in which each (job, decoder) first appeared; a duplicate line
    replaces the earlier row in place (the last write wins). Float columns are NaN where
    the output failed. ``ape``/``nae`` are in percent; ``within5`` is 1.0, 0.0 or NaN.
    """

    job: tuple[str, ...]
    decoder: np.ndarray
    decoder_names: tuple[str, ...]
    condition: np.ndarray
    condition_names: tuple[str, ...]
    order: np.ndarray
    order_names: tuple[str, ...]
    domain: np.ndarray
    domain_names: tuple[str, ...]
    case: np.ndarray
    case_names: tuple[str, ...]
    family: np.ndarray
    family_names: tuple[str, ...]  # sorted (numerically when whole numbers)
    repeat: np.ndarray
    ok: np.ndarray
    target: np.ndarray
    value: np.ndarray
    n_cells: np.ndarray
    ape: np.ndarray
    nae: np.ndarray
    index: np.ndarray
    within5: np.ndarray
    rounds: np.ndarray  # -1 where not recorded
    target_text: tuple[str, ...]
    value_text: tuple[str | None, ...]
    decreased: np.ndarray  # extra.decreased of threshold decoders: 1 true, 0 false, -1 absent
    n_simulated: int
    stats: LogStats
    n_oracle: int = 0  # lines answered by the exact oracle (``"oracle": true``)
    imported: frozenset[str] = frozenset()  # decoders added by ``numericjev import-predictions``

    def __len__(self) -> int:
        return len(self.job)


def family_sort_key(name: str) -> tuple[int, int, str]:
    """Sort key for family names: whole numbers numerically, then other names."""
    try:
        return (0, int(name), "")
    except ValueError:
        return (1, 0, name)


_NO_VALUE = (math.nan, math.nan, math.nan, math.nan, math.nan)
_CACHE_LIMIT = 200_000  # entries; bounds memory on logs with few repeated numbers


def _numbers(target: Any, value: Any, lower: Any, eps: Any, n_cells: Any) -> tuple[float, ...]:
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


def _parse_row(
    record: OutputLine,
    codes: dict[str, Interner],
    cache: dict[tuple[Any, ...], tuple[float, ...]],
) -> tuple[Any, ...]:
    try:
        job = str(record["job"])
        decoder, condition, order = record["decoder"], record["condition"], record["order"]
        status, target = record["status"], record["target"]
        key = (target, record.get("value"), record["L"], record["eps"], record["N"])
    except KeyError:
        missing = [name for name in _REQUIRED if name not in record]
        raise ValueError(f"missing field(s) {', '.join(missing)}") from None
    if status not in ("ok", "failed"):
        raise ValueError(f"status must be 'ok' or 'failed'; got {status!r}")
    ok = status == "ok"
    if ok and key[1] is None:
        raise ValueError("status is 'ok' but value is null")
    if not ok:
        key = (*key[:1], None, *key[2:])  # a failed output's value, if any, is not used
    # Targets, bounds and grid values repeat across decoders, orders and conditions, so the
    # exact decimal work is cached on the raw strings (loading a 10^5-line log: 2.6 s -> 1.0 s).
    try:
        numbers = cache.get(key)
    except TypeError:  # unhashable field (a list, an object): let the parser explain
        numbers = None
    if numbers is None:
        numbers = _numbers(*key)
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = numbers
    rounds = record.get("rounds")
    case = str(record.get("case", job))
    # Threshold decoders record whether the raw CDF answers decreased before projection
    # (paper, "Numerical distributions need a separate validation"); only a JSON boolean
    # counts, anything else reads as "not recorded".
    extra = record.get("extra")
    flag = extra.get("decreased") if isinstance(extra, dict) else None
    decreased = int(flag) if isinstance(flag, bool) else -1
    return (
        job,
        codes["decoder"].code(str(decoder)),
        codes["condition"].code(str(condition)),
        codes["order"].code(str(order)),
        codes["domain"].code(str(record.get("domain", "all"))),
        codes["case"].code(case),
        codes["family"].code(str(record.get("family", case))),
        int(record.get("repeat") or 0),
        ok,
        *numbers,
        key[4],
        rounds if isinstance(rounds, int) and not isinstance(rounds, bool) else -1,
        str(target),
        str(key[1]) if ok else None,
        decreased,
        record.get("simulated") is True,
        record.get("oracle") is True,
    )


def load_outputs(path: Path) -> Outputs:
    """Stream ``outputs.jsonl`` into column arrays; a missing file reads as empty."""
    codes = {name: Interner() for name in ("decoder", "condition", "order", "domain", "case")}
    codes["family"] = Interner()
    cache: dict[tuple[Any, ...], tuple[float, ...]] = {}
    rows: list[tuple[Any, ...]] = []
    where: dict[tuple[str, str], int] = {}
    duplicates = 0
    imported: set[str] = set()
    reader = JsonlReader[OutputLine](path)
    if stored(path).is_file():
        for lineno, record in reader.numbered():
            try:
                row = _parse_row(record, codes, cache)
            except (ValueError, TypeError) as exc:
                raise LogFormatError(
                    f"{path} line {lineno}: {exc}; outputs.jsonl lines are written by "
                    "`numericjev run` — repair the line or re-run the job"
                ) from exc
            key = (row[0], codes["decoder"].strings[row[1]])
            if "imported" in record:
                imported.add(key[1])
            at = where.get(key)
            if at is None:
                where[key] = len(rows)
                rows.append(row)
            else:  # the harness wrote this (job, decoder) twice: keep the last
                duplicates += 1
                rows[at] = row
    columns = list(zip(*rows, strict=True)) if rows else [()] * 22
    # Family codes are re-numbered in sorted order so that bootstrap resamples do not
    # depend on the (shuffled, resumable) order in which jobs were written.
    family_names = sorted(codes["family"].strings, key=family_sort_key)
    rank = {name: i for i, name in enumerate(family_names)}
    remap = np.array([rank[n] for n in codes["family"].strings] or [0], np.int64)

    def ints(i: int) -> np.ndarray:
        return np.asarray(columns[i], dtype=np.int64).reshape(-1)

    def floats(i: int) -> np.ndarray:
        return np.asarray(columns[i], dtype=np.float64).reshape(-1)

    return Outputs(
        job=tuple(columns[0]),
        decoder=ints(1),
        decoder_names=tuple(codes["decoder"].strings),
        condition=ints(2),
        condition_names=tuple(codes["condition"].strings),
        order=ints(3),
        order_names=tuple(codes["order"].strings),
        domain=ints(4),
        domain_names=tuple(codes["domain"].strings),
        case=ints(5),
        case_names=tuple(codes["case"].strings),
        family=remap[ints(6)],
        family_names=tuple(family_names),
        repeat=ints(7),
        ok=np.asarray(columns[8], dtype=bool).reshape(-1),
        target=floats(9),
        value=floats(10),
        ape=floats(11),
        nae=floats(12),
        index=floats(13),
        within5=floats(14),
        n_cells=ints(15),
        rounds=ints(16),
        target_text=tuple(columns[17]),
        value_text=tuple(columns[18]),
        decreased=ints(19),
        n_simulated=sum(columns[20]) if rows else 0,
        stats=LogStats(stored(path).is_file(), reader.records, int(reader.torn), duplicates),
        n_oracle=sum(columns[21]) if rows else 0,
        imported=frozenset(imported),
    )


def find_output(path: Path, job: str, decoder: str) -> dict[str, Any] | None:
    """Return the last outputs.jsonl record for (job, decoder), trace included, or None."""
    found = None
    if stored(path).is_file():
        for record in JsonlReader[dict[str, Any]](path):
            if record.get("job") == job and record.get("decoder") == decoder:
                found = record
    return found
