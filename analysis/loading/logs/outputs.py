"""outputs.jsonl, streamed into numpy arrays (one row per distinct (job, decoder))."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.errors import bad_output_line
from analysis.loading.columns.compact import narrow
from analysis.loading.columns.interning import Interner
from analysis.loading.columns.row_chunks import CHUNK_ROWS, RowChunks, release_freed
from runfolder import JsonlReader, OutputLine, stored

from .output_fields import REQUIRED, fields_of, find_output, line_fields, numbers_of

__all__ = ["LogStats", "Outputs", "OutputsReader", "family_sort_key", "find_output", "load_outputs"]


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

    job_code: np.ndarray  # into ``job_names``, in first-seen order
    job_names: tuple[str, ...]
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
    n_cells: np.ndarray
    rounds: np.ndarray  # -1 where not recorded
    # Per output, a code into the distinct (target, value, L, eps, N) seen: ``numbers`` has
    # one row (y, ŷ, APE, NAE, index, within5) per code, ``texts`` (target, value) as read.
    number: np.ndarray
    numbers: np.ndarray
    target_texts: tuple[str, ...]
    value_texts: tuple[str | None, ...]
    decreased: np.ndarray  # extra.decreased of threshold decoders: 1 true, 0 false, -1 absent
    n_simulated: int
    stats: LogStats
    n_oracle: int = 0  # lines answered by the exact oracle (``"oracle": true``)
    imported: frozenset[str] = frozenset()  # decoders added by ``numericjev import-predictions``
    simulated_imports: frozenset[str] = frozenset()  # of those, the ones the sim predicted

    def __len__(self) -> int:
        return len(self.job_code)

    @property
    def job(self) -> tuple[str, ...]:
        """The job id per output (built from the codes on each access: bind it once)."""
        names = self.job_names
        return tuple(names[i] for i in self.job_code.tolist())

    # The number columns, gathered from ``numbers`` when asked for (a 1000× run has 6.1
    # million outputs but a few hundred distinct numbers): bind one to a local in a loop.
    @property
    def target(self) -> np.ndarray:
        """y per output."""
        return self.numbers[:, 0][self.number]

    @property
    def value(self) -> np.ndarray:
        """ŷ per output (NaN where the output failed)."""
        return self.numbers[:, 1][self.number]

    @property
    def ape(self) -> np.ndarray:
        """Absolute percentage error per output, in percent."""
        return self.numbers[:, 2][self.number]

    @property
    def nae(self) -> np.ndarray:
        """Normalised absolute error per output, in percent."""
        return self.numbers[:, 3][self.number]

    @property
    def index(self) -> np.ndarray:
        """The grid index of ŷ per output."""
        return self.numbers[:, 4][self.number]

    @property
    def within5(self) -> np.ndarray:
        """1.0, 0.0 or NaN per output: ŷ within 5% of y."""
        return self.numbers[:, 5][self.number]

    @property
    def target_text(self) -> tuple[str, ...]:
        """y per output as the log wrote it."""
        texts = self.target_texts
        return tuple(texts[i] for i in self.number.tolist())

    @property
    def value_text(self) -> tuple[str | None, ...]:
        """ŷ per output as the log wrote it (None where the output failed)."""
        texts = self.value_texts
        return tuple(texts[i] for i in self.number.tolist())


def family_sort_key(name: str) -> tuple[int, int, str]:
    """Sort key for family names: whole numbers numerically, then other names."""
    try:
        return (0, int(name), "")
    except ValueError:
        return (1, 0, name)


_FLOATS = 6  # y, ŷ, APE, NAE, index, within5
# Per row: decoder … family codes, repeat, rounds, decreased, number code, flags. N and ok
# are the number code's (its key holds N, and ŷ is null exactly when the output failed).
_INTS = 11
_NAMED = ("decoder", "condition", "order", "domain", "case", "family")


class OutputsReader:
    """Builds the columns of an Outputs while outputs.jsonl streams past (``add`` per line).

    Rows go into narrow column pieces a chunk at a time (``RowChunks``: about 15 bytes per
    output, against 52 in one int32 stride array), and strings are interned, so that
    nothing per output stays behind but its codes: a 100× affine run has 614,400 outputs,
    but only 102,400 job names and a few hundred distinct (target, value, L, eps, N), each
    decoded once and then referred to by its code.

    A line whose fields were all seen before takes the fast path in ``add`` (dictionary
    look-ups of the raw values); any other goes through ``_row``, which checks and interns
    it. Both give the same codes: the fast path only finds what ``_row`` stored.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes = {name: Interner() for name in _NAMED}
        # Whole-number raw values (a family written as 42) by value, beside the interned
        # texts: the fast path finds them without str(). Only exact ints are kept here.
        self.whole_cases: dict[int, int] = {}
        self.whole_families: dict[int, int] = {}
        # The interned texts' dictionaries, in _NAMED order, for the fast path.
        self.ids = tuple(self.codes[name].ids for name in _NAMED)
        self.number_codes: dict[tuple[Any, ...], int] = {}
        self.numbers = array("d")  # _FLOATS per code
        self.targets: list[str] = []  # per code
        self.values: list[str | None] = []
        self.n_cells: list[int] = []  # per code
        self.ints = RowChunks(_INTS)
        self.jobs = array("i")  # per row, its job id
        # Per decoder code, by job id: the row, or -1. Typed arrays, not a dict keyed by
        # (job, decoder), which would hold a tuple per output (614,400 at 100×).
        self.job_ids: dict[str, int] = {}
        self.rows: list[array[int]] = []
        self.duplicates = 0
        self.imported: set[str] = set()
        self.simulated_imports: set[str] = set()
        self.last: tuple[int, ...] = ()  # the row ``add`` made of the last line

    def add(self, lineno: int, record: OutputLine) -> None:
        """Read one line; a malformed one is refused with its line number."""
        found = self._seen(record)
        job = record.get("job")
        if found is None:
            try:
                found, job = self._row(record)
            except (ValueError, TypeError) as exc:
                raise bad_output_line(self.path, lineno, exc) from exc
        if "imported" in record:
            name = self.codes["decoder"].strings[found[0]]
            self.imported.add(name)
            if record.get("simulated") is True:
                self.simulated_imports.add(name)
        self.last = found
        self._place(found, job)

    def repeated(self, job: str, repeat: int, last: tuple[int, ...]) -> None:
        """``add`` of a line equal to one read before (its row ``last``) but for its job,
        repeat and ``seq``, taken unparsed (``repeated_lines``)."""
        self._place((*last[:6], repeat, *last[7:]), job)

    def _place(self, found: tuple[int, ...], job: Any) -> None:
        """The row of (``job``, its decoder), or over the earlier row of that pair."""
        job_id = self.job_ids.get(job)
        if job_id is None:
            job_id = self.job_ids[job] = len(self.job_ids)
        try:
            index = self.rows[found[0]]
            at = index[job_id]
        except IndexError:  # a new decoder, or a job past the end of its index
            index, at = self._grown(found[0], job_id), -1
        if at >= 0:  # the harness wrote this (job, decoder) twice: keep the last
            self.duplicates += 1
            self.ints.put(at, found)
            return
        index[job_id] = len(self.jobs)
        self.jobs.append(job_id)
        self.ints.append(found)

    def _seen(self, record: OutputLine) -> tuple[int, ...] | None:
        """The row of a line whose every field ``_row`` has interned already (the same
        codes it would give), or None: the line then goes through ``_row``."""
        try:  # one call for the fields every line of today's harness has
            fields = line_fields(record)
        except KeyError:  # an older line, or one that lacks a field: as ``get`` finds them
            fields = fields_of(record)
        job, status, value, target, lower, eps, n_cells = fields[:7]
        decoder, condition, order, domain, case, family, repeat, rounds, simulated = fields[7:]
        if type(job) is not str:  # interned by its text in _row
            return None
        if status == "failed":
            value = None
        elif value is None:  # refused by _row (unless the status is not "ok" either)
            return None
        decoders, conditions, orders, domains, cases, families = self.ids
        try:
            number = self.number_codes.get((target, value, lower, eps, n_cells))
            found = (
                decoders.get(decoder),
                conditions.get(condition),
                orders.get(order),
                domains.get(domain),
                self.whole_cases.get(case) if type(case) is int else cases.get(case),
                self.whole_families.get(family) if type(family) is int else families.get(family),
            )
        except TypeError:  # an unhashable field: _row explains
            return None
        if number is None or None in found or (status != "ok" and status != "failed"):
            return None
        if repeat is None:
            repeat = 0
        elif type(repeat) is not int:
            return None
        extra = record.get("extra")
        flag = extra.get("decreased") if type(extra) is dict else None
        return (  # type: ignore[return-value]  # no None in ``found`` (checked above)
            *found,
            repeat,
            rounds if type(rounds) is int else -1,
            1 if flag is True else 0 if flag is False else -1,
            number,
            (simulated is True) + 2 * (record.get("oracle") is True),
        )

    def _grown(self, decoder: int, job_id: int) -> array[int]:
        """The decoder's index of rows by job id, grown a chunk at a time to hold ``job_id``
        (-1: no row yet)."""
        while len(self.rows) <= decoder:
            self.rows.append(array("i"))
        rows = self.rows[decoder]
        if len(rows) <= job_id:
            rows.extend(array("i", [-1]) * max(job_id + 1 - len(rows), CHUNK_ROWS))
        return rows

    def _code(self, name: str, raw: Any) -> int:
        """The code of a raw field value by its text, also kept by value when a whole number."""
        code = self.codes[name].code(str(raw))
        if type(raw) is int and name in ("case", "family"):
            (self.whole_cases if name == "case" else self.whole_families)[raw] = code
        return code

    def _number_code(self, key: tuple[Any, ...]) -> int:
        """The code of (target, value, L, eps, N), decoded exactly the first time."""
        try:
            code = self.number_codes.get(key)
        except TypeError:  # unhashable field (a list, an object): let the parser explain
            numbers_of(*key)
            raise
        if code is None:
            self.numbers.extend(numbers_of(*key))
            self.targets.append(str(key[0]))
            self.values.append(None if key[1] is None else str(key[1]))
            self.n_cells.append(key[4])
            code = self.number_codes[key] = len(self.targets) - 1
        return code

    def _row(self, record: OutputLine) -> tuple[tuple[int, ...], str]:
        """One line checked and interned (the path every value takes the first time)."""
        try:
            job = str(record["job"])
            decoder, condition, order = record["decoder"], record["condition"], record["order"]
            status, target = record["status"], record["target"]
            key = (target, record.get("value"), record["L"], record["eps"], record["N"])
        except KeyError:
            missing = [name for name in REQUIRED if name not in record]
            raise ValueError(f"missing field(s) {', '.join(missing)}") from None
        if status not in ("ok", "failed"):
            raise ValueError(f"status must be 'ok' or 'failed'; got {status!r}")
        ok = status == "ok"
        if ok and key[1] is None:
            raise ValueError("status is 'ok' but value is null")
        if not ok:
            key = (*key[:1], None, *key[2:])  # a failed output's value, if any, is not used
        # Targets, bounds and grid values repeat across decoders, orders and conditions, so
        # the exact decimal work is done once per distinct raw key (10^5 lines: 2.6 s -> 1.0 s).
        number = self._number_code(key)
        rounds = record.get("rounds")
        raw_case = record.get("case", record["job"])
        case = str(raw_case)
        # Threshold decoders record whether the raw CDF answers decreased before projection
        # (paper, "Numerical distributions need a separate validation"); only a JSON boolean
        # counts, anything else reads as "not recorded".
        extra = record.get("extra")
        flag = extra.get("decreased") if isinstance(extra, dict) else None
        ints = (
            self._code("decoder", decoder),
            self._code("condition", condition),
            self._code("order", order),
            self._code("domain", record.get("domain", "all")),
            self._code("case", raw_case),
            self._code("family", record.get("family", case)),
            int(record.get("repeat") or 0),
            rounds if isinstance(rounds, int) and not isinstance(rounds, bool) else -1,
            int(flag) if isinstance(flag, bool) else -1,
            number,
            (record.get("simulated") is True) + 2 * (record.get("oracle") is True),
        )
        return ints, job

    def result(self, stats: LogStats) -> Outputs:
        """The columns as numpy arrays (the pieces and the per-row arrays are then freed)."""
        columns = self.ints.columns()
        numbers = np.frombuffer(self.numbers, np.float64).reshape(-1, _FLOATS).copy()
        codes = self.codes
        # Family codes are re-numbered in sorted order so that bootstrap resamples do not
        # depend on the (shuffled, resumable) order in which jobs were written.
        family_names = sorted(codes["family"].strings, key=family_sort_key)
        rank = {name: i for i, name in enumerate(family_names)}
        remap = narrow(np.array([rank[n] for n in codes["family"].strings] or [0], np.int64))
        number = columns[9]
        failed = np.array([v is None for v in self.values] or [True], bool)
        n_cells = np.array(self.n_cells or [0], np.int64)
        job_names = tuple(self.job_ids)  # in id order: a dict keeps insertion order
        jobs = narrow(np.frombuffer(self.jobs, np.int32))
        self.rows, self.job_ids, self.jobs = [], {}, array("i")
        release_freed()
        return Outputs(
            job_code=jobs,
            job_names=job_names,
            decoder=columns[0],
            decoder_names=tuple(codes["decoder"].strings),
            condition=columns[1],
            condition_names=tuple(codes["condition"].strings),
            order=columns[2],
            order_names=tuple(codes["order"].strings),
            domain=columns[3],
            domain_names=tuple(codes["domain"].strings),
            case=columns[4],
            case_names=tuple(codes["case"].strings),
            family=narrow(remap[columns[5]]),
            family_names=tuple(family_names),
            repeat=columns[6],
            ok=~failed[number],
            n_cells=narrow(n_cells[number]),
            rounds=columns[7],
            number=number,
            numbers=numbers,
            target_texts=tuple(self.targets),
            value_texts=tuple(self.values),
            decreased=columns[8],
            n_simulated=int(np.count_nonzero(columns[10] & 1)),
            # duplicates: lines the reader skipped as repeats (seq), and keys written twice
            stats=LogStats(
                stats.present,
                stats.records,
                stats.torn_last_line,
                stats.duplicates + self.duplicates,
            ),
            n_oracle=int(np.count_nonzero(columns[10] & 2)),
            imported=frozenset(self.imported),
            simulated_imports=frozenset(self.simulated_imports),
        )


def load_outputs(path: Path) -> Outputs:
    """Stream ``outputs.jsonl`` into column arrays; a missing file reads as empty."""
    reader = JsonlReader[OutputLine](path)
    outputs = OutputsReader(path)
    if stored(path).is_file():
        for lineno, record in reader.numbered():
            outputs.add(lineno, record)
    return outputs.result(LogStats(stored(path).is_file(), reader.records, int(reader.torn)))
